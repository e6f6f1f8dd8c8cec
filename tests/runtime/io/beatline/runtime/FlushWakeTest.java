package io.beatline.runtime;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertTrue;

import java.io.File;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.Test;

/**
 * Phone settings ({@code idleWakeups} false, full mode) on the JVM: once the
 * flush thread waits without a deadline, a worker thread that starts
 * recording later (no main-thread message nudges the flush thread) gets its
 * ring dumped before it wraps: every record reaches the spool, none is lost
 * or counted truncated. Before the fix the flush thread slept until the next
 * explicit flush and the worker's ring wrapped.
 */
public class FlushWakeTest {
    static final int RING = 1024;
    /** Records written per burst: an eighth of the ring. */
    static final int BURST = RING / 8;
    /** Bursts: five rings' worth in all. */
    static final int BURSTS = 40;

    static final Lifecycle NO_HOOKS = new Lifecycle() {
        @Override
        public void install(Hooks hooks) {
        }
    };

    private static Thread.State flusherState() {
        for (Thread t : Thread.getAllStackTraces().keySet()) {
            if ("beatline-flush".equals(t.getName()) && t.isAlive()) {
                return t.getState();
            }
        }
        return null;
    }

    @Test
    public void workerRecordingWhileFlushThreadIdlesIsDumpedNotLost() throws Exception {
        File spool = TestSupport.tempDir("flushwake");
        assertTrue(Beatline.start(new BeatlineConfig.Builder().server("http://127.0.0.1:9").app("fw").ingestKey("k")
                .spoolDir(spool).lifecycle(NO_HOOKS).uploadMode("full").idleWakeups(false)
                .threadBufferRecords(RING).mainBufferRecords(RING).flushIntervalMillis(3600000).flushFill(0.5)
                .backoff(3600000, 3600000).build()));
        try {
            // nothing recorded yet: the flush thread waits without a deadline (bounded look)
            Thread.State st = null;
            for (int i = 0; i < 600 && (st = flusherState()) != Thread.State.WAITING; i++) {
                Thread.sleep(20);
            }
            assertEquals("flush thread idle (no deadline) before the worker starts", Thread.State.WAITING, st);
            final AtomicBoolean failed = new AtomicBoolean();
            Thread worker = new Thread(new Runnable() {
                @Override
                public void run() {
                    try {
                        for (int b = 0; b < BURSTS; b++) {
                            for (int k = 0; k < BURST / 2; k++) {
                                Beatline.i(7);
                                Beatline.o(7);
                            }
                            Thread.sleep(50); // recording over time, as a background job would
                        }
                    } catch (Throwable t) {
                        failed.set(true);
                    }
                }
            }, "fw-worker");
            worker.start();
            worker.join(120000);
            assertTrue("worker stuck", !worker.isAlive() && !failed.get());
            Beatline.flush(); // the last records (less than a ring) are dumped here
            Beatline.Stats stats = Beatline.stats();
            long records = 0;
            for (BatchReader b : BatchReader.spool(spool)) {
                for (BatchReader.Seg s : b.segs) {
                    if ("fw-worker".equals(s.name)) {
                        records += s.records.length - s.carried;
                    }
                }
            }
            assertEquals("no worker ring wrapped before a dump", 0, stats.truncatedThreads);
            assertEquals("every worker record spooled", (long) BURST * BURSTS, records);
            assertTrue("the flush thread dumped while the worker ran: more than the final flush's batch",
                    stats.batchesSpooled > 1);
        } finally {
            Beatline.shutdown(0);
        }
    }
}
