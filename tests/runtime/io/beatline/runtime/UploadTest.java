package io.beatline.runtime;

import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertTrue;

import java.io.BufferedReader;
import java.io.ByteArrayInputStream;
import java.io.File;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.zip.GZIPInputStream;
import org.junit.Test;

/** Spool and uploader against the real beatline-server (and a tiny fake one for 429/503). */
public class UploadTest {
    static final String APP = "shop";
    static final String BUILD = "1.0";

    /** A batch of this app/build with {@code pairs} enter/exit pairs of method 2 on the main thread. */
    static byte[] batch(UUID id, String app, int pairs) {
        long[] recs = new long[pairs * 2];
        for (int k = 0; k < pairs; k++) {
            recs[2 * k] = (2L << Recorder.ID_SHIFT) | (10 * k);
            recs[2 * k + 1] = Recorder.EXIT | (2L << Recorder.ID_SHIFT) | (10 * k + 5);
        }
        return BatchEncoder.encode(new BatchEncoder.Header(id, System.currentTimeMillis() * 1000, 0, app, BUILD, "s",
                "test", "test"), Arrays.asList(new Recorder.ThreadDump(1, "main", true, false, recs)), new byte[0]);
    }

    static Uploader uploader(String url, String key, Spool spool) throws Exception {
        return new Uploader(url, APP, key, spool, 50, 400, 5000, Log.STDERR);
    }

    static TestSupport.Server server(String name) throws Exception {
        TestSupport.Server s = new TestSupport.Server(new File(TestSupport.tempDir(name), "data"));
        s.createApp(APP);
        s.createApp("other");
        return s;
    }

    /** The uploader runs first against a port nobody listens on; the server comes later. */
    @Test
    public void retriesUntilTheServerIsUp() throws Exception {
        int port = TestSupport.freePort();
        try (TestSupport.Server srv = server("down-up")) {
            Spool spool = new Spool(TestSupport.tempDir("spool"), 10, 1 << 20, Log.STDERR);
            spool.open();
            spool.write(UUID.randomUUID(), batch(UUID.randomUUID(), APP, 7));
            Uploader up = uploader("http://127.0.0.1:" + port, srv.ingestKey, spool);
            long prevCeiling = 50;
            for (int k = 0; k < 3; k++) { // connection refused: exponential backoff with jitter, file kept
                Uploader.Pass p = up.pass(Long.MAX_VALUE);
                assertEquals(-1, p.lastStatus);
                assertEquals(0, p.sent);
                assertTrue("retry " + k + " in " + p.retryInMillis, p.retryInMillis >= prevCeiling / 2
                        && p.retryInMillis <= prevCeiling);
                prevCeiling *= 2;
                assertEquals(1, spool.list().size());
            }
            assertEquals(3, up.failures);
            srv.start(port);
            srv.putMethodIds(APP, BUILD, demo.DemoMain.METHOD_IDS);
            Uploader.Pass p = up.pass(Long.MAX_VALUE);
            assertEquals(202, p.lastStatus);
            assertEquals(1, p.sent);
            assertEquals(0, p.retryInMillis);
            assertEquals(0, spool.list().size());
            srv.waitProcessed(1);
            assertArrayEquals(new long[] {1, 14}, srv.buildCounts(APP, BUILD));
        }
    }

    /** The same batch id sent twice (two spool files): 202 then 200 duplicate, counted once. */
    @Test
    public void duplicateBatchIdIsCountedOnce() throws Exception {
        try (TestSupport.Server srv = server("dup")) {
            srv.start(0);
            srv.putMethodIds(APP, BUILD, demo.DemoMain.METHOD_IDS);
            Spool spool = new Spool(TestSupport.tempDir("spool"), 10, 1 << 20, Log.STDERR);
            UUID id = UUID.randomUUID();
            byte[] b = batch(id, APP, 3);
            spool.write(id, b);
            spool.write(id, b);
            spool.write(UUID.randomUUID(), batch(UUID.randomUUID(), APP, 1));
            Uploader up = uploader(srv.url(), srv.ingestKey, spool);
            Uploader.Pass p = up.pass(Long.MAX_VALUE);
            assertEquals(3, p.sent);
            assertEquals(0, spool.list().size());
            srv.waitProcessed(2);
            assertEquals(1, srv.metric("beatline_batches_duplicate_total"));
            assertArrayEquals(new long[] {2, 8}, srv.buildCounts(APP, BUILD));
        }
    }

    /** 4xx other than 408/429 drops the batch (logged, counted) and goes on with the next one. */
    @Test
    public void refusedBatchesAreDroppedAndTheRestSent() throws Exception {
        try (TestSupport.Server srv = server("4xx")) {
            srv.start(0);
            srv.putMethodIds(APP, BUILD, demo.DemoMain.METHOD_IDS);
            Spool spool = new Spool(TestSupport.tempDir("spool"), 10, 1 << 20, Log.STDERR);
            spool.write(UUID.randomUUID(), batch(UUID.randomUUID(), "other", 2)); // another app's batch: 400
            byte[] bad = batch(UUID.randomUUID(), APP, 1);
            bad[10] = 1; // flags != 0: malformed, 400
            spool.write(UUID.randomUUID(), bad);
            spool.write(UUID.randomUUID(), batch(UUID.randomUUID(), APP, 4));
            Uploader.Pass p = uploader(srv.url(), srv.ingestKey, spool).pass(Long.MAX_VALUE);
            assertEquals(1, p.sent);
            assertEquals(0, spool.list().size());
            // a wrong key: 403, dropped
            spool.write(UUID.randomUUID(), batch(UUID.randomUUID(), APP, 4));
            Uploader wrong = uploader(srv.url(), srv.readKey, spool);
            p = wrong.pass(Long.MAX_VALUE);
            assertEquals(403, p.lastStatus);
            assertEquals(1, wrong.dropped4xx);
            assertEquals(0, spool.list().size());
            srv.waitProcessed(1);
            assertArrayEquals(new long[] {1, 8}, srv.buildCounts(APP, BUILD));
        }
    }

    /** One request as the fake server saw it. */
    static final class Req {
        String line;
        Map<String, String> headers = new HashMap<>();
        byte[] body;
    }

    /** Answers each connection with the next canned answer; records the requests. */
    static Thread fake(ServerSocket ss, List<String> answers, List<Req> seen) {
        Thread t = new Thread(() -> {
            for (String answer : answers) {
                try (Socket s = ss.accept()) {
                    InputStream in = s.getInputStream();
                    Req r = new Req();
                    StringBuilder head = new StringBuilder();
                    int c;
                    while ((c = in.read()) >= 0) {
                        head.append((char) c);
                        if (head.toString().endsWith("\r\n\r\n")) {
                            break;
                        }
                    }
                    BufferedReader br = new BufferedReader(new InputStreamReader(
                            new ByteArrayInputStream(head.toString().getBytes(StandardCharsets.ISO_8859_1))));
                    r.line = br.readLine();
                    String h;
                    while ((h = br.readLine()) != null && !h.isEmpty()) {
                        int i = h.indexOf(':');
                        r.headers.put(h.substring(0, i).trim().toLowerCase(), h.substring(i + 1).trim());
                    }
                    int n = Integer.parseInt(r.headers.getOrDefault("content-length", "0"));
                    r.body = new byte[n];
                    int off = 0;
                    while (off < n && (c = in.read(r.body, off, n - off)) > 0) {
                        off += c;
                    }
                    synchronized (seen) {
                        seen.add(r);
                    }
                    OutputStream os = s.getOutputStream();
                    os.write(answer.getBytes(StandardCharsets.ISO_8859_1));
                    os.flush();
                } catch (Exception e) {
                    return;
                }
            }
        });
        t.start();
        return t;
    }

    static String answer(int status, String extraHeaders, String body) {
        return "HTTP/1.1 " + status + " X\r\nConnection: close\r\nContent-Type: application/json\r\n" + extraHeaders
                + "Content-Length: " + body.length() + "\r\n\r\n" + body;
    }

    /** 429 / 503 with Retry-After (seconds or HTTP-date) are retried after exactly that delay, then 202. */
    @Test
    public void retryAfterIsHonoured() throws Exception {
        try (ServerSocket ss = new ServerSocket(0)) {
            List<Req> seen = new ArrayList<>();
            String date = "Sun, 06 Nov 2044 08:49:37 GMT"; // far future: capped at backoffMax (2,000 ms)
            Thread t = fake(ss, Arrays.asList(answer(429, "Retry-After: 1\r\n", "{\"error\":\"slow down\"}"),
                    answer(503, "Retry-After: " + date + "\r\n", "{\"error\":\"busy\"}"),
                    answer(503, "", "{\"error\":\"busy\"}"),
                    answer(202, "", "{\"batch_id\":\"x\",\"records\":2}")), seen);
            Spool spool = new Spool(TestSupport.tempDir("spool"), 10, 1 << 20, Log.STDERR);
            UUID id = UUID.randomUUID();
            byte[] b = batch(id, APP, 1);
            spool.write(id, b);
            Uploader up = new Uploader("http://127.0.0.1:" + ss.getLocalPort(), APP, "blk_ing_test", spool, 50,
                    2000, 5000, Log.STDERR);
            Uploader.Pass p = up.pass(Long.MAX_VALUE);
            assertEquals(429, p.lastStatus);
            assertEquals("Retry-After: 1 (seconds)", 1000, p.retryInMillis);
            p = up.pass(Long.MAX_VALUE);
            assertEquals(503, p.lastStatus);
            assertEquals("an HTTP-date far away is capped at backoffMax", 2000, p.retryInMillis);
            p = up.pass(Long.MAX_VALUE);
            assertEquals(503, p.lastStatus);
            assertTrue("no Retry-After: backoff " + p.retryInMillis, p.retryInMillis >= 25 && p.retryInMillis <= 50);
            assertEquals(1, spool.list().size());
            p = up.pass(Long.MAX_VALUE);
            assertEquals(202, p.lastStatus);
            assertEquals(0, spool.list().size());
            t.join();
            assertEquals(4, seen.size());
            for (Req r : seen) {
                assertEquals("POST /v1/apps/shop/batches HTTP/1.1", r.line);
                assertEquals("gzip", r.headers.get("content-encoding"));
                assertEquals("Bearer blk_ing_test", r.headers.get("authorization"));
                try (InputStream in = new GZIPInputStream(new ByteArrayInputStream(r.body))) {
                    assertArrayEquals(b, TestSupport.readAll(in));
                }
            }
        }
    }

    @Test
    public void retryAfterParsing() {
        assertEquals(120000, Uploader.parseRetryAfter(" 120 ", 0));
        assertEquals(-1, Uploader.parseRetryAfter(null, 0));
        assertEquals(-1, Uploader.parseRetryAfter("soon", 0));
        assertEquals(-1, Uploader.parseRetryAfter("-5", 0));
        long t = 784111777000L; // Sun, 06 Nov 1994 08:49:37 GMT (RFC 9110's example)
        assertEquals(3000, Uploader.parseRetryAfter("Sun, 06 Nov 1994 08:49:40 GMT", t));
        assertEquals(0, Uploader.parseRetryAfter("Sun, 06 Nov 1994 08:49:30 GMT", t));
    }

    /** The spool keeps at most maxFiles / maxBytes, deleting the oldest first, counted; whole files only. */
    @Test
    public void spoolIsBoundedOldestFirst() throws Exception {
        File dir = TestSupport.tempDir("spool-bound");
        Spool spool = new Spool(dir, 3, 1 << 20, Log.STDERR);
        List<UUID> ids = new ArrayList<>();
        for (int k = 0; k < 5; k++) {
            UUID id = UUID.randomUUID();
            ids.add(id);
            spool.write(id, batch(id, APP, 1));
        }
        List<File> left = spool.list();
        assertEquals(3, left.size());
        assertEquals(2, spool.dropped());
        for (int k = 0; k < 3; k++) {
            assertTrue(left.get(k).getName().contains(ids.get(k + 2).toString()));
            assertEquals(batch(ids.get(k + 2), APP, 1).length, TestSupport.gunzip(left.get(k)).length);
        }
        for (File f : TestSupport.files(dir)) {
            assertTrue("no temporary files left: " + f, f.getName().endsWith(Spool.SUFFIX));
        }
        long one = left.get(0).length();
        Spool bytes = new Spool(TestSupport.tempDir("spool-bytes"), 100, one * 2 + one / 2, Log.STDERR);
        for (int k = 0; k < 4; k++) {
            UUID id = UUID.randomUUID();
            bytes.write(id, batch(id, APP, 1));
        }
        assertEquals(2, bytes.list().size());
        assertEquals(2, bytes.dropped());
    }
}
