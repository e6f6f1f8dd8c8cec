package io.beatline.runtime;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertTrue;

import java.io.File;
import java.lang.reflect.Field;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.junit.After;
import org.junit.Test;

/**
 * Issue 13, recording gated to the windows that can be uploaded: a
 * triggered session that was not sampled records only on the main thread
 * while it dispatches a message (or while the launch window is open); every
 * other probe takes the off path. The dispatch hook is driven by hand on the
 * test's thread, which the policy makes the main thread.
 */
public class GateTest {
    private File spool;

    @After
    public void stop() {
        Beatline.shutdown(0);
    }

    private BeatlineConfig.Builder config(String mode) throws Exception {
        spool = TestSupport.tempDir("gate");
        final Thread me = Thread.currentThread();
        return new BeatlineConfig.Builder().server("http://127.0.0.1:9").app("gate").ingestKey("k")
                .spoolDir(spool).uploadMode(mode).sampleRate(0).blockThresholdMillis(100).anrThresholdMillis(0)
                .flushIntervalMillis(3600000).backoff(3600000, 3600000).threadPolicy(new ThreadPolicy() {
                    @Override
                    public boolean isMain(Thread t) {
                        return t == me;
                    }

                    @Override
                    public boolean trace(Thread t) {
                        return true; // triggered sessions trace the main thread only whatever this says
                    }
                }).lifecycle(new Lifecycle() {
                    @Override
                    public void install(Hooks hooks) {
                    }
                }).log(new Log.Stderr(false));
    }

    private static final DispatchMonitor.Namer NAMER = new DispatchMonitor.Namer() {
        @Override
        public String target(Object what) {
            return String.valueOf(what);
        }
    };

    private static Session session() throws Exception {
        Field f = Beatline.class.getDeclaredField("current");
        f.setAccessible(true);
        return (Session) f.get(null);
    }

    /** Method ids of the calling (main) thread's ring, exits negative. */
    private static List<Integer> mainRing() throws Exception {
        Ring r = session().recorder.ring();
        assertTrue("the main thread has a ring", r.on && r.main);
        List<Integer> ids = new ArrayList<Integer>();
        for (long x : r.copy(0, r.published()).records) {
            int id = (int) (x >>> Recorder.ID_SHIFT) & Recorder.ID_MASK;
            ids.add(x < 0 ? -id : id);
        }
        return ids;
    }

    private static void pair(int id) {
        Beatline.i(id);
        Beatline.o(id);
    }

    private static void onOtherThread(final int id) throws InterruptedException {
        Thread t = new Thread(new Runnable() {
            @Override
            public void run() {
                pair(id);
            }
        }, "gate-other");
        t.start();
        t.join(30000);
        assertFalse(t.isAlive());
    }

    @Test
    public void triggeredRecordsOnlyWhileTheMainThreadDispatches() throws Exception {
        assertTrue(Beatline.start(config("triggered").build()));
        assertEquals("triggered", Beatline.stats().uploadMode);
        DispatchMonitor m = Beatline.dispatchMonitor("looper", NAMER);
        assertFalse("no dispatch yet: the probes take the off path", Beatline.recording());
        pair(1); // main thread, outside a dispatch
        onOtherThread(8);
        m.begin("quick");
        assertTrue(Beatline.recording());
        pair(2);
        onOtherThread(9); // another thread while the main thread dispatches
        m.end();
        assertFalse("after the dispatch: off again", Beatline.recording());
        pair(3);
        m.begin("nested");
        m.begin("inner"); // a modal loop inside the message: the outer message's window goes on
        pair(4);
        m.end();
        assertTrue("the outer message still runs", Beatline.recording());
        pair(5);
        m.end();
        pair(6);
        assertEquals("only the records made inside dispatches, main thread only", Arrays.asList(2, -2, 4, -4, 5, -5),
                mainRing());
        assertEquals("no ring for other threads", 1, Beatline.stats().threads);
        assertEquals("the nested dispatch is part of the outer message", 2, Beatline.stats().messages);
    }

    @Test
    public void blockWindowIsExactWithGatedRecording() throws Exception {
        assertTrue(Beatline.start(config("triggered").build()));
        DispatchMonitor m = Beatline.dispatchMonitor("looper", NAMER);
        pair(1);
        Beatline.i(7); // open when the message begins: its enter is not recorded
        m.begin("slow");
        Beatline.i(2);
        Thread.sleep(150);
        pair(3);
        Beatline.o(2);
        Beatline.o(7);
        m.end();
        pair(4);
        m.begin("quick");
        pair(5);
        m.end();
        Beatline.flush();
        List<BatchReader> bs = BatchReader.spool(spool);
        assertEquals("one block batch", 1, bs.size());
        BatchReader.Seg s = bs.get(0).segs.get(0);
        assertTrue(s.main());
        assertEquals("exactly the slow message's records", Arrays.asList(2, 3, -3, -2, -7), s.ids());
        assertEquals("the enter of 7 was never recorded: a fresh segment (the server supplies it)", 0, s.carried);
        String e = bs.get(0).events.get(0);
        assertEquals("slow", BatchReader.text(e, "target"));
        for (long r : s.records) {
            long t = r & ((1L << 40) - 1);
            assertTrue(e + " record at " + t,
                    t >= BatchReader.num(e, "begin_us") && t <= BatchReader.num(e, "end_us"));
        }
    }

    @Test
    public void launchWindowRecordsOutsideDispatches() throws Exception {
        assertTrue(Beatline.start(config("triggered").build()));
        DispatchMonitor m = Beatline.dispatchMonitor("looper", NAMER);
        pair(1);
        Beatline.launchWindow(true);
        pair(2);
        m.begin("during launch");
        pair(3);
        m.end();
        assertTrue("the launch window is still open", Beatline.recording());
        pair(4);
        Beatline.launchWindow(false);
        assertFalse(Beatline.recording());
        pair(5);
        assertEquals(Arrays.asList(2, -2, 3, -3, 4, -4), mainRing());
    }

    /**
     * A call entered in the launch window and left open there, exited (not
     * recorded) and entered again between windows: the ring's old enter is
     * not that call's, so a later block's window does not carry it.
     */
    @Test
    public void windowsCarryNothingFromEarlierWindows() throws Exception {
        assertTrue(Beatline.start(config("triggered").build()));
        DispatchMonitor m = Beatline.dispatchMonitor("looper", NAMER);
        Beatline.launchWindow(true);
        Beatline.i(6);
        Beatline.launchWindow(false);
        Beatline.o(6); // not recorded
        Beatline.i(6); // not recorded: the call the block's window ends
        m.begin("slow");
        Thread.sleep(150);
        Beatline.o(6);
        m.end();
        Beatline.flush();
        List<BatchReader> bs = BatchReader.spool(spool);
        assertEquals(1, bs.size());
        BatchReader.Seg s = bs.get(0).segs.get(0);
        assertEquals("fresh: the enter in the ring belongs to an earlier call", 0, s.carried);
        assertEquals(Arrays.asList(-6), s.ids());
    }

    @Test
    public void fullAndSampledSessionsRecordEverywhere() throws Exception {
        assertTrue(Beatline.start(config("full").build()));
        assertTrue("full: recording from the start", Beatline.recording());
        Beatline.dispatchMonitor("looper", NAMER);
        pair(1);
        assertEquals(Arrays.asList(1, -1), mainRing());
        Beatline.shutdown(0);
        assertTrue(Beatline.start(config("triggered").sampleSeed(1L).sampleRate(1).build()));
        assertTrue(Beatline.stats().sampledFull);
        DispatchMonitor m = Beatline.dispatchMonitor("looper", NAMER);
        m.begin("x");
        m.end();
        assertTrue("a sampled session is not gated", Beatline.recording());
        pair(2);
        assertEquals(Arrays.asList(2, -2), mainRing());
        Beatline.shutdown(0);
        assertFalse("off after shutdown", Beatline.recording());
    }
}
