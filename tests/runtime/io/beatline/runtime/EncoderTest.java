package io.beatline.runtime;

import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertTrue;

import java.io.File;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.UUID;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.Test;

/**
 * The batch encoder against the server's reader: {@code beatline-batch decode}
 * (the server's C decoder) must read our bytes as the expected canonical JSON,
 * and {@code beatline-batch encode} of that JSON must give our bytes back,
 * byte for byte.
 */
public class EncoderTest {
    private static Recorder.ThreadDump thread(long id, String name, boolean main, boolean truncated, long... recs) {
        return new Recorder.ThreadDump(id, name, main, truncated, recs);
    }

    private static long rec(boolean exit, int id, long t) {
        return (exit ? Recorder.EXIT : 0) | ((long) id << Recorder.ID_SHIFT) | t;
    }

    /** The golden case of schema/batch-format.md ("Example"), byte for byte. */
    @Test
    public void specExampleByteForByte() throws Exception {
        BatchEncoder.Header h = new BatchEncoder.Header(UUID.fromString("0b7e4c6a-1f2d-4e3b-8a9c-0d1e2f3a4b5c"),
                1700000000000000L, 34, "com.example", "1.0", "s1", "Pixel 7", "14");
        byte[] ours = BatchEncoder.encode(h,
                Arrays.asList(thread(1, "main", true, false, rec(false, 12, 0), rec(true, 12, 150))),
                "{\"type\":\"launch\"}\n".getBytes(StandardCharsets.UTF_8));
        byte[] golden = Files.readAllBytes(
                new File(TestSupport.sourceDir(), "tests/cases/batch/0001-small/expected.bin").toPath());
        assertEquals(142, golden.length);
        assertArrayEquals(golden, ours);
    }

    /** Canonical JSON text (schema/batch-format.md, "JSON form"), written independently of the encoder. */
    private static String canonical(BatchEncoder.Header h, List<Recorder.ThreadDump> ts) {
        StringBuilder s = new StringBuilder();
        s.append("{\n \"batch_id\":\"").append(h.batchId).append("\",\n");
        s.append(" \"app\":").append(q(h.app)).append(",\n");
        s.append(" \"build\":").append(q(h.build)).append(",\n");
        s.append(" \"session_id\":").append(q(h.sessionId)).append(",\n");
        s.append(" \"origin_wall_us\":").append(h.originWallUs).append(",\n");
        s.append(" \"device\":{\"model\":").append(q(h.deviceModel)).append(",\"os\":").append(q(h.osVersion))
                .append(",\"sdk\":").append(h.sdkLevel & 0xFFFFFFFFL).append("},\n");
        if (ts.isEmpty()) {
            s.append(" \"threads\":[],\n");
        } else {
            s.append(" \"threads\":[\n");
            for (int i = 0; i < ts.size(); i++) {
                Recorder.ThreadDump t = ts.get(i);
                s.append("  {\"id\":").append(t.id).append(",\"name\":").append(q(t.name)).append(",\"main\":")
                        .append(t.main).append(",\"truncated\":").append(t.truncated).append(",\"records\":[");
                for (int k = 0; k < t.records.length; k++) {
                    long r = t.records[k];
                    s.append(k == 0 ? "\n" : ",\n").append("   [").append((r >>> 40) & 0x7FFFFF).append(",\"")
                            .append(r < 0 ? "o" : "i").append("\",").append(r & ((1L << 40) - 1)).append("]");
                }
                s.append(t.records.length == 0 ? "]}" : "\n  ]}").append(i + 1 < ts.size() ? ",\n" : "\n");
            }
            s.append(" ],\n");
        }
        s.append(" \"events\":[]\n}\n");
        return s.toString();
    }

    private static String q(String v) {
        StringBuilder s = new StringBuilder("\"");
        for (char c : v.toCharArray()) {
            switch (c) {
                case '"': s.append("\\\""); break;
                case '\\': s.append("\\\\"); break;
                case '\n': s.append("\\n"); break;
                case '\r': s.append("\\r"); break;
                case '\t': s.append("\\t"); break;
                case '\b': s.append("\\b"); break;
                case '\f': s.append("\\f"); break;
                default:
                    if (c < 0x20) {
                        s.append(String.format("\\u%04x", (int) c));
                    } else {
                        s.append(c);
                    }
            }
        }
        return s.append('"').toString();
    }

    private static void bothWays(BatchEncoder.Header h, List<Recorder.ThreadDump> ts) throws Exception {
        byte[] ours = BatchEncoder.encode(h, ts, new byte[0]);
        String expected = canonical(h, ts);
        String decoded = TestSupport.decode(ours);
        assertEquals(expected, decoded);
        assertArrayEquals(TestSupport.encode(expected), ours);
    }

    /** Extremes of every field: ids, unicode and escapes, empty threads, max methodId and time. */
    @Test
    public void fieldByFieldThroughTheServersDecoder() throws Exception {
        BatchEncoder.Header h = new BatchEncoder.Header(UUID.fromString("FFEEDDCC-BBAA-4998-8776-655443322110"),
                -123456789L, -1, "shöp", "7.1 (71)", "sess-\u00e9\u2713\ud834\udd1e", "OpenJDK 64-Bit \"VM\" 17",
                "Linux\t6.1\u0001 amd64");
        List<Recorder.ThreadDump> ts = Arrays.asList(
                thread(1, "main", true, false, rec(false, 0, 0), rec(false, 8388607, 1), rec(true, 8388607, 1),
                        rec(true, 0, (1L << 40) - 1)),
                thread(Long.MIN_VALUE, "w\u00f6rker \u2713 \ud834\udd1e \\ \"q\"\n", false, true, rec(true, 5, 77)),
                thread(-1, "", false, false),
                thread(Long.MAX_VALUE, "x\u0000y", false, false, rec(false, 1, 2), rec(false, 1, 3), rec(false, 1, 4)));
        bothWays(h, ts);
        bothWays(new BatchEncoder.Header(new UUID(0, 0), 0, 0, "", "", "", "", ""),
                new ArrayList<Recorder.ThreadDump>());
    }

    /** Strings over 65,535 bytes are cut at a character boundary, never into invalid UTF-8. */
    @Test
    public void overlongStringsAreCutAtACharacterBoundary() throws Exception {
        StringBuilder b = new StringBuilder("a");
        while (b.length() < 40000) {
            b.append('\u00e9'); // 2 bytes each: 1 + 2n crosses 65,535 in the middle of a character
        }
        byte[] cut = BatchEncoder.utf8(b.toString());
        assertEquals(65535, cut.length);
        StringBuilder emoji = new StringBuilder();
        while (emoji.length() < 40000) {
            emoji.append("\ud834\udd1e"); // 4 bytes each
        }
        byte[] cut4 = BatchEncoder.utf8(emoji.toString());
        assertEquals(65532, cut4.length);
        BatchEncoder.Header h = new BatchEncoder.Header(UUID.randomUUID(), 1, 0, "a", "b", "c", b.toString(),
                emoji.toString());
        String json = TestSupport.decode(BatchEncoder.encode(h, new ArrayList<Recorder.ThreadDump>(), new byte[0]));
        assertTrue(json.contains("\"model\":\"a\u00e9"));
    }

    /** The 40-bit clock wraps every 12.7 days: times are recovered across the wrap and rebased to the oldest. */
    @Test
    public void rebaseAcrossTheFortyBitWrap() {
        long wrap = 1L << 40;
        long now = 3 * wrap + 500; // the clock's µs now; records written shortly before, some before the wrap
        long[] recs = {rec(false, 3, (3 * wrap - 1000) & (wrap - 1)), rec(false, 4, (3 * wrap - 10) & (wrap - 1)),
            rec(true, 4, (3 * wrap + 20) & (wrap - 1)), rec(true, 3, (now + 2) & (wrap - 1))};
        Recorder.Snapshot snap = new Recorder.Snapshot(now, Arrays.asList(thread(1, "main", true, false, recs)));
        long origin = Session.rebase(snap);
        assertEquals(3 * wrap - 1000, origin);
        assertArrayEquals(new long[] {rec(false, 3, 0), rec(false, 4, 990), rec(true, 4, 1020), rec(true, 3, 1502)},
                recs);
    }

    private static Session session(File spool, int maxBatchRecords) throws Exception {
        return new Session(new BeatlineConfig.Builder().server("http://127.0.0.1:9").app("shop").build("7.1")
                .ingestKey("k").spoolDir(spool).maxBatchRecords(maxBatchRecords).mainBufferRecords(1024)
                .threadBufferRecords(64).build());
    }

    private static String decodeSpooled(File f) throws Exception {
        return TestSupport.decode(TestSupport.gunzip(f));
    }

    /**
     * Real probes on two threads, through dump, rebase, encode, gzip and the
     * spool, read back by the server's decoder: header fields, threads, and
     * the records in the order and nesting written.
     */
    @Test
    public void probesToSpooledBatch() throws Exception {
        File spool = TestSupport.tempDir("enc-spool");
        Session s = session(spool, 1 << 20);
        Recorder r = s.recorder;
        Thread.currentThread().setName("main"); // JUnitCore runs tests on the JVM's main thread
        r.enter(10);
        r.enter(11);
        r.exit(11);
        Thread w = new Thread(() -> {
            for (int k = 0; k < 100; k++) { // 200 records into a 64-slot ring: truncated, the last 62 kept
                r.enter(20);
                r.exit(20);
            }
        }, "worker-\u00e9");
        w.start();
        w.join();
        r.exit(10);
        s.dumpToSpool();
        List<File> files = s.spool.list();
        assertEquals(1, files.size());
        String json = decodeSpooled(files.get(0));
        assertTrue(json, json.contains("\"app\":\"shop\",\n \"build\":\"7.1\",\n \"session_id\":\"" + s.sessionId() + "\""));
        assertTrue(json, json.contains("\"model\":\"" + System.getProperty("java.vm.name") + " "
                + System.getProperty("java.version") + "\""));
        assertTrue(json, json.contains("\"sdk\":0}"));
        Matcher origin = Pattern.compile("\"origin_wall_us\":(-?\\d+)").matcher(json);
        assertTrue(origin.find());
        long wall = Long.parseLong(origin.group(1));
        assertTrue("origin within the last hour: " + wall,
                Math.abs(System.currentTimeMillis() * 1000 - wall) < 3600_000_000L);
        Matcher main = Pattern.compile("\\{\"id\":" + Thread.currentThread().getId()
                + ",\"name\":\"main\",\"main\":true,\"truncated\":false,\"continues\":true,\"records\":\\[\n"
                + "   \\[10,\"i\",(\\d+)\\],\n   \\[11,\"i\",(\\d+)\\],\n   \\[11,\"o\",(\\d+)\\],\n"
                + "   \\[10,\"o\",(\\d+)\\]\n  \\]\\}").matcher(json);
        assertTrue(json, main.find());
        long prev = -1;
        for (int g = 1; g <= 4; g++) {
            long t = Long.parseLong(main.group(g));
            assertTrue("times never go back", t >= prev);
            prev = t;
        }
        Matcher worker = Pattern.compile("\\{\"id\":" + w.getId()
                + ",\"name\":\"worker-\u00e9\",\"main\":false,\"truncated\":true,\"records\":\\[\n((?:   \\[20,\"[io]\",\\d+\\],?\n){62})  \\]\\}")
                .matcher(json);
        assertTrue(json, worker.find());
        // the oldest record of the batch is at time 0
        assertTrue(json, json.contains(",0]"));
        // a second dump has nothing new: no batch
        s.dumpToSpool();
        assertEquals(1, s.spool.list().size());
        // the dead worker's ring left the registry after its last dump
        assertEquals(1, r.threads());
    }

    /** Dumps larger than maxBatchRecords are split into batches; every record lands in exactly one. */
    @Test
    public void largeDumpsAreSplit() throws Exception {
        File spool = TestSupport.tempDir("enc-split");
        Session s = session(spool, 100);
        Thread.currentThread().setName("main");
        for (int k = 0; k < 1000; k++) { // 2,000 records into a 1,024-slot ring: truncated, 1,022 kept
            s.recorder.enter(k);
            s.recorder.exit(k);
        }
        s.dumpToSpool();
        List<File> files = s.spool.list();
        assertEquals(11, files.size()); // 1,022 records, 100 per batch
        long total = 0;
        int truncatedEntries = 0;
        List<String> ids = new ArrayList<>();
        long expectId = 489; // records 978..1999 survive: enter/exit pairs of methods 489..999
        boolean expectExit = false;
        for (File f : files) {
            String json = decodeSpooled(f);
            ids.add(TestSupport.field(json, "batch_id"));
            Matcher m = Pattern.compile("\\[(\\d+),\"([io])\",\\d+\\]").matcher(json);
            int n = 0;
            while (m.find()) {
                assertEquals(expectId, Long.parseLong(m.group(1)));
                assertEquals(expectExit ? "o" : "i", m.group(2));
                if (expectExit) {
                    expectId++;
                }
                expectExit = !expectExit;
                n++;
            }
            assertTrue(n <= 100);
            total += n;
            if (json.contains("\"truncated\":true")) {
                truncatedEntries++;
            }
        }
        assertEquals(1022, total);
        assertEquals("truncated only on the first part", 1, truncatedEntries);
        assertEquals("fresh batch id per batch", ids.size(), ids.stream().distinct().count());
        assertFalse(ids.contains(null));
    }
}
