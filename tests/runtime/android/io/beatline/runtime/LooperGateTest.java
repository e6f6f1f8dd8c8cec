package io.beatline.runtime;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertTrue;

import android.os.Handler;
import android.os.Looper;
import android.os.MessageQueue;
import java.io.File;
import java.nio.file.Files;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.After;
import org.junit.Test;
import org.junit.runner.RunWith;
import org.robolectric.annotation.Config;
import org.robolectric.annotation.LooperMode;

/**
 * Issue 13, recording gated to the dispatch windows, with the framework's
 * real main Looper (see {@link LooperDispatchTest}): a triggered session that
 * was not sampled records on the main thread only while the Looper
 * dispatches a message; an {@code IdleHandler} (main thread, between
 * messages) runs with the probes off, and the block's window is still
 * exactly the message's records.
 */
@RunWith(BeatlineRobolectricRunner.class)
@Config(sdk = 34, manifest = Config.NONE)
@LooperMode(LooperMode.Mode.INSTRUMENTATION_TEST)
public class LooperGateTest {
    private File spool;

    @After
    public void stop() {
        Beatline.shutdown(0);
        Looper.getMainLooper().setMessageLogging(null);
    }

    @Test
    public void idleHandlersRunUntracedAndTheBlockWindowIsExact() throws Exception {
        File root = new File(System.getProperty("beatline.test.build", "/tmp"), "runtime-tests");
        root.mkdirs();
        spool = Files.createTempDirectory(root.toPath(), "gate").toFile();
        assertTrue(Beatline.start(new BeatlineConfig.Builder().server("http://127.0.0.1:9").app("robo")
                .ingestKey("k").spoolDir(spool).threadPolicy(new AndroidThreadPolicy(false))
                .uploadMode("triggered").sampleRate(0).blockThresholdMillis(100).anrThresholdMillis(0)
                .flushIntervalMillis(3600000).backoff(3600000, 3600000).lifecycle(new Lifecycle() {
                    @Override
                    public void install(Hooks hooks) {
                    }
                }).log(new Log.Stderr(false)).build()));
        LooperDispatch.install();
        final AtomicInteger idleRecording = new AtomicInteger();
        final AtomicInteger idleRuns = new AtomicInteger();
        final AtomicInteger inMessage = new AtomicInteger();
        final CountDownLatch done = new CountDownLatch(1);
        Handler h = new Handler(Looper.getMainLooper());
        h.post(new Runnable() {
            @Override
            public void run() {
                Looper.myQueue().addIdleHandler(new MessageQueue.IdleHandler() {
                    @Override
                    public boolean queueIdle() {
                        idleRuns.incrementAndGet();
                        if (Beatline.recording()) {
                            idleRecording.incrementAndGet();
                        }
                        Beatline.i(50); // outside any dispatch: not recorded
                        Beatline.o(50);
                        return false;
                    }
                });
            }
        });
        h.post(new LooperDispatchTest.Slow());
        h.post(new Runnable() {
            @Override
            public void run() {
                if (Beatline.recording()) {
                    inMessage.incrementAndGet();
                }
            }
        });
        // the idle handler runs once the queue is empty; then a last message
        for (int k = 0; k < 300 && idleRuns.get() == 0; k++) {
            Thread.sleep(10);
        }
        h.post(new Runnable() {
            @Override
            public void run() {
                done.countDown();
            }
        });
        assertTrue("main Looper stuck", done.await(30, TimeUnit.SECONDS));
        assertEquals("the idle handler ran", 1, idleRuns.get());
        assertEquals("the probes are off between messages", 0, idleRecording.get());
        assertEquals("and on inside one", 1, inMessage.get());
        Beatline.flush();
        List<BatchReader> bs = BatchReader.spool(spool);
        assertEquals(1, bs.size());
        assertEquals("the window is exactly the slow message's records", Arrays.asList(1, 2, -2, 3, -3, -1),
                bs.get(0).segs.get(0).ids());
    }
}
