package io.beatline.runtime;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertNotNull;
import static org.junit.Assert.assertNull;
import static org.junit.Assert.assertTrue;

import java.io.File;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.BeforeClass;
import org.junit.Test;

/**
 * Network requests end to end on a real JVM (issue 16): the test program
 * {@code netapp.NetMain} (tests/runtime/netapp) is instrumented by the real
 * beatline-instrument, run with {@code -Xverify:all} against {@link NetWeb}
 * servers on 127.0.0.1 (plain HTTP, and HTTPS with a certificate made here
 * with keytool), with OkHttp 3.13 (Debian), OkHttp 4.12 (Maven Central,
 * scripts/install-deps) and without OkHttp; the runtime's spool holds the
 * {@code network} events, compared with what the servers saw.
 */
public class NetworkTest {
    static File tmp;
    static File instrumented;
    static File plainJar;
    static File trust;
    static File keys;
    static final String PASS = "beatline-test";
    static final Map<String, Integer> IDS = new HashMap<String, Integer>();
    /** The run checked was a gated session (see {@link #triggeredModeUploadsNetworkEvents}). */
    static boolean gated;

    static String java() {
        return new File(System.getProperty("java.home"), "bin/java").getPath();
    }

    static void ok(List<String> cmd) throws Exception {
        TestSupport.Run r = TestSupport.run(cmd, new byte[0]);
        assertEquals(cmd + ": " + r.err + r.outText(), 0, r.exit);
    }

    @BeforeClass
    public static void setUp() throws Exception {
        tmp = TestSupport.tempDir("net");
        plainJar = new File(new File(TestSupport.buildDir(), "lib"), "beatline-netapp.jar");
        instrumented = new File(tmp, "netapp-instrumented.jar");
        File ids = new File(tmp, "method-ids.txt");
        ok(Arrays.asList(TestSupport.bin("beatline-instrument").getPath(), "-q", plainJar.getPath(), "-o",
                instrumented.getPath(), "--method-ids", ids.getPath()));
        for (String l : Files.readAllLines(ids.toPath(), StandardCharsets.UTF_8)) {
            if (l.startsWith("#")) {
                continue;
            }
            String[] f = l.split(",", 3);
            String[] n = f[2].split(" ");
            IDS.put(n[0] + "." + n[1], Integer.parseInt(f[0]));
        }
        // a key pair for 127.0.0.1 (server) and its certificate alone (the clients' trust store)
        String keytool = new File(System.getProperty("java.home"), "bin/keytool").getPath();
        keys = new File(tmp, "server.p12");
        trust = new File(tmp, "trust.p12");
        File crt = new File(tmp, "server.crt");
        ok(Arrays.asList(keytool, "-genkeypair", "-alias", "server", "-keyalg", "RSA", "-keysize", "2048",
                "-dname", "CN=127.0.0.1", "-ext", "SAN=ip:127.0.0.1", "-validity", "2", "-storetype", "PKCS12",
                "-keystore", keys.getPath(), "-storepass", PASS, "-keypass", PASS));
        ok(Arrays.asList(keytool, "-exportcert", "-alias", "server", "-keystore", keys.getPath(), "-storepass", PASS,
                "-file", crt.getPath()));
        ok(Arrays.asList(keytool, "-importcert", "-noprompt", "-alias", "server", "-file", crt.getPath(),
                "-storetype", "PKCS12", "-keystore", trust.getPath(), "-storepass", PASS));
    }

    static String okhttp3() {
        return "/usr/share/java/okhttp.jar:/usr/share/java/okio.jar";
    }

    static String okhttp4() {
        String d = System.getenv("BEATLINE_KOTLIN_DEPS");
        File dir = new File(d != null ? d : System.getProperty("user.home") + "/.cache/beatline/kotlin");
        StringBuilder sb = new StringBuilder();
        for (String j : new String[] {"okhttp-4.12.0.jar", "okio-jvm-3.6.0.jar", "kotlin-stdlib-1.9.22.jar"}) {
            File f = new File(dir, j);
            assertTrue(f + " missing: run scripts/install-deps", f.isFile());
            sb.append(sb.length() > 0 ? ":" : "").append(f.getPath());
        }
        return sb.toString();
    }

    static String runtimeJar() {
        return new File(new File(TestSupport.buildDir(), "lib"), "beatline-runtime.jar").getPath();
    }

    /** One run of NetMain and what it left. */
    static final class Outcome {
        TestSupport.Run run;
        NetWeb web;
        NetWeb tls;
        int refused;
        List<String> events = new ArrayList<String>();
    }

    /**
     * @param app the program's jar (instrumented or not)
     * @param okhttp the OkHttp class path, or null (mode url: no OkHttp at all)
     * @param configured start the runtime (uploads to a dead port: the batches stay in the spool)
     */
    static Outcome run(File app, String okhttp, boolean configured, String... props) throws Exception {
        Outcome o = new Outcome();
        File spool = Files.createTempDirectory(tmp.toPath(), "spool").toFile();
        o.refused = TestSupport.freePort();
        int dead = TestSupport.freePort();
        try (NetWeb web = new NetWeb(null, null); NetWeb tls = new NetWeb(keys, PASS)) {
            o.web = web;
            o.tls = tls;
            List<String> cmd = new ArrayList<String>();
            cmd.add(java());
            cmd.add("-Xverify:all");
            cmd.add("-cp");
            cmd.add(app.getPath() + ":" + runtimeJar() + (okhttp != null ? ":" + okhttp : ""));
            cmd.add("-Djavax.net.ssl.trustStore=" + trust.getPath());
            cmd.add("-Djavax.net.ssl.trustStorePassword=" + PASS);
            cmd.add("-Djavax.net.ssl.trustStoreType=PKCS12");
            if (configured) {
                cmd.addAll(Arrays.asList("-Dbeatline.server=http://127.0.0.1:" + dead, "-Dbeatline.app=netapp",
                        "-Dbeatline.build=1.0", "-Dbeatline.key=k", "-Dbeatline.spool=" + spool.getPath(),
                        "-Dbeatline.shutdownWaitMs=300", "-Dbeatline.backoffBaseMs=60000"));
            }
            cmd.addAll(Arrays.asList(props));
            cmd.addAll(Arrays.asList("netapp.NetMain", "http://127.0.0.1:" + web.port(),
                    "https://127.0.0.1:" + tls.port(), Integer.toString(o.refused), okhttp != null ? "all" : "url"));
            o.run = TestSupport.run(cmd, new byte[0]);
        }
        for (BatchReader b : BatchReader.spool(spool)) {
            for (String e : b.events) {
                if (e.contains("\"type\":\"network\"")) {
                    o.events.add(e);
                }
            }
        }
        return o;
    }

    /** The one event with this path. */
    static String event(Outcome o, String path) {
        String found = null;
        for (String e : o.events) {
            if (e.contains("\"path\":\"" + path + "\"")) {
                assertNull("two events for " + path + ": " + o.events, found);
                found = e;
            }
        }
        assertNotNull("no event for " + path + ": " + o.events, found);
        return found;
    }

    static long sum(List<NetWeb.Exchange> l, boolean in) {
        long n = 0;
        for (NetWeb.Exchange e : l) {
            n += in ? e.in : e.out;
        }
        return n;
    }

    /** Event e agrees with the exchanges the server saw (exact bytes). */
    static void bytesExact(String e, List<NetWeb.Exchange> ex) {
        assertTrue(e + ": the server saw nothing", !ex.isEmpty());
        assertEquals(e, sum(ex, true), BatchReader.num(e, "bytes_out"));
        assertEquals(e, sum(ex, false), BatchReader.num(e, "bytes_in"));
    }

    static void common(String e, String method, String scheme, int port, int status, String caller, String thread) {
        assertEquals(e, method, BatchReader.text(e, "method"));
        assertEquals(e, scheme, BatchReader.text(e, "scheme"));
        assertEquals(e, "127.0.0.1", BatchReader.text(e, "host"));
        assertEquals(e, port, BatchReader.num(e, "port"));
        assertEquals(e, status, BatchReader.num(e, "status"));
        assertEquals(e, thread, BatchReader.text(e, "thread_name"));
        // a gated (triggered, unsampled) session records no calls outside its windows: no caller
        assertEquals(e, gated ? -1L : (long) IDS.get(caller), BatchReader.num(e, "caller"));
        long total = BatchReader.num(e, "total_us");
        assertEquals(e, BatchReader.num(e, "end_us") - BatchReader.num(e, "begin_us"), total);
        for (String p : new String[] {"dns_us", "connect_us", "tls_us", "request_us", "ttfb_us", "body_us"}) {
            assertTrue(e, BatchReader.num(e, p) <= total);
        }
    }

    /**
     * OkHttp's events. The caller is the innermost open call of the calling
     * thread: {@code get} for the scenarios that call it, the scenario
     * itself for those that call OkHttp directly.
     */
    static void checkOkHttp(Outcome o) {
        int p = o.web.port();
        String e = event(o, "/v2/users/123");
        common(e, "GET", "http", p, 200, "netapp.OkScenarios.builderGet", "main");
        assertTrue(e, e.contains("\"query_keys\":[\"x\",\"y\"]"));
        assertTrue(e, e.contains("\"reused\":false") && BatchReader.num(e, "connect_us") >= 0);
        assertTrue(e, BatchReader.num(e, "ttfb_us") >= 0 && BatchReader.num(e, "request_us") >= 0
                && BatchReader.num(e, "body_us") >= 0);
        assertEquals(e, "http/1.1", BatchReader.text(e, "protocol"));
        bytesExact(e, o.web.to("/v2/users/123"));

        e = event(o, "/v2/users/456");
        common(e, "GET", "http", p, 200, "netapp.OkScenarios.get", "main");
        assertTrue(e, e.contains("\"reused\":true") && BatchReader.num(e, "connect_us") < 0);
        assertTrue(e, !e.contains("query_keys"));
        bytesExact(e, o.web.to("/v2/users/456"));

        e = event(o, "/echo");
        common(e, "POST", "http", p, 200, "netapp.OkScenarios.plainPost", "main");
        bytesExact(e, o.web.to("/echo"));

        e = event(o, "/redirect");
        common(e, "GET", "http", p, 200, "netapp.OkScenarios.get", "main");
        List<NetWeb.Exchange> both = new ArrayList<NetWeb.Exchange>(o.web.to("/redirect"));
        both.addAll(o.web.to("/landing"));
        assertEquals(2, both.size());
        bytesExact(e, both);

        e = event(o, "/missing");
        common(e, "GET", "http", p, 404, "netapp.OkScenarios.get", "main");
        bytesExact(e, o.web.to("/missing"));
        e = event(o, "/fail");
        common(e, "GET", "http", p, 500, "netapp.OkScenarios.get", "main");
        bytesExact(e, o.web.to("/fail"));

        e = event(o, "/nothing");
        common(e, "GET", "http", o.refused, -1, "netapp.OkScenarios.get", "main");
        assertEquals(e, "java.net.ConnectException", BatchReader.text(e, "error"));
        assertEquals(e, 0, BatchReader.num(e, "bytes_in"));

        e = event(o, "/slow");
        common(e, "GET", "http", p, -1, "netapp.OkScenarios.get", "main");
        assertEquals(e, "java.net.SocketTimeoutException", BatchReader.text(e, "error"));

        e = event(o, "/async");
        common(e, "GET", "http", p, 200, "netapp.OkScenarios.enqueueIt", "enqueuer");
        bytesExact(e, o.web.to("/async"));

        e = event(o, "/secure");
        common(e, "GET", "https", o.tls.port(), 200, "netapp.OkScenarios.get", "main");
        assertTrue(e, BatchReader.num(e, "tls_us") >= 0 && BatchReader.num(e, "connect_us") >= 0);
        bytesExact(e, o.tls.to("/secure"));
    }

    static void checkUrl(Outcome o) {
        int p = o.web.port();
        String e = event(o, "/url/get");
        common(e, "GET", "http", p, 200, "netapp.NetMain.urlGet", "main");
        assertTrue(e, e.contains("\"query_keys\":[\"page\"]"));
        assertTrue(e, BatchReader.num(e, "connect_us") >= 0 && BatchReader.num(e, "dns_us") < 0
                && BatchReader.num(e, "tls_us") < 0 && BatchReader.num(e, "ttfb_us") >= 0);
        urlBytes(e, o.web.to("/url/get"));

        e = event(o, "/url/post");
        common(e, "POST", "http", p, 200, "netapp.NetMain.urlPost", "main");
        assertTrue(e, BatchReader.num(e, "request_us") >= 0);
        urlBytes(e, o.web.to("/url/post"));

        e = event(o, "/url/missing");
        common(e, "GET", "http", p, 404, "netapp.NetMain.urlNotFound", "main");
        urlBytes(e, o.web.to("/url/missing"));

        e = event(o, "/url/secure");
        common(e, "GET", "https", o.tls.port(), 200, "netapp.NetMain.urlHttps", "main");
        urlBytes(e, o.tls.to("/url/secure"));
        for (String x : o.events) {
            assertTrue("the runtime's own uploads are not captured: " + x, !x.contains("\"path\":\"/v1/"));
        }
    }

    /**
     * HttpURLConnection: response bytes exact; request bytes lack the
     * headers the JDK adds itself (User-Agent, Accept, Connection: at most
     * 200 bytes here), never more than the server read.
     */
    static void urlBytes(String e, List<NetWeb.Exchange> ex) {
        assertEquals(e, 1, ex.size());
        assertEquals(e, ex.get(0).out, BatchReader.num(e, "bytes_in"));
        long out = BatchReader.num(e, "bytes_out");
        assertTrue(e + " server read " + ex.get(0).in, out <= ex.get(0).in && out > ex.get(0).in - 200);
    }

    static void sameOutput(String okhttp) throws Exception {
        Outcome plain = run(plainJar, okhttp, false);
        assertEquals(plain.run.err, 0, plain.run.exit);
        Outcome off = run(instrumented, okhttp, false);
        assertEquals("instrumented, runtime off: same output", plain.run.outText(), off.run.outText());
        Outcome on = run(instrumented, okhttp, true, "-Dbeatline.networkKeepQuery=true");
        assertEquals(on.run.err, 0, on.run.exit);
        assertEquals("instrumented, runtime on: same output (the app's listener saw every callback)",
                plain.run.outText(), on.run.outText());
        assertTrue(on.run.outText(), on.run.outText().endsWith("done\n"));
        if (okhttp != null) {
            assertTrue(on.run.outText(), on.run.outText().contains("listener callStart,"));
            checkOkHttp(on);
        }
        checkUrl(on);
        assertEquals(on.events.toString(), okhttp != null ? 14 : 4, on.events.size());
    }

    /** OkHttp 3.13 (Debian) and HttpURLConnection. */
    @Test
    public void okhttp3AndUrlConnection() throws Exception {
        sameOutput(okhttp3());
    }

    /** OkHttp 4.12 (Maven Central), the same instrumented program (compiled against 3.13). */
    @Test
    public void okhttp4AndUrlConnection() throws Exception {
        sameOutput(okhttp4());
    }

    /**
     * Triggered upload mode, not sampled (a phone's default): the rings are
     * never dumped, the network events are uploaded all the same.
     */
    @Test
    public void triggeredModeUploadsNetworkEvents() throws Exception {
        Outcome on = run(instrumented, okhttp3(), true, "-Dbeatline.networkKeepQuery=true",
                "-Dbeatline.uploadMode=triggered", "-Dbeatline.sampleRate=0");
        assertEquals(on.run.err, 0, on.run.exit);
        gated = true;
        try {
            checkOkHttp(on);
            checkUrl(on);
        } finally {
            gated = false;
        }
        assertEquals(on.events.toString(), 14, on.events.size());
    }

    /** No OkHttp on the class path at all: the instrumented program runs, its URL requests are recorded. */
    @Test
    public void withoutOkHttp() throws Exception {
        sameOutput(null);
    }
}
