package io.beatline.runtime.net;

import io.beatline.runtime.NetRequest;
import java.io.FilterInputStream;
import java.io.FilterOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.HttpURLConnection;
import java.net.URL;
import java.util.List;
import java.util.Map;

/**
 * The timing of one wrapped {@link HttpURLConnection} (issue 16), shared by
 * {@link TimedHttpConnection} and {@link TimedHttpsConnection}, which
 * delegate every method to the app's connection and tell this class when
 * the request moves on. HttpURLConnection does not show DNS and TLS apart
 * from the connect (they are omitted), nor the headers the platform adds
 * (User-Agent, Accept, Connection…).
 *
 * <ul>
 * <li>begin: the first method that makes the connection do network work
 *     (connect, getOutputStream, getInputStream, getResponseCode, a response
 *     header getter…); the connect is then made by this class, timed:
 *     {@code connect_us} (DNS, TCP and TLS together);</li>
 * <li>{@code request_us}: from getOutputStream to the body stream's close
 *     (streaming modes: the body written to the network), when there is a
 *     body;</li>
 * <li>{@code ttfb_us}: the call that reads the response headers
 *     (getResponseCode: sends a buffered body, waits for the first byte,
 *     reads the headers);</li>
 * <li>{@code body_us}: response headers → the body stream's end (EOF or
 *     close);</li>
 * <li>end: the response body (or error stream) read to its end or closed,
 *     {@code disconnect()}, a failure (the exception class), or the response
 *     headers when the response has no body (HEAD, 204, 304,
 *     Content-Length: 0). A connection whose response body is never read,
 *     closed or disconnected gives no event.</li>
 * <li>bytes_out: the request line, the headers the app set, Host, and the
 *     body bytes written; bytes_in: the status line and headers as the
 *     connection reports them, and the body bytes read (of the last response
 *     when redirects were followed).</li>
 * </ul>
 */
final class UrlTiming {
    private final HttpURLConnection c;
    private NetRequest req;
    private boolean connected;
    private boolean responded;
    private long outStart = -1;
    private long headersEnd = -1;
    private boolean done;

    UrlTiming(HttpURLConnection c) {
        this.c = c;
    }

    /** The request begins (once): the NetRequest, the request line and the headers the app set. */
    private void begin() {
        if (req != null || done) {
            return;
        }
        try {
            NetRequest r = NetRequest.begin();
            if (r == null) {
                done = true;
                return;
            }
            URL u = c.getURL();
            r.method = c.getRequestMethod();
            r.url(u.getProtocol(), u.getHost(), u.getPort(), u.getPath(), u.getQuery());
            String file = u.getFile();
            long n = r.method.length() + 1 + (file.isEmpty() ? 1 : file.length()) + 11;
            n += 6 + u.getHost().length() + (u.getPort() > 0 ? 1 + Integer.toString(u.getPort()).length() : 0) + 2;
            for (Map.Entry<String, List<String>> e : c.getRequestProperties().entrySet()) {
                if (e.getKey() == null) {
                    continue;
                }
                for (String v : e.getValue()) {
                    n += Text.utf8Len(e.getKey()) + 2 + (v == null ? 0 : Text.utf8Len(v)) + 2;
                }
            }
            r.bytesOut = n + 2;
            req = r;
        } catch (Throwable t) {
            done = true;
        }
    }

    private void fail(Throwable e) {
        NetRequest r = req;
        if (r != null && !done) {
            done = true;
            if (r.status == 0) {
                r.error = e.getClass().getName();
            }
            r.end();
        }
    }

    private void finish() {
        NetRequest r = req;
        if (r != null && !done) {
            done = true;
            if (headersEnd >= 0) {
                r.bodyUs = Math.max(0, (System.nanoTime() - headersEnd) / 1000);
            }
            r.end();
        }
    }

    /** connect(), timed; also what every network method does first. */
    void connect() throws IOException {
        begin();
        if (connected) {
            c.connect(); // a no-op once connected, as without Beatline
            return;
        }
        long t = System.nanoTime();
        try {
            c.connect();
        } catch (IOException | RuntimeException e) {
            fail(e);
            throw e;
        }
        connected = true;
        NetRequest r = req;
        if (r != null) {
            r.connectUs = Math.max(0, (System.nanoTime() - t) / 1000);
        }
    }

    OutputStream outputStream() throws IOException {
        if (!c.getDoOutput() && req == null) {
            return c.getOutputStream(); // its ProtocolException at once, as without Beatline: nothing begins
        }
        connect();
        OutputStream out;
        try {
            out = c.getOutputStream();
        } catch (IOException | RuntimeException e) {
            fail(e);
            throw e;
        }
        if (req == null || done) {
            return out;
        }
        try {
            // a GET with a body goes out as a POST (the platform changes it in getOutputStream)
            NetRequest r = req;
            String m = c.getRequestMethod();
            if (m != null && r.method != null && !m.equals(r.method)) {
                r.bytesOut += m.length() - r.method.length();
                r.method = m;
            }
        } catch (Throwable x) {
            // the method stays as it was read
        }
        outStart = System.nanoTime();
        return new Out(out);
    }

    /**
     * Reads the response headers if not yet (the response code): the TTFB,
     * status, protocol, header bytes; ends the request when the response has
     * no body.
     */
    int responseCode() throws IOException {
        if (responded || (!c.getDoInput() && req == null)) {
            return c.getResponseCode(); // doInput false: its ProtocolException, without a connect first
        }
        connect();
        long t = System.nanoTime();
        int code;
        try {
            code = c.getResponseCode();
        } catch (IOException | RuntimeException e) {
            fail(e);
            throw e;
        }
        responded = true;
        NetRequest r = req;
        if (r != null && !done) {
            long now = System.nanoTime();
            headersEnd = now;
            r.ttfbUs = Math.max(0, (now - t) / 1000);
            if (outStart >= 0 && r.requestUs < 0) {
                r.requestUs = Math.max(0, (t - outStart) / 1000);
            }
            r.status = code > 0 ? code : 0;
            try {
                String line = c.getHeaderField(0);
                long n = 2;
                if (line != null && line.startsWith("HTTP/")) {
                    n += Text.utf8Len(line) + 2;
                    int sp = line.indexOf(' ');
                    r.protocol = (sp > 0 ? line.substring(0, sp) : line).toLowerCase(java.util.Locale.ROOT);
                }
                for (Map.Entry<String, List<String>> e : c.getHeaderFields().entrySet()) {
                    if (e.getKey() == null) {
                        continue;
                    }
                    for (String v : e.getValue()) {
                        n += Text.utf8Len(e.getKey()) + 2 + (v == null ? 0 : Text.utf8Len(v)) + 2;
                    }
                }
                r.bytesIn += n;
                if ("HEAD".equals(r.method) || code == 204 || code == 304 || c.getContentLengthLong() == 0) {
                    finish();
                }
            } catch (Throwable x) {
                // bytes stay as they are
            }
        }
        return code;
    }

    /** A response header getter: the headers are read first (errors as the connection gives them: none). */
    void headers() {
        if (!responded) {
            try {
                responseCode();
            } catch (Throwable e) {
                // the getter answers as the connection does (null, -1)
            }
        }
    }

    InputStream inputStream() throws IOException {
        if (!c.getDoInput() && req == null) {
            return c.getInputStream(); // its ProtocolException at once, as without Beatline
        }
        try {
            responseCode();
        } catch (IOException | RuntimeException e) {
            throw e;
        }
        InputStream in;
        try {
            in = c.getInputStream();
        } catch (IOException | RuntimeException e) {
            finish(); // a 4xx/5xx: the status is known, the body is the error stream's
            throw e;
        }
        return wrapIn(in);
    }

    InputStream errorStream() {
        InputStream in = c.getErrorStream();
        return in == null ? null : wrapIn(in);
    }

    private InputStream wrapIn(InputStream in) {
        if (req == null || done || in instanceof In) {
            return in;
        }
        return new In(in);
    }

    void disconnect() {
        finish();
        c.disconnect();
    }

    /** The request is over without disconnecting (getContent read the body itself). */
    void disconnect0() {
        finish();
    }

    /**
     * Calls the public method {@code name} of the wrapped connection c by
     * reflection: for the methods newer than the Java 8 API this package is
     * compiled against (setAuthenticator, Java 9; getSSLSession, Java 12),
     * whose HttpURLConnection versions throw UnsupportedOperationException.
     * The method's own unchecked exception reaches the caller as it is; a
     * platform without the method: UnsupportedOperationException, as
     * without Beatline.
     */
    static Object delegate(Object c, Class<?> owner, String name, Class<?>[] types, Object... args) {
        java.lang.reflect.Method m;
        try {
            m = owner.getMethod(name, types);
        } catch (NoSuchMethodException e) {
            throw new UnsupportedOperationException(name);
        }
        try {
            return m.invoke(c, args);
        } catch (java.lang.reflect.InvocationTargetException e) {
            Throwable x = e.getCause();
            if (x instanceof RuntimeException) {
                throw (RuntimeException) x;
            }
            if (x instanceof Error) {
                throw (Error) x;
            }
            throw new UnsupportedOperationException(name, x);
        } catch (IllegalAccessException e) {
            throw new UnsupportedOperationException(name, e);
        }
    }

    /** Counts the request body; its close is the request written. */
    private final class Out extends FilterOutputStream {
        Out(OutputStream out) {
            super(out);
        }

        @Override
        public void write(int b) throws IOException {
            out.write(b);
            count(1);
        }

        @Override
        public void write(byte[] b, int off, int len) throws IOException {
            out.write(b, off, len);
            count(len);
        }

        private void count(long n) {
            NetRequest r = req;
            if (r != null) {
                r.bytesOut += n;
            }
        }

        @Override
        public void close() throws IOException {
            try {
                out.close();
            } catch (IOException | RuntimeException e) {
                fail(e);
                throw e;
            }
            NetRequest r = req;
            if (r != null && outStart >= 0 && !responded) {
                r.requestUs = Math.max(0, (System.nanoTime() - outStart) / 1000);
            }
        }
    }

    /** Counts the response body; its end or close ends the request. */
    private final class In extends FilterInputStream {
        In(InputStream in) {
            super(in);
        }

        @Override
        public int read() throws IOException {
            int b;
            try {
                b = in.read();
            } catch (IOException | RuntimeException e) {
                fail(e);
                throw e;
            }
            if (b < 0) {
                finish();
            } else {
                count(1);
            }
            return b;
        }

        @Override
        public int read(byte[] b, int off, int len) throws IOException {
            int n;
            try {
                n = in.read(b, off, len);
            } catch (IOException | RuntimeException e) {
                fail(e);
                throw e;
            }
            if (n < 0) {
                finish();
            } else {
                count(n);
            }
            return n;
        }

        @Override
        public long skip(long n) throws IOException {
            long k = in.skip(n);
            count(k);
            return k;
        }

        private void count(long n) {
            NetRequest r = req;
            if (r != null && n > 0) {
                r.bytesIn += n;
            }
        }

        @Override
        public void close() throws IOException {
            try {
                in.close();
            } finally {
                finish();
            }
        }
    }
}
