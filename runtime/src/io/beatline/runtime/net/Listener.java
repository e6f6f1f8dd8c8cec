package io.beatline.runtime.net;

import io.beatline.runtime.NetRequest;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.Proxy;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.util.List;
import okhttp3.Call;
import okhttp3.Connection;
import okhttp3.EventListener;
import okhttp3.Handshake;
import okhttp3.Headers;
import okhttp3.HttpUrl;
import okhttp3.Protocol;
import okhttp3.Request;
import okhttp3.Response;

/**
 * Beatline's OkHttp {@link EventListener} (issue 16): one per call, made by
 * {@link Factory}; times the call's phases into a {@link NetRequest} and
 * forwards every callback to the app's own listener first (exceptions of
 * the app's listener reach OkHttp as they would without Beatline; Beatline's
 * own work never throws).
 *
 * <p>Phases (µs, System.nanoTime()): dns = dnsStart→dnsEnd; connect =
 * connectStart→connectEnd minus the TLS handshake; tls =
 * secureConnectStart→secureConnectEnd (summed over the call's connection
 * attempts, redirects included); request = requestHeadersStart→the request
 * written (requestBodyEnd, or requestHeadersEnd without a body); ttfb = the
 * request written→responseHeadersEnd; body = responseHeadersEnd→
 * responseBodyEnd (the last exchange of the call for these three). Bytes:
 * the request line and headers OkHttp wrote (HTTP/1 form) and the body
 * bytes; the status line, headers and body bytes read. reused: the call's
 * last connectionAcquired came without a connectStart before it.
 *
 * <p>OkHttp 4 callbacks that 3.13's API (compiled against) lacks —
 * proxySelectStart/End, requestFailed, responseFailed, canceled,
 * satisfactionFailure, cacheHit, cacheMiss, cacheConditionalHit — are
 * declared here with OkHttp 4's signatures, so on OkHttp 4 they override
 * its methods and reach the app's listener (through reflection, looked up
 * once: these callbacks are rare); on 3.x they are never called.
 */
final class Listener extends EventListener {
    /** The app's listener, or null when it had none ({@link EventListener#NONE}). */
    private final EventListener app;
    private NetRequest req;
    private long dnsStart = -1;
    private long connectStart = -1;
    private long tlsStart = -1;
    private long tlsThisConnect;
    private boolean connectedSinceAcquire;
    private long requestStart = -1;
    private long requestEnd = -1;
    private long headersEnd = -1;

    Listener(EventListener app) {
        this.app = app == EventListener.NONE ? null : app;
    }

    /** Wraps the app's factory: each call gets the app's listener inside Beatline's. */
    static final class Factory implements EventListener.Factory {
        final EventListener.Factory app;

        Factory(EventListener.Factory app) {
            this.app = app;
        }

        @Override
        public EventListener create(Call call) {
            return new Listener(app == null ? null : app.create(call));
        }
    }

    private static long add(long sum, long us) {
        return sum < 0 ? us : sum + us;
    }

    private long us(long fromNanos, long toNanos) {
        return Math.max(0, (toNanos - fromNanos) / 1000);
    }

    @Override
    public void callStart(Call call) {
        if (app != null) {
            app.callStart(call);
        }
        try {
            NetRequest r = NetRequest.begin();
            if (r != null) {
                Request q = call.request();
                HttpUrl u = q.url();
                r.method = q.method();
                r.url(u.scheme(), u.host(), u.port(), u.encodedPath(), u.encodedQuery());
                req = r;
            }
        } catch (Throwable t) {
            req = null;
        }
    }

    @Override
    public void dnsStart(Call call, String domainName) {
        if (app != null) {
            app.dnsStart(call, domainName);
        }
        dnsStart = System.nanoTime();
    }

    @Override
    public void dnsEnd(Call call, String domainName, List<InetAddress> inetAddressList) {
        if (app != null) {
            app.dnsEnd(call, domainName, inetAddressList);
        }
        NetRequest r = req;
        if (r != null && dnsStart >= 0) {
            r.dnsUs = add(r.dnsUs, us(dnsStart, System.nanoTime()));
            dnsStart = -1;
        }
    }

    @Override
    public void connectStart(Call call, InetSocketAddress inetSocketAddress, Proxy proxy) {
        if (app != null) {
            app.connectStart(call, inetSocketAddress, proxy);
        }
        connectStart = System.nanoTime();
        tlsThisConnect = 0;
        connectedSinceAcquire = true;
    }

    @Override
    public void secureConnectStart(Call call) {
        if (app != null) {
            app.secureConnectStart(call);
        }
        tlsStart = System.nanoTime();
    }

    @Override
    public void secureConnectEnd(Call call, Handshake handshake) {
        if (app != null) {
            app.secureConnectEnd(call, handshake);
        }
        NetRequest r = req;
        if (r != null && tlsStart >= 0) {
            long t = us(tlsStart, System.nanoTime());
            r.tlsUs = add(r.tlsUs, t);
            tlsThisConnect += t;
            tlsStart = -1;
        }
    }

    private void connected() {
        NetRequest r = req;
        if (r != null && connectStart >= 0) {
            long t = us(connectStart, System.nanoTime()) - tlsThisConnect;
            r.connectUs = add(r.connectUs, Math.max(0, t));
            connectStart = -1;
        }
    }

    @Override
    public void connectEnd(Call call, InetSocketAddress inetSocketAddress, Proxy proxy, Protocol protocol) {
        if (app != null) {
            app.connectEnd(call, inetSocketAddress, proxy, protocol);
        }
        connected();
    }

    @Override
    public void connectFailed(Call call, InetSocketAddress inetSocketAddress, Proxy proxy, Protocol protocol,
            IOException ioe) {
        if (app != null) {
            app.connectFailed(call, inetSocketAddress, proxy, protocol, ioe);
        }
        connected();
    }

    @Override
    public void connectionAcquired(Call call, Connection connection) {
        if (app != null) {
            app.connectionAcquired(call, connection);
        }
        NetRequest r = req;
        if (r != null) {
            r.reused = connectedSinceAcquire ? 0 : 1;
            connectedSinceAcquire = false;
            try {
                r.protocol = connection.protocol().toString();
            } catch (Throwable t) {
                // protocol stays unknown
            }
        }
    }

    @Override
    public void connectionReleased(Call call, Connection connection) {
        if (app != null) {
            app.connectionReleased(call, connection);
        }
    }

    @Override
    public void requestHeadersStart(Call call) {
        if (app != null) {
            app.requestHeadersStart(call);
        }
        requestStart = System.nanoTime();
        requestEnd = -1;
    }

    @Override
    public void requestHeadersEnd(Call call, Request request) {
        if (app != null) {
            app.requestHeadersEnd(call, request);
        }
        long now = System.nanoTime();
        NetRequest r = req;
        if (r != null) {
            requestEnd = now;
            try {
                HttpUrl u = request.url();
                String target = u.encodedPath();
                String q = u.encodedQuery();
                // request line "METHOD target HTTP/1.1\r\n", then the headers
                long n = request.method().length() + 1 + target.length() + (q == null ? 0 : 1 + q.length()) + 11;
                r.bytesOut += n + headerBytes(request.headers());
            } catch (Throwable t) {
                // bytes stay as they are
            }
            r.requestUs = us(requestStart, now);
        }
    }

    /** Bytes of a header block in HTTP/1 form: "Name: value\r\n" each, then "\r\n". */
    static long headerBytes(Headers h) {
        long n = 2;
        for (int i = 0, k = h.size(); i < k; i++) {
            n += utf8Len(h.name(i)) + 2 + utf8Len(h.value(i)) + 2;
        }
        return n;
    }

    private static int utf8Len(String s) {
        return Text.utf8Len(s);
    }

    @Override
    public void requestBodyStart(Call call) {
        if (app != null) {
            app.requestBodyStart(call);
        }
    }

    @Override
    public void requestBodyEnd(Call call, long byteCount) {
        if (app != null) {
            app.requestBodyEnd(call, byteCount);
        }
        long now = System.nanoTime();
        NetRequest r = req;
        if (r != null) {
            r.bytesOut += Math.max(0, byteCount);
            requestEnd = now;
            if (requestStart >= 0) {
                r.requestUs = us(requestStart, now);
            }
        }
    }

    @Override
    public void responseHeadersStart(Call call) {
        if (app != null) {
            app.responseHeadersStart(call);
        }
    }

    @Override
    public void responseHeadersEnd(Call call, Response response) {
        if (app != null) {
            app.responseHeadersEnd(call, response);
        }
        long now = System.nanoTime();
        NetRequest r = req;
        if (r != null) {
            headersEnd = now;
            if (requestEnd >= 0) {
                r.ttfbUs = us(requestEnd, now);
            }
            try {
                r.status = response.code();
                Protocol p = response.protocol();
                r.protocol = p.toString();
                long n = headerBytes(response.headers());
                if (p == Protocol.HTTP_1_0 || p == Protocol.HTTP_1_1) {
                    // status line "HTTP/1.1 200 OK\r\n"
                    n += 8 + 1 + 3 + 1 + utf8Len(response.message()) + 2;
                }
                r.bytesIn += n;
            } catch (Throwable t) {
                // status and bytes stay as they are
            }
        }
    }

    @Override
    public void responseBodyStart(Call call) {
        if (app != null) {
            app.responseBodyStart(call);
        }
    }

    @Override
    public void responseBodyEnd(Call call, long byteCount) {
        if (app != null) {
            app.responseBodyEnd(call, byteCount);
        }
        long now = System.nanoTime();
        NetRequest r = req;
        if (r != null) {
            r.bytesIn += Math.max(0, byteCount);
            if (headersEnd >= 0) {
                r.bodyUs = us(headersEnd, now);
            }
        }
    }

    private static Method later(String name, Class<?>... types) {
        try {
            return EventListener.class.getMethod(name, types);
        } catch (Throwable t) {
            return null; // OkHttp 3.x: never called
        }
    }

    private static final Method PROXY_SELECT_START = later("proxySelectStart", Call.class, HttpUrl.class);
    private static final Method PROXY_SELECT_END = later("proxySelectEnd", Call.class, HttpUrl.class, List.class);
    private static final Method REQUEST_FAILED = later("requestFailed", Call.class, IOException.class);
    private static final Method RESPONSE_FAILED = later("responseFailed", Call.class, IOException.class);
    private static final Method CANCELED = later("canceled", Call.class);
    private static final Method SATISFACTION_FAILURE = later("satisfactionFailure", Call.class, Response.class);
    private static final Method CACHE_HIT = later("cacheHit", Call.class, Response.class);
    private static final Method CACHE_MISS = later("cacheMiss", Call.class);
    private static final Method CACHE_CONDITIONAL_HIT = later("cacheConditionalHit", Call.class, Response.class);

    /** Calls the app listener's OkHttp 4 callback m; what it throws reaches OkHttp unchanged. */
    private void forward(Method m, Object... args) {
        if (app == null || m == null) {
            return;
        }
        try {
            m.invoke(app, args);
        } catch (InvocationTargetException e) {
            Throwable c = e.getCause();
            if (c instanceof RuntimeException) {
                throw (RuntimeException) c;
            }
            if (c instanceof Error) {
                throw (Error) c;
            }
            throw new RuntimeException(c);
        } catch (IllegalAccessException e) {
            // a public method of a public class: cannot happen
        }
    }

    /** OkHttp 4. */
    public void proxySelectStart(Call call, HttpUrl url) {
        forward(PROXY_SELECT_START, call, url);
    }

    /** OkHttp 4. */
    public void proxySelectEnd(Call call, HttpUrl url, List<Proxy> proxies) {
        forward(PROXY_SELECT_END, call, url, proxies);
    }

    /** OkHttp 4 (3.14). */
    public void requestFailed(Call call, IOException ioe) {
        forward(REQUEST_FAILED, call, ioe);
    }

    /** OkHttp 4 (3.14). */
    public void responseFailed(Call call, IOException ioe) {
        forward(RESPONSE_FAILED, call, ioe);
    }

    /** OkHttp 4. */
    public void canceled(Call call) {
        forward(CANCELED, call);
    }

    /** OkHttp 4. */
    public void satisfactionFailure(Call call, Response response) {
        forward(SATISFACTION_FAILURE, call, response);
    }

    /** OkHttp 4. */
    public void cacheHit(Call call, Response response) {
        forward(CACHE_HIT, call, response);
    }

    /** OkHttp 4. */
    public void cacheMiss(Call call) {
        forward(CACHE_MISS, call);
    }

    /** OkHttp 4. */
    public void cacheConditionalHit(Call call, Response cachedResponse) {
        forward(CACHE_CONDITIONAL_HIT, call, cachedResponse);
    }

    @Override
    public void callEnd(Call call) {
        if (app != null) {
            app.callEnd(call);
        }
        NetRequest r = req;
        if (r != null) {
            r.end();
        }
    }

    @Override
    public void callFailed(Call call, IOException ioe) {
        if (app != null) {
            app.callFailed(call, ioe);
        }
        NetRequest r = req;
        if (r != null) {
            r.error = ioe == null ? "java.io.IOException" : ioe.getClass().getName();
            r.end();
        }
    }
}
