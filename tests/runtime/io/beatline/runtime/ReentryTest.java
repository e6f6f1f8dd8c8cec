package io.beatline.runtime;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertNotNull;
import static org.junit.Assert.assertNull;
import static org.junit.Assert.assertTrue;

import java.io.File;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.After;
import org.junit.Test;

/**
 * Issue 14, items 6 and 10 on the JVM: app code the runtime calls
 * ({@link ThreadPolicy}, {@link Clock}, {@link Log}) instrumented with the
 * app (its probes call {@link Beatline#i} / {@link Beatline#o} as the
 * instrumenter's do) traces normally; an HTTPS error stops uploads and is
 * surfaced instead of being retried.
 */
public class ReentryTest {
    static final int N = 300; // iterations per thread; each writes 4 records
    static final int APP_POLICY = 900;
    static final int APP_TRACE = 901;
    static final int APP_CLOCK = 902;
    static final int APP_LOG = 903;

    @After
    public void stop() {
        Beatline.shutdown(0);
    }

    static final class InstrumentedPolicy implements ThreadPolicy {
        @Override
        public boolean isMain(Thread t) {
            Beatline.i(APP_POLICY);
            boolean m = t.getName().equals("reentry-main");
            Beatline.o(APP_POLICY);
            return m;
        }

        @Override
        public boolean trace(Thread t) {
            Beatline.i(APP_TRACE);
            boolean on = !t.getName().equals("main"); // every thread but JUnit's: the runtime's too, if it let them
            Beatline.o(APP_TRACE);
            return on;
        }
    }

    static final class InstrumentedClock implements Clock {
        @Override
        public long nowMicros() {
            Beatline.i(APP_CLOCK);
            long v = System.nanoTime() / 1000;
            Beatline.o(APP_CLOCK);
            return v;
        }

        @Override
        public void close() {
        }
    }

    static final class InstrumentedLog implements Log {
        final AtomicInteger calls = new AtomicInteger();

        @Override
        public void warn(String msg) {
            Beatline.i(APP_LOG);
            calls.incrementAndGet();
            Beatline.o(APP_LOG);
        }

        @Override
        public void debug(String msg) {
            warn(msg);
        }
    }

    static final Lifecycle NO_HOOKS = new Lifecycle() {
        @Override
        public void install(Hooks hooks) {
        }
    };

    static void work(int n) {
        for (int k = 0; k < n; k++) {
            Beatline.i(1);
            Beatline.i(2);
            Beatline.o(2);
            Beatline.o(1);
        }
    }

    @Test
    public void instrumentedPolicyClockAndLogTraceNormally() throws Exception {
        File spool = TestSupport.tempDir("reentry");
        InstrumentedLog log = new InstrumentedLog(); // debug lines too
        assertTrue(Beatline.start(new BeatlineConfig.Builder().server("http://127.0.0.1:9").app("re").ingestKey("k")
                .spoolDir(spool).threadPolicy(new InstrumentedPolicy()).clock(new InstrumentedClock()).log(log)
                .lifecycle(NO_HOOKS).flushIntervalMillis(3600000).flushFill(0).backoff(3600000, 3600000)
                .uploadMode("full").build()));
        final java.util.concurrent.CountDownLatch worked = new java.util.concurrent.CountDownLatch(2);
        final java.util.concurrent.CountDownLatch release = new java.util.concurrent.CountDownLatch(1);
        Thread main = new Thread(new Runnable() {
            @Override
            public void run() {
                work(N);
                Beatline.flush(); // on a traced thread: the app Log's probes here are ignored too
                work(N);
                worked.countDown();
                await(release);
            }
        }, "reentry-main");
        Thread worker = new Thread(new Runnable() {
            @Override
            public void run() {
                work(N);
                worked.countDown();
                await(release);
            }
        }, "reentry-worker");
        main.start();
        worker.start();
        boolean done = worked.await(120, java.util.concurrent.TimeUnit.SECONDS);
        Beatline.Stats st = Beatline.stats();
        release.countDown();
        main.join(120000);
        worker.join(120000);
        assertTrue("threads stuck", done && !main.isAlive() && !worker.isAlive());
        assertEquals("one ring per traced thread, no more (the policy's probes make none)", 2, st.threads);
        assertEquals("nothing refused", 0, st.threadsRefused);
        // the upload thread tried (port 9 refuses) and logged it through the app Log
        for (int i = 0; i < 600 && Beatline.stats().uploadFailures == 0; i++) {
            Thread.sleep(50);
        }
        assertTrue("an upload was tried", Beatline.stats().uploadFailures > 0);
        Beatline.flush();
        assertTrue("the app Log was called (debug lines of the flushes)", log.calls.get() > 0);
        Map<String, List<Integer>> ids = new HashMap<String, List<Integer>>();
        Map<String, Boolean> mains = new HashMap<String, Boolean>();
        for (BatchReader b : BatchReader.spool(spool)) {
            for (BatchReader.Seg s : b.segs) {
                List<Integer> l = ids.get(s.name);
                if (l == null) {
                    ids.put(s.name, l = new ArrayList<Integer>());
                }
                List<Integer> r = s.ids();
                l.addAll(r.subList(s.carried, r.size())); // carried enters repeat the open calls
                mains.put(s.name, s.main());
            }
        }
        assertEquals("only the two app threads have records: " + ids.keySet(), 2, ids.size());
        assertEquals(Boolean.TRUE, mains.get("reentry-main"));
        assertEquals(Boolean.FALSE, mains.get("reentry-worker"));
        assertEquals("main: the program's records only", expected(2 * N), ids.get("reentry-main"));
        assertEquals("worker: the program's records only", expected(N), ids.get("reentry-worker"));
    }

    /**
     * The probes read an app clock with the calling thread's own ring
     * switched off (issue 14, probe cost): the clock's own probes find that
     * ring off and return, and the ring stays in its {@code ThreadLocal}
     * (before: swapped for {@link Ring#OFF} and back around every reading,
     * two {@code ThreadLocal.set} and a second lookup per probe).
     */
    @Test
    public void probesReadAnAppClockWithTheirOwnRingSwitchedOff() {
        final Recorder[] rec = new Recorder[1];
        final List<Ring> seen = new ArrayList<Ring>();
        final List<Boolean> seenOn = new ArrayList<Boolean>();
        Clock clock = new Clock() {
            long t = 100;

            @Override
            public long nowMicros() {
                Ring r = rec[0].ring();
                seen.add(r);
                seenOn.add(r.on);
                rec[0].enter(APP_CLOCK); // the clock's probes, as instrumented
                rec[0].exit(APP_CLOCK);
                return ++t;
            }

            @Override
            public void close() {
            }
        };
        ThreadPolicy all = new ThreadPolicy() {
            @Override
            public boolean isMain(Thread t) {
                return true;
            }

            @Override
            public boolean trace(Thread t) {
                return true;
            }
        };
        rec[0] = new Recorder(clock, all, 64, 64, 4, Log.STDERR);
        rec[0].enter(1);
        rec[0].exit(1);
        Ring mine = rec[0].ring();
        assertTrue(mine.on && mine.main);
        assertEquals("one reading per probe", 2, seen.size());
        for (int k = 0; k < seen.size(); k++) {
            assertTrue("the thread's own ring, not swapped out", seen.get(k) == mine);
            assertFalse("switched off while the app clock runs", seenOn.get(k));
        }
        long[] recs = mine.copy(0, mine.published()).records;
        assertEquals("the clock's probes recorded nothing", 2, recs.length);
        assertEquals(1, (int) (recs[0] >>> Recorder.ID_SHIFT) & Recorder.ID_MASK);
        assertEquals(101, recs[0] & Recorder.T_MASK);
        assertTrue("an exit", recs[1] < 0);
        assertEquals(102, recs[1] & Recorder.T_MASK);
        // the dumper's reading (MutedClock) also leaves the ring in place and on afterwards
        seen.clear();
        seenOn.clear();
        rec[0].clock.nowMicros();
        assertTrue(seen.get(0) == mine && !seenOn.get(0) && mine.on);
    }

    static void await(java.util.concurrent.CountDownLatch l) {
        try {
            l.await(120, java.util.concurrent.TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    static List<Integer> expected(int n) {
        List<Integer> l = new ArrayList<Integer>();
        for (int k = 0; k < n; k++) {
            l.add(1);
            l.add(2);
            l.add(-2);
            l.add(-1);
        }
        return l;
    }

    /** The phone options are checked like every setting: a clear error naming the setting. */
    @Test
    public void phoneOptionsAreChecked() {
        String[] bad = {"uploadMinBatches", "uploadMinBatches", "process", "process"};
        BeatlineConfig.Builder[] bs = {
            base().uploadMinBatches(0), base().uploadMinBatches(10001), base().process(""), base().process("a\nb")};
        for (int i = 0; i < bs.length; i++) {
            try {
                bs[i].build();
                org.junit.Assert.fail("accepted: " + bad[i]);
            } catch (IllegalArgumentException e) {
                assertTrue(e.getMessage(), e.getMessage().startsWith(bad[i]));
            }
        }
        assertEquals("com.example:sync", base().process("com.example:sync").uploadMinBatches(10000).build().process);
    }

    static BeatlineConfig.Builder base() {
        return new BeatlineConfig.Builder().server("https://beatline.example").app("re").ingestKey("k");
    }

    /**
     * Issue 14's header field {@code process}: written after
     * {@code clock_resolution_us}, read back, and skipped by the server's
     * decoder ({@code beatline-batch decode}, the same parser as ingest).
     */
    @Test
    public void processHeaderFieldIsSkippedByTheServersDecoder() throws Exception {
        BatchEncoder.Header h = new BatchEncoder.Header(java.util.UUID.randomUUID(), 1700000000000000L, 34, "re",
                "b1", "s1", "Pixel", "14", 1);
        h.process = "com.example:sync";
        List<Recorder.ThreadDump> ts = new ArrayList<Recorder.ThreadDump>();
        ts.add(new Recorder.ThreadDump(1, "main", true, false, new long[] {(1L << 40) | 5, Recorder.EXIT | (1L << 40) | 9}));
        byte[] b = BatchEncoder.encode(h, ts, new byte[0]);
        BatchReader r = BatchReader.parse(b);
        assertEquals("com.example:sync", r.process);
        assertEquals(1, r.clockResolutionUs);
        String json = TestSupport.decode(b);
        assertTrue(json, json.contains("\"build\":\"b1\""));
        h.process = null;
        assertNull(BatchReader.parse(BatchEncoder.encode(h, ts, new byte[0])).process);
    }

    /**
     * An https:// server that does not speak TLS (a plain HTTP server, a
     * wrong port): the TLS error stops uploads for the session and is
     * surfaced in {@link Beatline.Stats#uploadError}; with a 1 ms backoff a
     * retrying runtime would connect again and again.
     */
    @Test
    public void tlsErrorIsSurfacedNotRetried() throws Exception {
        final ServerSocket ss = new ServerSocket(0, 50, InetAddress.getByName("127.0.0.1"));
        final AtomicInteger connections = new AtomicInteger();
        Thread srv = new Thread(new Runnable() {
            @Override
            public void run() {
                while (!ss.isClosed()) {
                    try (Socket s = ss.accept()) {
                        connections.incrementAndGet();
                        s.setSoTimeout(5000);
                        InputStream in = s.getInputStream();
                        in.read(new byte[4096]); // the ClientHello
                        OutputStream out = s.getOutputStream();
                        out.write("HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n".getBytes(StandardCharsets.US_ASCII));
                        out.flush();
                    } catch (Exception e) {
                        // closed
                    }
                }
            }
        }, "plain-http");
        srv.setDaemon(true);
        srv.start();
        try {
            File spool = TestSupport.tempDir("tls");
            assertTrue(Beatline.start(new BeatlineConfig.Builder().server("https://127.0.0.1:" + ss.getLocalPort())
                    .app("re").ingestKey("k").spoolDir(spool).lifecycle(NO_HOOKS).flushIntervalMillis(3600000)
                    .backoff(1, 1).uploadMode("full").log(new Log.Stderr(false)).build()));
            work(10);
            assertFalse("nothing was accepted", Beatline.flushAndWait(3000));
            Beatline.Stats st = Beatline.stats();
            assertNotNull("the error is surfaced", st.uploadError);
            assertTrue(st.uploadError, st.uploadError.contains("SSL"));
            int c1 = connections.get(); // HttpURLConnection itself may try a POST twice
            assertTrue("connected", c1 >= 1);
            // what a retrying runtime would do meanwhile (1 ms backoff): a second flush, more time
            Beatline.flush();
            assertFalse(Beatline.flushAndWait(500));
            assertEquals("one attempt, not retried", 1, Beatline.stats().uploadFailures);
            assertEquals("no connection after the error", c1, connections.get());
            assertFalse("the batch stays in the spool for the next start", BatchReader.spool(spool).isEmpty());
        } finally {
            ss.close();
        }
    }
}
