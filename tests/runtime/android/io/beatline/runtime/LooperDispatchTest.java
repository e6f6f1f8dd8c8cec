package io.beatline.runtime;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertTrue;

import android.os.Handler;
import android.os.Looper;
import android.util.Printer;
import java.io.File;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.After;
import org.junit.Test;
import org.junit.runner.RunWith;
import org.robolectric.annotation.Config;
import org.robolectric.annotation.LooperMode;

/**
 * Issue 13, Android half, under Robolectric with the framework's real main
 * Looper: {@code LooperMode.INSTRUMENTATION_TEST} runs the real
 * {@code Looper.loop()} on its own main thread, so the message-logging
 * Printer is fed by the framework's {@code loopOnce} exactly as on a device
 * (in PAUSED mode Robolectric's ShadowPausedLooper calls
 * {@code Handler.dispatchMessage} itself and no Printer is ever called).
 * Offline: robolectric.offline=true and robolectric.dependency.dir (set by
 * tests/runtime.cmake).
 */
@RunWith(BeatlineRobolectricRunner.class)
@Config(sdk = 34, manifest = Config.NONE)
@LooperMode(LooperMode.Mode.INSTRUMENTATION_TEST)
public class LooperDispatchTest {
    static final long SLOW_MS = 1200; // over the 1 s block threshold of these tests (a busy quick message on a loaded machine stays under it)

    private File spool;

    private BeatlineConfig.Builder config(String mode) throws Exception {
        File root = new File(System.getProperty("beatline.test.build", "/tmp"), "runtime-tests");
        root.mkdirs();
        spool = Files.createTempDirectory(root.toPath(), "looper").toFile();
        return new BeatlineConfig.Builder().server("http://127.0.0.1:9").app("robo").ingestKey("k")
                .spoolDir(spool).threadPolicy(new AndroidThreadPolicy(false)).uploadMode(mode).sampleRate(0)
                .blockThresholdMillis(1000).anrThresholdMillis(0).flushIntervalMillis(3600000)
                .backoff(3600000, 3600000).lifecycle(new Lifecycle() {
                    @Override
                    public void install(Hooks hooks) {
                    }
                }).log(new Log.Stderr(false));
    }

    @After
    public void stop() {
        Beatline.shutdown(0);
        Looper.getMainLooper().setMessageLogging(null);
    }

    /** Runs r on the main Looper and waits until the message after it ran (so r's "Finished" line was printed). */
    static void onMain(Runnable r) throws InterruptedException {
        Handler h = new Handler(Looper.getMainLooper());
        final CountDownLatch done = new CountDownLatch(1);
        h.post(r);
        h.post(new Runnable() {
            @Override
            public void run() {
                done.countDown();
            }
        });
        assertTrue("main Looper stuck", done.await(30, TimeUnit.SECONDS));
    }

    static final Runnable QUICK = new Runnable() {
        @Override
        public void run() {
            Beatline.i(7);
            Beatline.o(7);
        }
    };

    static final class Slow implements Runnable {
        @Override
        public void run() {
            Beatline.i(1);
            Beatline.i(2);
            sleep(SLOW_MS);
            Beatline.o(2);
            Beatline.i(3);
            Beatline.o(3);
            Beatline.o(1);
        }
    }

    static void sleep(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            throw new RuntimeException(e);
        }
    }

    static final class Lines implements Printer {
        final List<String> lines = Collections.synchronizedList(new ArrayList<String>());

        @Override
        public void println(String x) {
            lines.add(x);
        }
    }

    @Test
    public void blockWindowIsTheMessagesRecords() throws Exception {
        assertTrue(Beatline.start(config("triggered").build()));
        LooperDispatch.install();
        onMain(QUICK);
        onMain(new Slow());
        onMain(QUICK);
        Beatline.flush();
        List<BatchReader> bs = BatchReader.spool(spool);
        assertEquals("one block batch, nothing else (triggered)", 1, bs.size());
        BatchReader b = bs.get(0);
        assertEquals(1, b.segs.size());
        BatchReader.Seg s = b.segs.get(0);
        assertTrue(s.main());
        assertEquals(Looper.getMainLooper().getThread().getId(), s.id);
        assertEquals("the window is exactly the slow message's records",
                Arrays.asList(1, 2, -2, 3, -3, -1), s.ids());
        assertEquals(0, s.carried);
        assertEquals(1, b.events.size());
        String e = b.events.get(0);
        assertEquals("block", BatchReader.text(e, "type"));
        assertEquals("looper", BatchReader.text(e, "kind"));
        assertEquals(0, BatchReader.num(e, "thread"));
        assertEquals("android.os.Handler/" + Slow.class.getName(), BatchReader.text(e, "target"));
        assertTrue(e, BatchReader.num(e, "end_us") >= BatchReader.num(e, "begin_us"));
        assertTrue(e, e.contains("\"anr\":false"));
        // the window's records lie within [begin_us, end_us]
        for (long r : s.records) {
            long t = r & ((1L << 40) - 1);
            assertTrue(e + " record at " + t, t >= BatchReader.num(e, "begin_us") && t <= BatchReader.num(e, "end_us"));
        }
        assertEquals("triggered mode: the gated ticker's resolution in the header", 1000, b.clockResolutionUs);
        assertEquals(b.sessionId, Beatline.stats().sessionId);
    }

    @Test
    public void appPrinterChainedAndReinstalled() throws Exception {
        Lines app = new Lines();
        Looper.getMainLooper().setMessageLogging(app);
        assertTrue(Beatline.start(config("triggered").build()));
        LooperDispatch d = LooperDispatch.install();
        onMain(QUICK);
        assertTrue("the app's printer still gets the framework's lines: " + app.lines,
                app.lines.size() >= 2 && app.lines.get(0).startsWith(">>>>> Dispatching to ")
                        && app.lines.get(1).startsWith("<<<<< Finished to "));
        // the app replaces the printer later: the idle check sets ours again, chaining the new one
        Lines later = new Lines();
        LooperDispatch.recheckMs = 0;
        try {
            Looper.getMainLooper().setMessageLogging(later);
            // the queue goes idle after a message: queueIdle re-installs (it runs on the main
            // thread after the barrier message, so look again a bounded number of times)
            for (int k = 0; k < 200 && d.reinstalls == 0; k++) {
                onMain(QUICK);
                Thread.sleep(10);
            }
        } finally {
            LooperDispatch.recheckMs = LooperDispatch.RECHECK_MS;
        }
        assertTrue("re-installed", d.reinstalls >= 1);
        assertTrue(LooperDispatch.printerOf(Looper.getMainLooper()) instanceof LooperDispatch);
        int before = later.lines.size();
        onMain(new Slow());
        Beatline.flush();
        assertTrue("the replacing printer is chained", later.lines.size() >= before + 2);
        assertEquals("and the block is seen after the replacement", 1, BatchReader.spool(spool).size());
    }

    /** A busy minute in miniature: many quick messages and one block. */
    private long workload(String mode, Long seed, double rate) throws Exception {
        BeatlineConfig.Builder c = config(mode);
        if (seed != null) {
            c.sampleSeed(seed).sampleRate(rate);
        }
        assertTrue(Beatline.start(c.build()));
        LooperDispatch.install();
        Runnable busy = new Runnable() {
            @Override
            public void run() {
                for (int k = 0; k < 2000; k++) {
                    Beatline.i(10 + k % 50);
                    Beatline.o(10 + k % 50);
                }
            }
        };
        for (int m = 0; m < 50; m++) {
            onMain(busy);
        }
        onMain(new Slow());
        Beatline.flush();
        long bytes = 0;
        for (File f : spool.listFiles()) {
            if (f.getName().endsWith(".blb.gz")) {
                bytes += f.length();
            }
        }
        return bytes;
    }

    @Test
    public void triggeredUploadsOnlyTheWindows() throws Exception {
        long full = workload("full", null, 0);
        List<BatchReader> fb = BatchReader.spool(spool);
        long fullRecords = 0;
        int fullEvents = 0;
        for (BatchReader b : fb) {
            for (BatchReader.Seg s : b.segs) {
                fullRecords += s.records.length;
            }
            fullEvents += b.events.size();
        }
        assertEquals("full mode: every record", 50 * 4000 + 6, fullRecords);
        assertEquals("full mode: the block event rides with its window", 1, fullEvents);
        Beatline.shutdown(0);
        long trig = workload("triggered", null, 0);
        List<BatchReader> tb = BatchReader.spool(spool);
        assertEquals(1, tb.size());
        assertEquals("triggered: only the window", Arrays.asList(1, 2, -2, 3, -3, -1), tb.get(0).segs.get(0).ids());
        assertTrue("bytes: triggered " + trig + " vs full " + full, trig * 10 < full);
        System.out.println("bytes spooled (= uploaded): full " + full + ", triggered " + trig);
    }

    @Test
    public void sampledSessionsUploadInFull() throws Exception {
        // seeds whose first draw is under / over 0.5 (java.util.Random is specified: the same on every JVM)
        long in = -1;
        long out = -1;
        for (long s = 1; s < 100 && (in < 0 || out < 0); s++) {
            double d = new java.util.Random(s).nextDouble();
            if (d < 0.5 && in < 0) {
                in = s;
            } else if (d >= 0.5 && out < 0) {
                out = s;
            }
        }
        workload("triggered", in, 0.5);
        assertEquals("full", Beatline.stats().uploadMode);
        assertTrue(Beatline.stats().sampledFull);
        long records = 0;
        for (BatchReader b : BatchReader.spool(spool)) {
            for (BatchReader.Seg s : b.segs) {
                records += s.records.length;
            }
        }
        assertEquals("a sampled session: every record", 50 * 4000 + 6, records);
        Beatline.shutdown(0);
        workload("triggered", out, 0.5);
        assertEquals("triggered", Beatline.stats().uploadMode);
        assertEquals(1, BatchReader.spool(spool).size());
    }
}
