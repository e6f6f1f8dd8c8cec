package demo.net;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.HttpURLConnection;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.URL;
import java.nio.charset.StandardCharsets;
import okhttp3.MediaType;
import okhttp3.OkHttpClient;
import okhttp3.Request;
import okhttp3.RequestBody;
import okhttp3.Response;

/**
 * The program of tests/integration/network_test.sh (issue 16): a fixed set
 * of requests to its own HTTP server on 127.0.0.1 (port 0), made by
 * distinct methods so that /network's callers can be checked:
 *
 * <pre>
 *   Orders.fetch     OkHttp  GET  /v2/users/{1..5}/orders/{7,14,..,35}  5 x 200
 *   Users.missing    OkHttp  GET  /v2/users/{901,902}                   2 x 404
 *   Orders.place     OkHttp  POST /v2/orders                            1 x 201
 *   Legacy.items     URL     GET  /legacy/items/{7,8,13}                2 x 200, 1 x 500
 * </pre>
 *
 * Obfuscated by ProGuard, instrumented, run with the runtime by the test.
 */
public final class NetDemo {
    private NetDemo() {
    }

    static void answer(HttpExchange x) throws IOException {
        String p = x.getRequestURI().getPath();
        int status = 200;
        if (p.startsWith("/v2/users/") && p.split("/").length == 4 && p.compareTo("/v2/users/900") > 0) {
            status = 404;
        } else if (p.equals("/v2/orders")) {
            status = 201;
        } else if (p.equals("/legacy/items/13")) {
            status = 500;
        }
        InputStream in = x.getRequestBody();
        while (in.read() >= 0) {
            // drain
        }
        byte[] b = ("{\"path\":\"" + p + "\"}").getBytes(StandardCharsets.UTF_8);
        x.sendResponseHeaders(status, b.length);
        try (OutputStream o = x.getResponseBody()) {
            o.write(b);
        }
    }

    public static void main(String[] args) throws Exception {
        HttpServer srv = HttpServer.create(new InetSocketAddress(InetAddress.getByName("127.0.0.1"), 0), 50);
        srv.createContext("/", NetDemo::answer);
        srv.start();
        String base = "http://127.0.0.1:" + srv.getAddress().getPort();
        OkHttpClient client = new OkHttpClient.Builder().build();
        int ok = Orders.fetch(client, base) + Users.missing(client, base) + Orders.place(client, base)
                + Legacy.items(base);
        System.out.println("requests answered 2xx: " + ok);
        client.dispatcher().executorService().shutdown();
        client.connectionPool().evictAll();
        srv.stop(0);
    }

    static final class Orders {
        static int fetch(OkHttpClient c, String base) throws IOException {
            int ok = 0;
            for (int i = 1; i <= 5; i++) {
                try (Response r = c.newCall(new Request.Builder().url(base + "/v2/users/" + i + "/orders/" + 7 * i)
                        .build()).execute()) {
                    r.body().string();
                    ok += r.isSuccessful() ? 1 : 0;
                }
            }
            return ok;
        }

        static int place(OkHttpClient c, String base) throws IOException {
            RequestBody b = RequestBody.create(MediaType.parse("application/json"), "{\"item\":7}");
            try (Response r = c.newCall(new Request.Builder().url(base + "/v2/orders").post(b).build()).execute()) {
                r.body().string();
                return r.isSuccessful() ? 1 : 0;
            }
        }
    }

    static final class Users {
        static int missing(OkHttpClient c, String base) throws IOException {
            int ok = 0;
            for (int i = 901; i <= 902; i++) {
                try (Response r = c.newCall(new Request.Builder().url(base + "/v2/users/" + i).build()).execute()) {
                    r.body().string();
                    ok += r.isSuccessful() ? 1 : 0;
                }
            }
            return ok;
        }
    }

    static final class Legacy {
        static int items(String base) throws IOException {
            int ok = 0;
            for (int id : new int[] {7, 8, 13}) {
                HttpURLConnection c = (HttpURLConnection) new URL(base + "/legacy/items/" + id).openConnection();
                int code = c.getResponseCode();
                InputStream in = code < 400 ? c.getInputStream() : c.getErrorStream();
                ByteArrayOutputStream out = new ByteArrayOutputStream();
                byte[] b = new byte[1024];
                int n;
                while ((n = in.read(b)) > 0) {
                    out.write(b, 0, n);
                }
                in.close();
                ok += code < 400 ? 1 : 0;
            }
            return ok;
        }
    }
}
