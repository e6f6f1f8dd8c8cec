package io.beatline.runtime;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertNotNull;
import static org.junit.Assert.assertTrue;

import java.io.File;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.Test;

/**
 * The real thing: {@code demo.SpanMain} in its own JVM, whose {@code main}
 * spans many dumps and many batches (flush every 10 ms and explicit flushes,
 * at most 64 records per batch), uploaded to a real beatline-server. The
 * server processes each batch on its own, yet {@code main} must be one call:
 * one root of the main thread's call tree, counted once, with at least its
 * real duration; every inner method counted exactly as many times as called.
 */
public class SpanTest {
    static final String APP = "span";
    static final String BUILD = "1.0";

    private static String get(TestSupport.Server srv, String path) throws Exception {
        StringBuilder sb = new StringBuilder();
        int code = srv.http("GET", path, srv.readKey, null, sb);
        assertEquals(path + ": " + sb, 200, code);
        return sb.toString();
    }

    private static String name(Object node) {
        return (String) Json.obj(Json.obj(node).get("method")).get("name");
    }

    private static long num(Object node, String key) {
        return (Long) Json.obj(node).get(key);
    }

    private static List<Object> children(Object node) {
        return Json.arr(Json.obj(node).get("children"));
    }

    /** The only child of node called name. */
    private static Object child(Object node, String name) {
        Object found = null;
        for (Object c : children(node)) {
            if (name(c).equals(name)) {
                assertTrue("one child " + name + " under " + name(node), found == null);
                found = c;
            }
        }
        assertNotNull("no child " + name + " under " + name(node) + ": " + node, found);
        return found;
    }

    /** name → count from a slow-methods answer. */
    private static Map<String, Long> counts(String json) {
        Map<String, Long> m = new HashMap<>();
        for (Object o : Json.arr(Json.obj(Json.parse(json)).get("methods"))) {
            Long prev = m.put(name(o), num(o, "count"));
            assertEquals("one row per method: " + json, null, prev);
        }
        return m;
    }

    @Test
    public void callsSpanningManyBatchesAreCountedOnce() throws Exception {
        check("normal");
    }

    /**
     * main calls System.exit: it is still open at the shutdown hook's final
     * dump, whose segments do not continue, so the server closes it there
     * (incomplete): still one root, counted once, as long as it ran.
     */
    @Test
    public void mainStillOpenAtTheFinalDump() throws Exception {
        check("exit-inside-main");
    }

    private void check(String mode) throws Exception {
        File tmp = TestSupport.tempDir("span");
        try (TestSupport.Server srv = new TestSupport.Server(new File(tmp, "data"))) {
            srv.createApp(APP);
            srv.start(0);
            srv.putMethodIds(APP, BUILD, demo.SpanMain.METHOD_IDS);
            File spool = new File(tmp, "spool");
            List<String> cmd = new ArrayList<>(Arrays.asList(new File(System.getProperty("java.home"), "bin/java")
                    .getPath(), "-cp", System.getProperty("java.class.path"), "demo.SpanMain", srv.url(), APP, BUILD,
                    srv.ingestKey, spool.getPath(), mode));
            TestSupport.Run r = TestSupport.run(cmd, new byte[0]);
            assertEquals(r.err, 0, r.exit);
            assertEquals("nothing on stderr when all goes well", "", r.err);
            Matcher m = Pattern.compile("main_us (\\d+)\n").matcher(r.outText());
            assertTrue(r.outText(), m.find());
            long mainUs = Long.parseLong(m.group(1));
            assertEquals("the shutdown hook uploaded everything", 0, new Spool(spool, 1, 1, Log.STDERR).list().size());

            long batches = srv.metric("beatline_batches_accepted_total");
            assertTrue("main spans at least 10 batches: " + batches, batches >= 10);
            long real = 2 + demo.SpanMain.WORK * (2 + 2 * demo.SpanMain.LEAVES + 2 * (demo.SpanMain.DEPTH + 1))
                    + 2 + 2 * demo.SpanMain.TICKS;
            srv.waitProcessed(batches);
            assertEquals(0, srv.metric("beatline_batches_failed_total"));
            assertEquals("no damaged sequence in any segment", 0, srv.metric("beatline_records_malformed_total"));

            // the main thread's call tree: one root, main, counted once, as long as it really ran
            Object tree = Json.parse(get(srv, "/v1/apps/" + APP + "/call-tree?build=" + BUILD
                    + "&thread=main&limit=10000"));
            List<Object> roots = Json.arr(Json.obj(tree).get("roots"));
            assertEquals("one root: " + tree, 1, roots.size());
            Object main = roots.get(0);
            assertEquals("main", name(main));
            assertEquals(1, num(main, "count"));
            assertTrue("main total_us " + num(main, "total_us") + " >= its duration " + mainUs,
                    num(main, "total_us") >= mainUs);
            assertEquals("main calls only work: " + main, 1, children(main).size());
            Object work = child(main, "work");
            assertEquals(demo.SpanMain.WORK, num(work, "count"));
            assertEquals(demo.SpanMain.WORK * demo.SpanMain.LEAVES, num(child(work, "leaf"), "count"));
            Object down = child(work, "down");
            for (int d = 0; d <= demo.SpanMain.DEPTH; d++) {
                assertEquals("down at depth " + d, demo.SpanMain.WORK, num(down, "count"));
                assertEquals(d < demo.SpanMain.DEPTH ? 1 : 0, children(down).size());
                if (d < demo.SpanMain.DEPTH) {
                    down = child(down, "down");
                }
            }

            Map<String, Long> mainCounts = counts(get(srv, "/v1/apps/" + APP + "/slow-methods?build=" + BUILD
                    + "&thread=main&sort=count&limit=100"));
            Map<String, Long> want = new HashMap<>();
            want.put("main", 1L);
            want.put("work", (long) demo.SpanMain.WORK);
            want.put("leaf", (long) demo.SpanMain.WORK * demo.SpanMain.LEAVES);
            want.put("down", (long) demo.SpanMain.WORK * (demo.SpanMain.DEPTH + 1));
            assertEquals(want, mainCounts);

            String slowAll = get(srv, "/v1/apps/" + APP + "/slow-methods?build=" + BUILD + "&thread=all&limit=100");
            want.put("background", 1L);
            want.put("tick", (long) demo.SpanMain.TICKS);
            assertEquals("thread bg ended before main: its last segment closed its calls", want, counts(slowAll));
            for (Object o : Json.arr(Json.obj(Json.parse(slowAll)).get("methods"))) {
                if (name(o).equals("main")) {
                    assertTrue("slow-methods main total_us >= " + mainUs, num(o, "total_us") >= mainUs);
                }
            }

            Object all = Json.parse(get(srv, "/v1/apps/" + APP + "/call-tree?build=" + BUILD + "&thread=all"));
            List<String> rootNames = new ArrayList<>();
            for (Object root : Json.arr(Json.obj(all).get("roots"))) {
                rootNames.add(name(root) + "×" + num(root, "count"));
            }
            rootNames.sort(null);
            assertEquals(Arrays.asList("background×1", "main×1"), rootNames);
            assertTrue("records: written + carried enters", srv.metric("beatline_records_accepted_total") > real);
        }
    }
}
