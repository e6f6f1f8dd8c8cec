package netapp;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.HttpURLConnection;
import java.net.URL;
import java.nio.charset.StandardCharsets;
import javax.net.ssl.HttpsURLConnection;

/**
 * The network test program (issue 16; tests/runtime/io/beatline/runtime/
 * NetworkTest.java): OkHttp and HttpURLConnection requests against the
 * test's local server, each made by its own method (the events' callers).
 * Compiled against OkHttp 3.13, instrumented by beatline-instrument at test
 * time, run with OkHttp 3.13, 4.x or (mode {@code url}) no OkHttp at all:
 * this class names no OkHttp type ({@link OkScenarios} does). Prints only
 * what does not depend on timing, so instrumented and plain runs print the
 * same.
 *
 * <p>Arguments: HTTP base URL, HTTPS base URL, a port that refuses
 * connections, mode ({@code all} or {@code url}).
 */
public final class NetMain {
    private NetMain() {
    }

    public static void main(String[] args) throws Exception {
        String http = args[0];
        String https = args[1];
        if (args[3].equals("all")) {
            OkScenarios.run(http, https, Integer.parseInt(args[2]));
        }
        urlGet(http);
        urlPost(http);
        urlNotFound(http);
        urlHttps(https);
        System.out.println("done");
    }

    static String readAll(InputStream in) throws IOException {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        byte[] b = new byte[4096];
        int n;
        while ((n = in.read(b)) > 0) {
            out.write(b, 0, n);
        }
        in.close();
        return new String(out.toByteArray(), StandardCharsets.UTF_8);
    }

    static void urlGet(String base) throws IOException {
        HttpURLConnection c = (HttpURLConnection) new URL(base + "/url/get?page=2").openConnection();
        c.setRequestProperty("X-Test", "1");
        String body = readAll(c.getInputStream());
        System.out.println("url GET " + c.getResponseCode() + " " + body);
    }

    static void urlPost(String base) throws IOException {
        HttpURLConnection c = (HttpURLConnection) new URL(base + "/url/post").openConnection();
        c.setRequestMethod("POST");
        c.setDoOutput(true);
        c.setFixedLengthStreamingMode(11);
        OutputStream out = c.getOutputStream();
        out.write("hello world".getBytes(StandardCharsets.UTF_8));
        out.close();
        System.out.println("url POST " + c.getResponseCode() + " " + readAll(c.getInputStream()));
    }

    static void urlNotFound(String base) throws IOException {
        HttpURLConnection c = (HttpURLConnection) new URL(base + "/url/missing").openConnection();
        int code = c.getResponseCode();
        System.out.println("url 404 " + code + " " + readAll(c.getErrorStream()));
    }

    static void urlHttps(String base) throws IOException {
        HttpsURLConnection c = (HttpsURLConnection) new URL(base + "/url/secure").openConnection();
        System.out.println("url HTTPS " + c.getResponseCode() + " " + readAll(c.getInputStream()));
    }
}
