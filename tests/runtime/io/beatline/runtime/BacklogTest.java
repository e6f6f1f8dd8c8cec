package io.beatline.runtime;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertTrue;

import java.io.File;
import java.io.IOException;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.Semaphore;
import org.junit.Test;

/**
 * A thread that writes records faster than the dumper can compress them
 * (runtime/README.md, "Dumps": copying is decoupled from compressing). The
 * writer is gated by a slow spool: each spooled batch lets it write
 * {@code PER_BATCH} records, more than a batch holds, so its ring would wrap
 * if the rings were copied only once per dump. Deterministic: the writer
 * only runs while the flush thread is inside a spool write.
 */
public class BacklogTest {
    static final int RING = 512;
    static final int BATCH = 64;
    static final int PER_BATCH = 96; // 1.5 batches written per batch spooled
    static final int ROUNDS = 60;

    /** The writer's records, in order: enter(1), then pairs enter(k)/exit(k), finally exit(1). */
    static List<String> expected(int pairs) {
        List<String> out = new ArrayList<>();
        out.add("1i");
        for (int k = 0; k < pairs; k++) {
            out.add((2 + k % 1000) + "i");
            out.add((2 + k % 1000) + "o");
        }
        out.add("1o");
        return out;
    }

    /** A spool that keeps batches in memory and lets the writer run one round per batch written. */
    static final class GateSpool extends Spool {
        final List<byte[]> batches = Collections.synchronizedList(new ArrayList<byte[]>());
        final Semaphore go = new Semaphore(0);
        final Semaphore done = new Semaphore(0);
        int rounds;

        GateSpool(File dir, int rounds) {
            super(dir, 1 << 20, 1L << 40, Log.STDERR);
            this.rounds = rounds;
        }

        @Override
        File write(UUID batchId, byte[] batch) throws IOException {
            batches.add(batch);
            if (rounds > 0) { // "compressing" this batch took as long as the writer needs for PER_BATCH records
                rounds--;
                go.release();
                done.acquireUninterruptibly();
            }
            return new File(dir(), batchId + SUFFIX);
        }

        @Override
        List<File> list() {
            return new ArrayList<>(); // nothing to upload
        }
    }

    /** Writes {@code first} records, then PER_BATCH records each time the spool lets it, then exit(1). */
    static final class Writer extends Thread {
        final Recorder r;
        final GateSpool spool;
        final int first;
        final int rounds;
        int pairs;

        Writer(Recorder r, GateSpool spool, int first, int rounds) {
            super("writer");
            this.r = r;
            this.spool = spool;
            this.first = first;
            this.rounds = rounds;
        }

        void pairs(int records) {
            for (int n = 0; n < records; n += 2, pairs++) {
                r.enter(2 + pairs % 1000);
                r.exit(2 + pairs % 1000);
            }
        }

        @Override
        public void run() {
            r.enter(1);
            pairs(first - 1);
            for (int k = 0; k < rounds; k++) {
                spool.go.acquireUninterruptibly();
                pairs(PER_BATCH);
                spool.done.release();
            }
            r.exit(1);
        }
    }

    static Session session(GateSpool spool, long maxPending) throws Exception {
        BeatlineConfig cfg = new BeatlineConfig.Builder().server("http://127.0.0.1:9").app("t").ingestKey("k")
                .threadBufferRecords(RING).mainBufferRecords(RING).maxBatchRecords(BATCH)
                .maxPendingRecords(maxPending).flushIntervalMillis(3_600_000).flushFill(0.5)
                .spoolDir(spool.dir()).lifecycle(new Lifecycle() {
                    @Override
                    public void install(Hooks hooks) {
                        // the test ends the session itself
                    }
                }).build();
        return new Session(cfg, spool);
    }

    /** One decoded segment of the writer's thread. */
    static final class Seg {
        boolean truncated;
        boolean continues;
        int carried;
        List<String> records = new ArrayList<>();
    }

    static List<Seg> segments(GateSpool spool, long threadId) throws Exception {
        List<Seg> out = new ArrayList<>();
        for (byte[] b : spool.batches) {
            Map<String, Object> batch = Json.obj(Json.parse(TestSupport.decode(b)));
            int seen = 0;
            for (Object o : Json.arr(batch.get("threads"))) {
                Map<String, Object> t = Json.obj(o);
                if (((Number) t.get("id")).longValue() != threadId) {
                    continue;
                }
                seen++;
                Seg s = new Seg();
                s.truncated = Boolean.TRUE.equals(t.get("truncated"));
                s.continues = Boolean.TRUE.equals(t.get("continues"));
                s.carried = t.containsKey("carried") ? ((Number) t.get("carried")).intValue() : 0;
                for (Object r : Json.arr(t.get("records"))) {
                    List<Object> rec = Json.arr(r);
                    s.records.add(((Number) rec.get(0)).intValue() + (String) rec.get(1));
                }
                out.add(s);
            }
            assertTrue("at most one segment of a thread per batch", seen <= 1);
        }
        return out;
    }

    /**
     * The ring (512) would wrap under one copy per dump: 60 rounds of 96
     * records arrive while batches of 64 are spooled. Copying between batches
     * keeps it from wrapping: no segment is truncated, and the segments'
     * records minus their carried enters are exactly what the thread wrote;
     * the open outer call is carried into every continued segment.
     */
    @Test
    public void aWriterFasterThanTheEncoderLosesNothing() throws Exception {
        GateSpool spool = new GateSpool(TestSupport.tempDir("backlog"), ROUNDS);
        Session s = session(spool, 1 << 20);
        Writer w = new Writer(s.recorder, spool, RING * 3 / 4, ROUNDS); // over flushFill: the flush thread dumps
        s.begin();
        w.start();
        w.join(120_000);
        assertFalse("the writer finished", w.isAlive());
        s.shutdown(0);
        assertEquals(0, spool.rounds);
        List<Seg> segs = segments(spool, w.getId());
        List<String> got = new ArrayList<>();
        for (int i = 0; i < segs.size(); i++) {
            Seg g = segs.get(i);
            assertFalse("segment " + i + " truncated", g.truncated);
            if (i > 0 && got.size() < expected(w.pairs).size() - 1) {
                assertTrue("segment " + i + " carries the open outer call", g.carried >= 1);
                assertEquals("1i", g.records.get(0));
            }
            got.addAll(g.records.subList(g.carried, g.records.size()));
        }
        assertTrue("the work spanned many batches: " + segs.size(), segs.size() > ROUNDS);
        assertEquals(expected(w.pairs), got);
        // (whether the last segment says "continues" is not checked: it does
        // when the flush thread's last dump ran while the thread still lived;
        // with nothing open then, Backlog makes no closing entry, and the
        // server has nothing open to close: the records above are complete)
        long[] c = s.counters();
        assertEquals("truncated thread entries", 0, c[2]);
        assertEquals("copies cut short by maxPendingRecords", 0, c[5]);
        assertTrue("records were held while batches were spooled: " + c[4], c[4] > BATCH);
    }

    /**
     * The same writer with maxPendingRecords 128: the dumper cannot hold
     * what the writer outruns it by, so it stops copying, the ring wraps and
     * the loss is reported: a truncated segment (counted), fresh (no carried
     * enters), every segment a contiguous run of the writer's records in
     * order, and no more than 128 records held.
     */
    @Test
    public void pastTheMemoryBoundTheRingWrapsAndSaysSo() throws Exception {
        GateSpool spool = new GateSpool(TestSupport.tempDir("backlog-bound"), ROUNDS);
        Session s = session(spool, 128);
        Writer w = new Writer(s.recorder, spool, RING * 3 / 4, ROUNDS);
        s.begin();
        w.start();
        w.join(120_000);
        assertFalse("the writer finished", w.isAlive());
        s.shutdown(0);
        List<Seg> segs = segments(spool, w.getId());
        List<String> all = expected(w.pairs);
        String whole = "," + String.join(",", all) + ",";
        int truncated = 0;
        for (int i = 0; i < segs.size(); i++) {
            Seg g = segs.get(i);
            List<String> own = g.records.subList(g.carried, g.records.size());
            assertTrue("segment " + i + " is a run of the writer's records: " + own,
                    whole.contains("," + String.join(",", own) + ","));
            if (g.truncated) {
                truncated++;
                assertEquals("a truncated segment carries nothing", 0, g.carried);
            }
        }
        assertTrue("the ring wrapped", truncated > 0);
        long[] c = s.counters();
        assertEquals("truncated entries counted", truncated, c[2]);
        assertTrue("copies limited by maxPendingRecords counted", c[5] > 0);
        assertTrue("at most 128 records held: " + c[4], c[4] <= 128);
    }
}
