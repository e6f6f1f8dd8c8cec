package netapp;

import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.Proxy;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import okhttp3.Call;
import okhttp3.Callback;
import okhttp3.Connection;
import okhttp3.EventListener;
import okhttp3.Handshake;
import okhttp3.HttpUrl;
import okhttp3.MediaType;
import okhttp3.OkHttpClient;
import okhttp3.Protocol;
import okhttp3.Request;
import okhttp3.RequestBody;
import okhttp3.Response;

/** The OkHttp half of {@link NetMain} (the only class naming OkHttp types). */
final class OkScenarios {
    private OkScenarios() {
    }

    /** The app's own listener: records every callback's name (OkHttp 4's too: declared without @Override). */
    static final class AppListener extends EventListener {
        final List<String> seen = new ArrayList<String>();

        private synchronized void saw(String s) {
            seen.add(s);
        }

        synchronized String names() {
            return String.join(",", seen);
        }

        @Override public void callStart(Call c) { saw("callStart"); }
        @Override public void dnsStart(Call c, String d) { saw("dnsStart"); }
        @Override public void dnsEnd(Call c, String d, List<InetAddress> l) { saw("dnsEnd"); }
        @Override public void connectStart(Call c, InetSocketAddress a, Proxy p) { saw("connectStart"); }
        @Override public void secureConnectStart(Call c) { saw("secureConnectStart"); }
        @Override public void secureConnectEnd(Call c, Handshake h) { saw("secureConnectEnd"); }
        @Override public void connectEnd(Call c, InetSocketAddress a, Proxy p, Protocol pr) { saw("connectEnd"); }
        @Override public void connectFailed(Call c, InetSocketAddress a, Proxy p, Protocol pr, IOException e) {
            saw("connectFailed");
        }
        @Override public void connectionAcquired(Call c, Connection k) { saw("connectionAcquired"); }
        @Override public void connectionReleased(Call c, Connection k) { saw("connectionReleased"); }
        @Override public void requestHeadersStart(Call c) { saw("requestHeadersStart"); }
        @Override public void requestHeadersEnd(Call c, Request r) { saw("requestHeadersEnd"); }
        @Override public void requestBodyStart(Call c) { saw("requestBodyStart"); }
        @Override public void requestBodyEnd(Call c, long n) { saw("requestBodyEnd"); }
        @Override public void responseHeadersStart(Call c) { saw("responseHeadersStart"); }
        @Override public void responseHeadersEnd(Call c, Response r) { saw("responseHeadersEnd"); }
        @Override public void responseBodyStart(Call c) { saw("responseBodyStart"); }
        @Override public void responseBodyEnd(Call c, long n) { saw("responseBodyEnd"); }
        @Override public void callEnd(Call c) { saw("callEnd"); }
        @Override public void callFailed(Call c, IOException e) { saw("callFailed"); }
        public void proxySelectStart(Call c, HttpUrl u) { saw("proxySelectStart"); }
        public void proxySelectEnd(Call c, HttpUrl u, List<Proxy> l) { saw("proxySelectEnd"); }
        public void requestFailed(Call c, IOException e) { saw("requestFailed"); }
        public void responseFailed(Call c, IOException e) { saw("responseFailed"); }
        public void canceled(Call c) { saw("canceled"); }
    }

    static void run(String http, String https, int refusedPort) throws Exception {
        final AppListener app = new AppListener();
        OkHttpClient client = new OkHttpClient.Builder().eventListenerFactory(new EventListener.Factory() {
            @Override
            public EventListener create(Call call) {
                return app;
            }
        }).build();
        builderGet(client, http);
        System.out.println("listener " + app.names());
        reuseGet(client, http);
        OkHttpClient plain = new OkHttpClient();
        plainPost(plain, http);
        redirect(plain, http);
        errors(plain, http);
        refused(plain, refusedPort);
        timeout(plain, http);
        enqueue(plain, http);
        httpsGet(https);
        plain.dispatcher().executorService().shutdown(); // its thread would keep the JVM up for a minute
        System.out.println("listener after all " + app.seen.size());
    }

    static String get(OkHttpClient c, String url) throws IOException {
        Response r = c.newCall(new Request.Builder().url(url).build()).execute();
        try {
            return r.code() + " " + r.body().string();
        } finally {
            r.close();
        }
    }

    static void builderGet(OkHttpClient c, String base) throws IOException {
        Response r = c.newCall(new Request.Builder().url(base + "/v2/users/123?x=1&y=2").build()).execute();
        try {
            System.out.println("ok builder " + r.code() + " " + r.body().string());
        } finally {
            r.close();
        }
    }

    static void reuseGet(OkHttpClient c, String base) throws IOException {
        System.out.println("ok reuse " + get(c, base + "/v2/users/456"));
    }

    static void plainPost(OkHttpClient c, String base) throws IOException {
        RequestBody b = RequestBody.create(MediaType.parse("text/plain"), "hello-beatline");
        Response r = c.newCall(new Request.Builder().url(base + "/echo").post(b).build()).execute();
        try {
            System.out.println("ok post " + r.code() + " " + r.body().string());
        } finally {
            r.close();
        }
    }

    static void redirect(OkHttpClient c, String base) throws IOException {
        System.out.println("ok redirect " + get(c, base + "/redirect"));
    }

    static void errors(OkHttpClient c, String base) throws IOException {
        System.out.println("ok 404 " + get(c, base + "/missing"));
        System.out.println("ok 500 " + get(c, base + "/fail"));
    }

    static void refused(OkHttpClient c, int port) {
        try {
            get(c, "http://127.0.0.1:" + port + "/nothing");
            System.out.println("ok refused: connected?");
        } catch (IOException e) {
            System.out.println("ok refused " + e.getClass().getName());
        }
    }

    static void timeout(OkHttpClient c, String base) {
        OkHttpClient quick = c.newBuilder().readTimeout(300, TimeUnit.MILLISECONDS).build();
        try {
            get(quick, base + "/slow");
            System.out.println("ok timeout: answered?");
        } catch (IOException e) {
            System.out.println("ok timeout " + e.getClass().getName());
        }
    }

    static void enqueue(final OkHttpClient c, final String base) throws InterruptedException {
        final CountDownLatch done = new CountDownLatch(1);
        final String[] got = new String[1];
        Thread t = new Thread(new Runnable() {
            @Override
            public void run() {
                enqueueIt(c, base, done, got);
            }
        }, "enqueuer");
        t.start();
        t.join(10000);
        if (!done.await(10, TimeUnit.SECONDS)) {
            System.out.println("ok async: no answer in 10 s");
            return;
        }
        System.out.println("ok async " + got[0]);
    }

    static void enqueueIt(OkHttpClient c, String base, final CountDownLatch done, final String[] got) {
        c.newCall(new Request.Builder().url(base + "/async").build()).enqueue(new Callback() {
            @Override
            public void onFailure(Call call, IOException e) {
                got[0] = e.getClass().getName();
                done.countDown();
            }

            @Override
            public void onResponse(Call call, Response r) throws IOException {
                try {
                    got[0] = r.code() + " " + r.body().string();
                } finally {
                    r.close();
                    done.countDown();
                }
            }
        });
    }

    static void httpsGet(String base) throws IOException {
        OkHttpClient c = new OkHttpClient.Builder().build();
        System.out.println("ok https " + get(c, base + "/secure"));
    }
}
