package io.beatline.runtime.net;

import io.beatline.runtime.NetRequest;
import java.io.IOException;
import java.net.HttpURLConnection;
import java.net.Proxy;
import java.net.URL;
import java.net.URLConnection;
import javax.net.ssl.HttpsURLConnection;

/**
 * What {@code beatline-instrument} calls instead of
 * {@code URL.openConnection()} and {@code URL.openConnection(Proxy)} in the
 * app's code (issue 16): while the runtime runs, an
 * {@link HttpURLConnection} comes back wrapped ({@link TimedHttpConnection},
 * {@link TimedHttpsConnection}: the same type the app casts to) so that its
 * request is timed; anything else (file:, jar:, a runtime that does not run)
 * comes back as it is. Names JDK types only.
 */
public final class Url {
    private Url() {
    }

    /** Replaces {@code url.openConnection()}. */
    public static URLConnection openConnection(URL url) throws IOException {
        return wrap(url.openConnection());
    }

    /** Replaces {@code url.openConnection(proxy)}. */
    public static URLConnection openConnection(URL url, Proxy proxy) throws IOException {
        return wrap(url.openConnection(proxy));
    }

    /** The connection wrapped for timing, or c itself (never throws). */
    static URLConnection wrap(URLConnection c) {
        try {
            if (!NetRequest.active() || c instanceof TimedHttpConnection || c instanceof TimedHttpsConnection) {
                return c;
            }
            // only the platform's own connections: an app's URL handler may give its own
            // HttpURLConnection subclass, which the app may cast to (boot loader on the JVM and
            // Android alike)
            if (c == null || c.getClass().getClassLoader() != HttpURLConnection.class.getClassLoader()) {
                return c;
            }
            if (c instanceof HttpsURLConnection) {
                return new TimedHttpsConnection((HttpsURLConnection) c);
            }
            if (c instanceof HttpURLConnection) {
                return new TimedHttpConnection((HttpURLConnection) c);
            }
        } catch (Throwable t) {
            // the app gets its connection unwrapped
        }
        return c;
    }
}
