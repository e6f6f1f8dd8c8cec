package io.beatline.runtime;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;

import java.io.ByteArrayOutputStream;
import java.io.File;
import java.io.FileInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.HttpURLConnection;
import java.net.ServerSocket;
import java.net.URL;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.zip.GZIPInputStream;

/**
 * Shared test helpers: where the build is (system property
 * {@code beatline.test.build}: the CMake build dir; {@code beatline.test.source}:
 * the source tree), running {@code beatline-batch}, and a real
 * {@code beatline-server} process on a free loopback port.
 */
final class TestSupport {
    private TestSupport() {
    }

    static File buildDir() {
        String b = System.getProperty("beatline.test.build");
        if (b == null) {
            fail("set -Dbeatline.test.build=<cmake build dir>");
        }
        return new File(b);
    }

    static File sourceDir() {
        String s = System.getProperty("beatline.test.source");
        if (s == null) {
            fail("set -Dbeatline.test.source=<source dir>");
        }
        return new File(s);
    }

    static File bin(String name) {
        return new File(new File(buildDir(), "bin"), name);
    }

    /** A fresh directory under {@code <build dir>/runtime-tests/}. */
    static File tempDir(String prefix) throws IOException {
        File root = new File(buildDir(), "runtime-tests");
        root.mkdirs();
        return Files.createTempDirectory(root.toPath(), prefix).toFile();
    }

    static byte[] readAll(InputStream in) throws IOException {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        byte[] buf = new byte[65536];
        int n;
        while ((n = in.read(buf)) > 0) {
            out.write(buf, 0, n);
        }
        return out.toByteArray();
    }

    static byte[] gunzip(File f) throws IOException {
        try (InputStream in = new GZIPInputStream(new FileInputStream(f))) {
            return readAll(in);
        }
    }

    /** Result of a child process. */
    static final class Run {
        final int exit;
        final byte[] out;
        final String err;

        Run(int exit, byte[] out, String err) {
            this.exit = exit;
            this.out = out;
            this.err = err;
        }

        String outText() {
            return new String(out, StandardCharsets.UTF_8);
        }
    }

    /** Runs a program with stdin, waits at most 120 s. */
    static Run run(List<String> cmd, byte[] stdin) throws Exception {
        ProcessBuilder pb = new ProcessBuilder(cmd);
        File errFile = File.createTempFile("stderr", ".txt");
        pb.redirectError(errFile);
        Process p = pb.start();
        final OutputStream os = p.getOutputStream();
        Thread feeder = new Thread(() -> {
            try {
                os.write(stdin);
                os.close();
            } catch (IOException e) {
                // the program exited early: its exit code says why
            }
        });
        feeder.start();
        byte[] out = readAll(p.getInputStream());
        if (!p.waitFor(120, TimeUnit.SECONDS)) {
            p.destroyForcibly();
            fail("timed out: " + cmd);
        }
        feeder.join();
        String err = new String(Files.readAllBytes(errFile.toPath()), StandardCharsets.UTF_8);
        errFile.delete();
        return new Run(p.exitValue(), out, err);
    }

    /** beatline-batch decode: binary batch -> canonical JSON text. */
    static String decode(byte[] batch) throws Exception {
        Run r = run(Arrays.asList(bin("beatline-batch").getPath(), "decode"), batch);
        assertEquals("beatline-batch decode failed: " + r.err, 0, r.exit);
        return r.outText();
    }

    /** beatline-batch encode: JSON text -> binary batch. */
    static byte[] encode(String json) throws Exception {
        Run r = run(Arrays.asList(bin("beatline-batch").getPath(), "encode"), json.getBytes(StandardCharsets.UTF_8));
        assertEquals("beatline-batch encode failed: " + r.err, 0, r.exit);
        return r.out;
    }

    static int freePort() throws IOException {
        try (ServerSocket s = new ServerSocket(0)) {
            return s.getLocalPort();
        }
    }

    /** A real beatline-server with its own data directory. */
    static final class Server implements AutoCloseable {
        final File data;
        String ingestKey;
        String uploadKey;
        String readKey;
        int port;
        private Process proc;
        private File log;

        Server(File data) {
            this.data = data;
        }

        /**
         * beatline-server app create NAME (before start: the server locks its
         * data dir). The first app's keys are kept in the key fields.
         */
        void createApp(String app) throws Exception {
            Run r = run(Arrays.asList(bin("beatline-server").getPath(), "--data", data.getPath(), "app", "create", app),
                    new byte[0]);
            assertEquals("app create: " + r.err, 0, r.exit);
            if (ingestKey != null) {
                return;
            }
            ingestKey = field(r.outText(), "ingest_key");
            uploadKey = field(r.outText(), "upload_key");
            readKey = field(r.outText(), "read_key");
        }

        /** Starts on the given port (0: any free one) and waits until it listens. */
        void start(int wantPort) throws Exception {
            File portFile = new File(data.getParentFile(), data.getName() + ".port");
            portFile.delete();
            log = new File(data.getParentFile(), data.getName() + ".log");
            ProcessBuilder pb = new ProcessBuilder(bin("beatline-server").getPath(), "--data", data.getPath(),
                    "--listen", "127.0.0.1:" + wantPort, "--port-file", portFile.getPath());
            pb.redirectErrorStream(true);
            pb.redirectOutput(ProcessBuilder.Redirect.appendTo(log));
            proc = pb.start();
            for (int i = 0; i < 600 && (!portFile.exists() || portFile.length() == 0); i++) {
                if (!proc.isAlive()) {
                    fail("beatline-server exited: " + new String(Files.readAllBytes(log.toPath()), StandardCharsets.UTF_8));
                }
                Thread.sleep(50);
            }
            port = Integer.parseInt(new String(Files.readAllBytes(portFile.toPath()), StandardCharsets.UTF_8).trim());
        }

        String url() {
            return "http://127.0.0.1:" + port;
        }

        /** PUT a method-ID file for a build (so its batches are processed, not kept waiting). */
        void putMethodIds(String app, String build, String text) throws Exception {
            int code = http("PUT", "/v1/apps/" + app + "/builds/" + build + "/method-ids", uploadKey,
                    text.getBytes(StandardCharsets.UTF_8), null);
            assertTrue("method-ids upload: HTTP " + code, code == 201 || code == 200);
        }

        /** Sends a request; returns the status, appending the body to {@code out} when given. */
        int http(String method, String path, String key, byte[] body, StringBuilder out) throws IOException {
            HttpURLConnection c = (HttpURLConnection) new URL(url() + path).openConnection();
            c.setRequestMethod(method);
            if (key != null) {
                c.setRequestProperty("Authorization", "Bearer " + key);
            }
            if (body != null) {
                c.setDoOutput(true);
                try (OutputStream os = c.getOutputStream()) {
                    os.write(body);
                }
            }
            int code = c.getResponseCode();
            InputStream in = code >= 400 ? c.getErrorStream() : c.getInputStream();
            String text = in == null ? "" : new String(readAll(in), StandardCharsets.UTF_8);
            if (out != null) {
                out.append(text);
            }
            return code;
        }

        /** A counter from GET /metrics. */
        long metric(String name) throws IOException {
            StringBuilder sb = new StringBuilder();
            http("GET", "/metrics", null, null, sb);
            for (String line : sb.toString().split("\n")) {
                String[] w = line.split(" ");
                if (w.length == 2 && w[0].equals(name)) {
                    return (long) Double.parseDouble(w[1]);
                }
            }
            return -1;
        }

        /** Waits (at most 60 s) until beatline_batches_processed_total reaches n. */
        void waitProcessed(long n) throws Exception {
            long got = -1;
            for (int i = 0; i < 1200; i++) {
                got = metric("beatline_batches_processed_total");
                if (got >= n) {
                    return;
                }
                Thread.sleep(50);
            }
            fail("processed batches: expected " + n + ", got " + got);
        }

        /** {batches, records} of a build from GET /v1/apps/{app}/builds ({-1,-1} when absent). */
        long[] buildCounts(String app, String build) throws IOException {
            StringBuilder sb = new StringBuilder();
            int code = http("GET", "/v1/apps/" + app + "/builds", readKey, null, sb);
            assertEquals("builds: " + sb, 200, code);
            Matcher m = Pattern.compile("\\{[^{}]*\"build\":\\s*\"" + Pattern.quote(build)
                    + "\"(?:[^{}]|\\{[^{}]*\\})*\\}").matcher(sb);
            if (!m.find()) {
                return new long[] {-1, -1};
            }
            String obj = m.group();
            return new long[] {num(obj, "batches"), num(obj, "records")};
        }

        void stop() throws InterruptedException {
            if (proc != null) {
                proc.destroy();
                proc.waitFor(30, TimeUnit.SECONDS);
                proc.destroyForcibly();
                proc = null;
            }
        }

        @Override
        public void close() throws InterruptedException {
            stop();
        }
    }

    static String field(String json, String key) {
        Matcher m = Pattern.compile("\"" + Pattern.quote(key) + "\":\\s*\"([^\"]*)\"").matcher(json);
        assertTrue("no " + key + " in " + json, m.find());
        return m.group(1);
    }

    static long num(String json, String key) {
        Matcher m = Pattern.compile("\"" + Pattern.quote(key) + "\":\\s*(-?\\d+|null)").matcher(json);
        assertTrue("no " + key + " in " + json, m.find());
        return m.group(1).equals("null") ? -1 : Long.parseLong(m.group(1));
    }

    /** Files in a directory, sorted (empty when missing). */
    static List<File> files(File dir) {
        File[] f = dir.listFiles();
        List<File> l = new ArrayList<>();
        if (f != null) {
            l.addAll(Arrays.asList(f));
        }
        l.sort(null);
        return l;
    }
}
