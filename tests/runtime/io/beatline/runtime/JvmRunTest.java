package io.beatline.runtime;

import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertTrue;

import java.io.BufferedReader;
import java.io.File;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.Test;

/**
 * Real JVM runs of {@code demo.DemoMain} (probes as the instrumenter inserts
 * them) started with {@code -Dbeatline.*}, against the real beatline-server:
 * no source change, shutdown-hook upload, nothing recorded without
 * configuration, spool survives a dead server and a kill -9.
 */
public class JvmRunTest {
    static final String APP = "shop";
    static final String BUILD = "1.0";
    /** Records DemoMain writes per run (see its javadoc): 24 on main, 10 on "bg". */
    static final long RECORDS = 34;

    private static List<String> java(File tmp, String... props) {
        List<String> cmd = new ArrayList<>();
        cmd.add(new File(System.getProperty("java.home"), "bin/java").getPath());
        cmd.add("-cp");
        cmd.add(System.getProperty("java.class.path"));
        cmd.add("-Djava.io.tmpdir=" + tmp.getPath());
        cmd.addAll(Arrays.asList(props));
        cmd.add("demo.DemoMain");
        return cmd;
    }

    private static String[] props(TestSupport.Server srv, String url, File spool, String... more) {
        List<String> l = new ArrayList<>(Arrays.asList("-Dbeatline.server=" + url, "-Dbeatline.app=" + APP,
                "-Dbeatline.build=" + BUILD, "-Dbeatline.key=" + srv.ingestKey, "-Dbeatline.spool=" + spool.getPath()));
        l.addAll(Arrays.asList(more));
        return l.toArray(new String[0]);
    }

    /** Configured by system properties: traced, uploaded by the shutdown hook, exact counts and µs durations. */
    @Test
    public void tracedWithoutSourceChanges() throws Exception {
        File tmp = TestSupport.tempDir("jvm");
        try (TestSupport.Server srv = new TestSupport.Server(new File(tmp, "data"))) {
            srv.createApp(APP);
            srv.start(0);
            srv.putMethodIds(APP, BUILD, demo.DemoMain.METHOD_IDS);
            File spool = new File(tmp, "spool");
            TestSupport.Run r = TestSupport.run(java(tmp, props(srv, srv.url(), spool)), new byte[0]);
            assertEquals(r.err, 0, r.exit);
            assertEquals("caught boom\ndone\n", r.outText());
            assertEquals("nothing on stderr when all goes well", "", r.err);
            assertEquals("the shutdown hook uploaded everything", 0, new Spool(spool, 1, 1, Log.STDERR).list().size());
            srv.waitProcessed(1);
            long[] counts = srv.buildCounts(APP, BUILD);
            assertEquals(1, counts[0]);
            assertEquals(RECORDS, counts[1]);
            StringBuilder sb = new StringBuilder();
            assertEquals(200, srv.http("GET", "/v1/apps/shop/slow-methods?build=1.0&thread=main&sort=count", srv.readKey,
                    null, sb));
            String json = sb.toString();
            Matcher work = Pattern.compile("\"name\":\\s*\"work\"[^}]*\\}[^}]*").matcher(json);
            assertTrue(json, work.find());
            assertEquals(10, TestSupport.num(work.group(), "count"));
            // Thread.sleep(2) ten times: at least 20,000 µs in total (units are µs, not ns or ms)
            long total = TestSupport.num(work.group(), "total_us");
            assertTrue("work total_us " + total, total >= 20000 && total < 20000 * 1000);
            assertTrue(json, json.contains("\"name\":\"fails\"") || json.contains("\"name\": \"fails\""));
            sb.setLength(0);
            srv.http("GET", "/v1/apps/shop/slow-methods?build=1.0&thread=all", srv.readKey, null, sb);
            Matcher bg = Pattern.compile("\"name\":\\s*\"background\"[^}]*\\}[^}]*").matcher(sb);
            assertTrue(sb.toString(), bg.find());
            assertEquals(5, TestSupport.num(bg.group(), "count"));
        }
    }

    /** Without configuration: same output, nothing on stderr, no spool directory anywhere. */
    @Test
    public void unconfiguredRecordsNothing() throws Exception {
        File tmp = TestSupport.tempDir("jvm-off");
        TestSupport.Run r = TestSupport.run(java(tmp), new byte[0]);
        assertEquals(r.err, 0, r.exit);
        assertEquals("caught boom\ndone\n", r.outText());
        assertEquals("", r.err);
        assertEquals("nothing written to the temp dir", 0, TestSupport.files(tmp).size());
    }

    /** A half configuration is reported once on stderr; the program runs unharmed. */
    @Test
    public void badConfigurationIsReportedAndHarmless() throws Exception {
        File tmp = TestSupport.tempDir("jvm-bad");
        TestSupport.Run r = TestSupport.run(java(tmp, "-Dbeatline.server=http://127.0.0.1:9", "-Dbeatline.app=shop"),
                new byte[0]);
        assertEquals(0, r.exit);
        assertEquals("caught boom\ndone\n", r.outText());
        assertEquals("beatline: not started: beatline.key (BEATLINE_KEY), the app's ingest key, is required\n",
                r.err);
        r = TestSupport.run(java(tmp, "-Dbeatline.server=http://x", "-Dbeatline.app=shop", "-Dbeatline.key=k",
                "-Dbeatline.mainBuffer=1000"), new byte[0]);
        assertEquals(0, r.exit);
        assertEquals("beatline: not started: beatline.mainBuffer must be a power of two 4..2^26: 1000\n", r.err);
        // an int setting out of range is refused, not wrapped to 32 bits (2^32 + 16 would be 16)
        r = TestSupport.run(java(tmp, "-Dbeatline.server=http://x", "-Dbeatline.app=shop", "-Dbeatline.key=k",
                "-Dbeatline.mainBuffer=4294967312"), new byte[0]);
        assertEquals(0, r.exit);
        assertEquals("beatline: not started: beatline.mainBuffer is out of range: 4294967312\n", r.err);
        // a server URL without a usable host/port, and a key that cannot go in a header, are reported
        r = TestSupport.run(java(tmp, "-Dbeatline.server=http://127.0.0.1:99999", "-Dbeatline.app=shop",
                "-Dbeatline.key=k"), new byte[0]);
        assertEquals(0, r.exit);
        assertTrue(r.err, r.err.startsWith("beatline: not started: server must be an http:// or https:// URL"));
        r = TestSupport.run(java(tmp, "-Dbeatline.server=http://x", "-Dbeatline.app=shop", "-Dbeatline.key=a\nb"),
                new byte[0]);
        assertEquals(0, r.exit);
        assertEquals("beatline: not started: ingest key must be printable ASCII without spaces\n", r.err);
    }

    /**
     * Run 1: the server is down; the shutdown hook's wait is bounded and the
     * batch stays in the spool. Run 2 is killed (kill -9) right after an
     * explicit flush. Run 3 finds the server up and uploads its own batch and
     * both left over: three runs' records, counted once each.
     */
    @Test
    public void spoolSurvivesADeadServerAndAKill() throws Exception {
        File tmp = TestSupport.tempDir("jvm-spool");
        int port = TestSupport.freePort();
        String url = "http://127.0.0.1:" + port;
        File spool = new File(tmp, "spool");
        try (TestSupport.Server srv = new TestSupport.Server(new File(tmp, "data"))) {
            srv.createApp(APP);
            TestSupport.Run r = TestSupport.run(java(tmp, props(srv, url, spool, "-Dbeatline.shutdownWaitMs=500",
                    "-Dbeatline.backoffBaseMs=100")), new byte[0]);
            assertEquals(r.err, 0, r.exit);
            assertEquals("caught boom\ndone\n", r.outText());
            assertEquals(1, new Spool(spool, 1, 1, Log.STDERR).list().size());

            List<String> cmd = java(tmp, props(srv, url, spool));
            cmd.add("flush-then-hang");
            Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
            BufferedReader out = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8));
            String line;
            while ((line = out.readLine()) != null && !line.equals("flushed")) {
                // caught boom, done
            }
            assertEquals("flushed", line);
            p.destroyForcibly(); // SIGKILL: no shutdown hook
            assertTrue(p.waitFor(60, TimeUnit.SECONDS));
            assertEquals(2, new Spool(spool, 1, 1, Log.STDERR).list().size());

            srv.start(port);
            srv.putMethodIds(APP, BUILD, demo.DemoMain.METHOD_IDS);
            r = TestSupport.run(java(tmp, props(srv, url, spool)), new byte[0]);
            assertEquals(r.err, 0, r.exit);
            assertEquals(0, new Spool(spool, 1, 1, Log.STDERR).list().size());
            srv.waitProcessed(3);
            assertArrayEquals(new long[] {3, 3 * RECORDS}, srv.buildCounts(APP, BUILD));
            assertFalse(new File(spool, ".tmp").exists());
        }
    }
}
