package io.beatline.runtime;

import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;

import java.io.File;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.UUID;
import org.junit.Test;

/**
 * Calls that span batches (schema/batch-format.md, "Segments"), runtime
 * side: the dumper's open-call replay ({@link OpenCalls}), how dumps are cut
 * into segments ({@link Session#split}: carried enters, {@code since_us},
 * {@code continues}), the rebase of carried times, and the encoder's new
 * fields against the server's golden case and decoder.
 */
public class SegmentTest {
    static long enter(int id, long t) {
        return ((long) id << Recorder.ID_SHIFT) | (t & Recorder.T_MASK);
    }

    static long exit(int id, long t) {
        return Recorder.EXIT | enter(id, t);
    }

    /** The stack as "id@time ..." (outermost first). */
    static String stack(OpenCalls oc) {
        StringBuilder s = new StringBuilder();
        for (int k = 0; k < oc.depth(); k++) {
            s.append(k == 0 ? "" : " ").append(oc.id(k)).append('@').append(oc.enterUs(k));
        }
        return s.toString();
    }

    /** A record as "i1@100" / "o1@100" (time as stored: raw or rebased). */
    static String rec(long r) {
        return (r < 0 ? "o" : "i") + ((r >>> Recorder.ID_SHIFT) & Recorder.ID_MASK) + "@" + (r & Recorder.T_MASK);
    }

    /** A segment as "[carried=2 since=130 ][truncated ][continues ]i1@100 i3@130 | o3@200". */
    static String seg(Recorder.ThreadDump t) {
        StringBuilder s = new StringBuilder();
        if (t.carried > 0) {
            s.append("carried=").append(t.carried).append(" since=").append(t.sinceUs).append(' ');
        }
        if (t.truncated) {
            s.append("truncated ");
        }
        if (t.continues) {
            s.append("continues ");
        }
        for (int k = 0; k < t.records.length; k++) {
            s.append(k == 0 ? "" : k == t.carried ? " | " : " ").append(rec(t.records[k]));
        }
        return s.toString().trim();
    }

    /** A thread's dump as Recorder.dump makes it, with the thread's dumper state. */
    static Recorder.ThreadDump dumped(OpenCalls oc, boolean truncated, boolean alive, long... recs) {
        return new Recorder.ThreadDump(1, "main", true, truncated, recs, 0, 0, false, oc, alive);
    }

    /** Session.split of one thread's dump into one batch; its single segment. */
    static Recorder.ThreadDump one(Recorder.ThreadDump d, long now, boolean last) {
        List<List<Recorder.ThreadDump>> b = Session.split(Arrays.asList(d), 1 << 20, now, last);
        assertEquals(1, b.size());
        assertEquals(1, b.get(0).size());
        return b.get(0).get(0);
    }

    // ---- replay ----------------------------------------------------------

    @Test
    public void replayNestedCallsAndRecursion() {
        OpenCalls oc = new OpenCalls(16);
        long[] r = {enter(1, 100), enter(2, 110), enter(2, 120), enter(2, 130), exit(2, 140), exit(2, 150),
            enter(3, 160)};
        assertTrue(oc.replay(r, 0, r.length, 1000, true));
        assertEquals("recursion pops the innermost frame", "1@100 2@110 3@160", stack(oc));
        assertTrue(oc.replay(r, 0, 0, 1000, false));
        assertEquals("an empty range changes nothing", "1@100 2@110 3@160", stack(oc));
        long[] r2 = {exit(3, 170), enter(4, 180), exit(2, 190)};
        assertTrue(oc.replay(r2, 0, r2.length, 1000, false));
        assertEquals("an exit of a deeper frame closes it and the frames above (as the server does)", "1@100",
                stack(oc));
        assertTrue(oc.replay(new long[] {exit(1, 200)}, 0, 1, 1000, false));
        assertEquals("", stack(oc));
    }

    @Test
    public void exitsWithoutEnters() {
        OpenCalls oc = new OpenCalls(16);
        long[] r = {exit(7, 5), exit(8, 6), enter(1, 10)};
        assertTrue("fresh: exits of calls entered before the records began are ignored",
                oc.replay(r, 0, r.length, 1000, true));
        assertEquals("1@10", stack(oc));
        long[] r2 = {exit(1, 20), exit(9, 30)};
        assertFalse("carrying: an exit on the empty stack means the stack was wrong",
                oc.replay(r2, 0, r2.length, 1000, false));
        OpenCalls oc2 = new OpenCalls(16);
        long[] r3 = {enter(1, 10), enter(2, 11), exit(5, 12)};
        assertFalse("an exit of a method not on the stack: unknown", oc2.replay(r3, 0, r3.length, 1000, true));
    }

    @Test
    public void depthIsBounded() {
        OpenCalls oc = new OpenCalls(3);
        long[] r = {enter(1, 1), enter(2, 2), enter(3, 3), enter(4, 4)};
        assertTrue(oc.replay(r, 0, 3, 1000, true));
        assertFalse("a 4th open call in a stack bounded to 3: unknown", oc.replay(r, 3, 4, 1000, false));
        assertEquals(4096, OpenCalls.depthFor(1 << 20));
        assertEquals(3, OpenCalls.depthFor(7));
        assertEquals(0, OpenCalls.depthFor(1));
        OpenCalls deep = new OpenCalls(1 << 20);
        assertEquals(4096, deep.maxDepth);
        long[] many = new long[4097];
        for (int k = 0; k < many.length; k++) {
            many[k] = enter(k, k);
        }
        assertTrue("4096 open calls: kept (the stack grows)", deep.replay(many, 0, 4096, 5000, true));
        assertEquals(4096, deep.depth());
        assertEquals(4095, deep.id(4095));
        assertEquals(4095, deep.enterUs(4095));
        assertFalse("the 4097th: unknown", deep.replay(many, 4096, 4097, 5000, false));
    }

    /** Enter times are full clock µs, recovered across the 40-bit wrap like rebase does. */
    @Test
    public void replayRecoversFullTimes() {
        long wrap = 1L << 40;
        long now = 3 * wrap + 500;
        OpenCalls oc = new OpenCalls(4);
        assertTrue(oc.replay(new long[] {enter(1, 3 * wrap - 1000), enter(2, 3 * wrap + 20)}, 0, 2, now, true));
        assertEquals((3 * wrap - 1000) + "", stack(oc).split(" ")[0].split("@")[1]);
        assertEquals(3 * wrap + 20, oc.enterUs(1));
    }

    // ---- segments --------------------------------------------------------

    /** A call open across three dumps: carried with its original time, since_us, continues until the final dump. */
    @Test
    public void callsSpanDumps() {
        OpenCalls oc = new OpenCalls(16);
        Recorder.ThreadDump s1 = one(dumped(oc, false, true, enter(1, 100), enter(2, 110), exit(2, 120),
                enter(3, 130)), 1000, false);
        assertEquals("continues i1@100 i2@110 o2@120 i3@130", seg(s1));
        Recorder.ThreadDump s2 = one(dumped(oc, false, true, exit(3, 200), enter(4, 210)), 2000, false);
        assertEquals("carried=2 since=130 continues i1@100 i3@130 | o3@200 i4@210", seg(s2));
        List<Recorder.ThreadDump> b = new ArrayList<>(Arrays.asList(s2));
        assertEquals("the batch origin is the oldest carried enter", 100,
                Session.rebase(new Recorder.Snapshot(2000, b)));
        assertEquals("carried=2 since=30 continues i1@0 i3@30 | o3@100 i4@110", seg(s2));
        Recorder.ThreadDump s3 = one(dumped(oc, false, true, exit(4, 300), exit(1, 310)), 3000, true);
        assertEquals("the final dump does not continue", "carried=2 since=210 i1@100 i4@210 | o4@300 o1@310",
                seg(s3));
        assertFalse(oc.chained);
    }

    /** An idle thread (no records in a dump) keeps its stack; since_us stays where its last segment ended. */
    @Test
    public void idleDumpsKeepTheStack() throws Exception {
        OpenCalls oc = new OpenCalls(16);
        one(dumped(oc, false, true, enter(1, 100)), 1000, false);
        // Recorder.dump leaves an idle live thread out of the dump: nothing happens to oc
        Recorder.ThreadDump s = one(dumped(oc, false, true, exit(1, 5000)), 6000, false);
        assertEquals("carried=1 since=100 continues i1@100 | o1@5000", seg(s));
    }

    /** Every piece of a split dump carries the calls open at its cut; records per batch stay within max. */
    @Test
    public void splitCarriesAtEveryCut() {
        List<Long> main = new ArrayList<>();
        main.add(enter(1, 0));
        for (int k = 0; k < 10; k++) {
            main.add(enter(2, 10 * k + 1));
            main.add(enter(3, 10 * k + 2));
            main.add(exit(3, 10 * k + 3));
            main.add(exit(2, 10 * k + 4));
        }
        main.add(exit(1, 200));
        long[] recs = new long[main.size()];
        for (int i = 0; i < recs.length; i++) {
            recs[i] = main.get(i);
        }
        OpenCalls oc = new OpenCalls(OpenCalls.depthFor(6));
        Recorder.ThreadDump other = new Recorder.ThreadDump(2, "w", false, false,
                new long[] {enter(9, 5), exit(9, 6), enter(9, 7)}, 0, 0, false, new OpenCalls(3), true);
        List<List<Recorder.ThreadDump>> batches = Session.split(
                Arrays.asList(dumped(oc, false, true, recs.clone()), other), 6, 1000, true);
        // an independent model: what is open before each record
        List<Long> open = new ArrayList<>();
        int at = 0;
        long prevEnd = -1;
        int pieces = 0;
        for (List<Recorder.ThreadDump> batch : batches) {
            int n = 0;
            List<Long> ids = new ArrayList<>();
            for (Recorder.ThreadDump t : batch) {
                n += t.records.length;
                assertFalse("one segment per thread per batch", ids.contains(t.id));
                ids.add(t.id);
                if (t.id != 1) {
                    continue;
                }
                pieces++;
                long[] carried = Arrays.copyOf(t.records, t.carried);
                long[] want = new long[open.size()];
                for (int k = 0; k < want.length; k++) {
                    want[k] = open.get(k);
                }
                assertArrayEquals("carried enters = the calls open at the cut, outermost first, original times",
                        want, carried);
                if (t.carried > 0) {
                    assertEquals(prevEnd, t.sinceUs);
                }
                for (int k = t.carried; k < t.records.length; k++) {
                    assertEquals("the pieces hold the records in order, each once", recs[at++], t.records[k]);
                    if (t.records[k] >= 0) {
                        open.add(t.records[k]);
                    } else {
                        open.remove(open.size() - 1);
                    }
                }
                prevEnd = t.records[t.records.length - 1] & Recorder.T_MASK;
                assertEquals("every piece but the last continues (final dump)", at < recs.length, t.continues);
            }
            assertTrue("at most 6 records per batch, carried ones included: " + n, n <= 6);
        }
        assertEquals(recs.length, at);
        assertTrue(pieces >= 9);
        Recorder.ThreadDump w = batches.get(batches.size() - 1).get(batches.get(batches.size() - 1).size() - 1);
        assertEquals(2, w.id);
        assertFalse("the final dump", w.continues);
    }

    /**
     * A wrapped ring makes the segment fresh even though the previous one
     * continued; exits of lost enters in a fresh segment are ignored, so the
     * calls entered after the loss are carried on. An exit that matches
     * nothing in a carrying segment makes the stack unknown: that segment
     * does not continue, the next is fresh.
     */
    @Test
    public void truncationAndUnknownStacks() {
        OpenCalls oc = new OpenCalls(16);
        assertEquals("continues i1@100 i2@110", seg(one(dumped(oc, false, true, enter(1, 100), enter(2, 110)),
                1000, false)));
        Recorder.ThreadDump s2 = one(dumped(oc, true, true, exit(2, 300), enter(5, 310)), 1000, false);
        assertEquals("truncated continues o2@300 i5@310", seg(s2));
        Recorder.ThreadDump s3 = one(dumped(oc, false, true, exit(5, 400), exit(1, 410), enter(6, 420)), 1000,
                false);
        assertEquals("main's exit (entered before the loss) on an empty carrying stack: unknown",
                "carried=1 since=310 i5@310 | o5@400 o1@410 i6@420", seg(s3));
        assertEquals("", stack(oc));
        Recorder.ThreadDump s4 = one(dumped(oc, false, true, exit(6, 500), enter(7, 510)), 1000, false);
        assertEquals("fresh after an unknown stack", "continues o6@500 i7@510", seg(s4));
        Recorder.ThreadDump s5 = one(dumped(oc, false, true, exit(7, 600)), 1000, false);
        assertEquals("known again", "carried=1 since=510 continues i7@510 | o7@600", seg(s5));
    }

    /** A thread that ended: its last segment does not continue; calls it left open are closed by carried enters alone. */
    @Test
    public void endedThreadsAndCarriedOnlySegments() {
        OpenCalls oc = new OpenCalls(16);
        one(dumped(oc, false, true, enter(1, 100), enter(2, 110)), 1000, false);
        assertEquals("carried=2 since=110 i1@100 i2@110 | o2@200", seg(one(dumped(oc, false, false, exit(2, 200)),
                1000, false)));
        OpenCalls oc2 = new OpenCalls(16);
        one(dumped(oc2, false, true, enter(1, 100), enter(2, 110)), 1000, false);
        assertEquals("carried=2 since=110 i1@100 i2@110", seg(one(dumped(oc2, false, true), 2000, true)));
        assertFalse(oc2.chained);
        // nothing open and nothing new: no entry
        assertEquals(0, Session.split(Arrays.asList(dumped(new OpenCalls(4), false, true)), 10, 1000, true).size());
    }

    /** A call open longer than 2^39 µs cannot be carried (its 40-bit time would be misread): fresh. */
    @Test
    public void tooOldToCarry() {
        OpenCalls oc = new OpenCalls(16);
        one(dumped(oc, false, true, enter(1, 100)), 1000, false);
        long now = 100 + (1L << 39) + 10;
        assertEquals("continues o1@" + ((now - 5) & Recorder.T_MASK), seg(one(dumped(oc, false, true,
                exit(1, now - 5)), now, false)));
    }

    /** The real recorder: an open call still open at the final dump, with no new records, is closed there. */
    @Test
    public void recorderClosesOpenCallsAtTheFinalDump() throws Exception {
        final long[] t = {1000};
        Clock clock = new Clock() {
            @Override
            public long nowMicros() {
                return t[0];
            }

            @Override
            public void close() {
            }
        };
        Recorder r = new Recorder(clock, new JvmThreadPolicy(true), 64, 64, 4, Log.STDERR);
        r.enter(1);
        t[0] = 1100;
        r.enter(2);
        t[0] = 1200;
        Recorder.Snapshot s1 = r.dump(false);
        assertEquals("continues i1@1000 i2@1100", seg(Session.split(s1.threads, 100, s1.nowMicros, false).get(0)
                .get(0)));
        assertEquals("an idle live thread: left out", 0, r.dump(false).threads.size());
        t[0] = 5000;
        Recorder.Snapshot s3 = r.dump(true);
        assertEquals(1, s3.threads.size());
        List<List<Recorder.ThreadDump>> b = Session.split(s3.threads, 100, s3.nowMicros, true);
        Recorder.ThreadDump last = b.get(0).get(0);
        assertEquals("carried=2 since=1100 i1@1000 i2@1100", seg(last));
        assertEquals(1000, Session.rebase(new Recorder.Snapshot(s3.nowMicros, b.get(0))));
        String json = TestSupport.decode(BatchEncoder.encode(new BatchEncoder.Header(UUID.randomUUID(), 0, 0, "a",
                "b", "c", "d", "e"), b.get(0), new byte[0]));
        assertTrue(json, json.contains("\"truncated\":false,\"carried\":2,\"since_us\":100,\"records\":[\n"
                + "   [1,\"i\",0],\n   [2,\"i\",100]\n  ]}"));
        assertEquals("nothing left after the final dump", 0, r.dump(true).threads.size());
    }

    // ---- encoder ---------------------------------------------------------

    /** The server's golden segments case (tests/cases/batch/0005-segments), byte for byte. */
    @Test
    public void goldenSegmentsBatch() throws Exception {
        BatchEncoder.Header h = new BatchEncoder.Header(UUID.fromString("7d0c1a52-9e44-4f0b-8a61-3c2b1d0e9f87"),
                1700000000000000L, 0, "demo", "1.0", "s1", "JVM", "Linux");
        List<Recorder.ThreadDump> ts = Arrays.asList(
                new Recorder.ThreadDump(1, "main", true, false, new long[] {enter(1, 0), enter(2, 100), enter(3, 510),
                    exit(3, 600), exit(2, 700), enter(4, 800)}, 2, 500, true),
                new Recorder.ThreadDump(9, "worker", false, false, new long[] {enter(5, 20)}, 0, 0, true));
        byte[] ours = BatchEncoder.encode(h, ts, new byte[0]);
        File dir = new File(TestSupport.sourceDir(), "tests/cases/batch/0005-segments");
        assertArrayEquals(Files.readAllBytes(new File(dir, "expected.bin").toPath()), ours);
        assertEquals(new String(Files.readAllBytes(new File(dir, "expected.json").toPath()), StandardCharsets.UTF_8),
                TestSupport.decode(ours));
    }

    /** The thread entry's new fields, by hand: flags 4|8, u32 n_carried and u64 since_us after n_records. */
    @Test
    public void threadEntryBytes() throws Exception {
        BatchEncoder.Header h = new BatchEncoder.Header(new UUID(0, 0), 0, 0, "", "", "", "", "");
        long since = (1L << 40) - 1;
        byte[] b = BatchEncoder.encode(h, Arrays.asList(new Recorder.ThreadDump(0x0102, "t", false, true,
                new long[] {enter(3, 1)}, 1, since, true)), new byte[0]);
        int p = 54; // header_size: 44 + 5 empty strings
        byte[] table = Arrays.copyOfRange(b, p, p + 4 + 8 + 3 + 1 + 4 + 4 + 8);
        assertArrayEquals(new byte[] {1, 0, 0, 0, // n_threads
            2, 1, 0, 0, 0, 0, 0, 0, 1, 0, 't', // id, name
            (byte) (2 | 4 | 8), // truncated, continued, continues
            1, 0, 0, 0, // n_records
            1, 0, 0, 0, // n_carried
            (byte) 0xff, (byte) 0xff, (byte) 0xff, (byte) 0xff, (byte) 0xff, 0, 0, 0}, table); // since_us 2^40 - 1
        assertEquals(86, p + table.length);
        assertArrayEquals("padding to 88, then the record", new byte[] {0, 0, 1, 0, 0, 0, 0, 3, 0, 0},
                Arrays.copyOfRange(b, 86, 96));
        String json = TestSupport.decode(b);
        assertTrue(json, json.contains("\"truncated\":true,\"continues\":true,\"carried\":1,\"since_us\":"
                + since + ","));
        assertArrayEquals("the server's encoder gives our bytes back", b, TestSupport.encode(json));
        // a segment that only continues: flag 8, no extra fields
        byte[] c = BatchEncoder.encode(h, Arrays.asList(new Recorder.ThreadDump(1, "t", false, false,
                new long[0], 0, 0, true)), new byte[0]);
        assertEquals(8, c[p + 4 + 8 + 3]);
        assertArrayEquals(c, TestSupport.encode(TestSupport.decode(c)));
    }

    @Test
    public void invalidSegmentsAreRefused() {
        BatchEncoder.Header h = new BatchEncoder.Header(new UUID(0, 0), 0, 0, "", "", "", "", "");
        Recorder.ThreadDump[] bad = {
            new Recorder.ThreadDump(1, "t", false, false, new long[] {enter(1, 0)}, 2, 0, false),
            new Recorder.ThreadDump(1, "t", false, false, new long[] {exit(1, 0)}, 1, 0, false),
            new Recorder.ThreadDump(1, "t", false, false, new long[] {enter(1, 0)}, 1, 1L << 40, false),
            new Recorder.ThreadDump(1, "t", false, false, new long[] {enter(1, 0)}, 1, -1, false),
        };
        for (Recorder.ThreadDump t : bad) {
            try {
                BatchEncoder.encode(h, Arrays.asList(t), new byte[0]);
                fail("accepted " + seg(t));
            } catch (IllegalArgumentException expected) {
                // refused before writing anything
            }
        }
    }
}
