package io.beatline.runtime;

import java.io.ByteArrayOutputStream;
import java.io.File;
import java.io.FileInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.security.KeyStore;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import javax.net.ssl.KeyManagerFactory;
import javax.net.ssl.SSLContext;

/**
 * A small HTTP/1.1 server on 127.0.0.1 for the network tests (issue 16),
 * plain or TLS (a PKCS12 key store the test made with keytool), that counts
 * the exact bytes of every exchange: the request line, headers and body it
 * read, the status line, headers and body it wrote (application bytes, TLS
 * excluded). Keep-alive; every response has a Content-Length.
 *
 * <p>Paths: {@code /redirect} → 302 to {@code /landing}; {@code /missing},
 * {@code /url/missing} → 404; {@code /fail} → 500; {@code /slow} → 200
 * after 1.5 s; {@code /echo}, {@code /url/post} → 200 with the request body;
 * anything else → 200 {@code "hello <path>"}.
 */
final class NetWeb implements AutoCloseable {
    /** One request and its response, as the server saw them. */
    static final class Exchange {
        final String method;
        /** The request target (path and query). */
        final String target;
        final long in;
        final long out;
        final int status;

        Exchange(String method, String target, long in, long out, int status) {
            this.method = method;
            this.target = target;
            this.in = in;
            this.out = out;
            this.status = status;
        }
    }

    private final ServerSocket ss;
    private final List<Socket> open = new ArrayList<Socket>();
    final List<Exchange> seen = new ArrayList<Exchange>();
    private final Thread acceptor;
    private volatile boolean closed;

    /** @param keyStore a PKCS12 key store for TLS, or null for plain HTTP */
    NetWeb(File keyStore, String password) throws Exception {
        if (keyStore == null) {
            ss = new ServerSocket(0, 50, InetAddress.getByName("127.0.0.1"));
        } else {
            KeyStore ks = KeyStore.getInstance("PKCS12");
            try (InputStream in = new FileInputStream(keyStore)) {
                ks.load(in, password.toCharArray());
            }
            KeyManagerFactory kmf = KeyManagerFactory.getInstance(KeyManagerFactory.getDefaultAlgorithm());
            kmf.init(ks, password.toCharArray());
            SSLContext ctx = SSLContext.getInstance("TLS");
            ctx.init(kmf.getKeyManagers(), null, null);
            ss = ctx.getServerSocketFactory().createServerSocket(0, 50, InetAddress.getByName("127.0.0.1"));
        }
        acceptor = new Thread(this::accept, "netweb-accept");
        acceptor.setDaemon(true);
        acceptor.start();
    }

    int port() {
        return ss.getLocalPort();
    }

    /** Exchanges whose target starts with prefix. */
    synchronized List<Exchange> to(String prefix) {
        List<Exchange> l = new ArrayList<Exchange>();
        for (Exchange e : seen) {
            if (e.target.startsWith(prefix)) {
                l.add(e);
            }
        }
        return l;
    }

    private void accept() {
        while (!closed) {
            try {
                final Socket s = ss.accept();
                synchronized (this) {
                    open.add(s);
                }
                Thread t = new Thread(() -> serve(s), "netweb-conn");
                t.setDaemon(true);
                t.start();
            } catch (IOException e) {
                return; // closed
            }
        }
    }

    /** One line up to CRLF (the CRLF included in the count); null at EOF. */
    private static String line(InputStream in, long[] count) throws IOException {
        ByteArrayOutputStream b = new ByteArrayOutputStream();
        int c;
        while ((c = in.read()) >= 0) {
            count[0]++;
            if (c == '\n') {
                byte[] x = b.toByteArray();
                int n = x.length > 0 && x[x.length - 1] == '\r' ? x.length - 1 : x.length;
                return new String(x, 0, n, StandardCharsets.ISO_8859_1);
            }
            b.write(c);
            if (b.size() > 65536) {
                throw new IOException("line too long");
            }
        }
        return null;
    }

    private void serve(Socket s) {
        try (Socket sock = s) {
            sock.setSoTimeout(20000);
            InputStream in = sock.getInputStream();
            OutputStream out = sock.getOutputStream();
            for (int round = 0; round < 1000 && !closed; round++) {
                long[] count = {0};
                String first = line(in, count);
                if (first == null || first.isEmpty()) {
                    return;
                }
                String[] parts = first.split(" ");
                long length = 0;
                String h;
                while ((h = line(in, count)) != null && !h.isEmpty()) {
                    int colon = h.indexOf(':');
                    if (colon > 0 && h.substring(0, colon).trim().toLowerCase(Locale.ROOT).equals("content-length")) {
                        length = Long.parseLong(h.substring(colon + 1).trim());
                    }
                }
                byte[] body = new byte[(int) Math.min(length, 1 << 20)];
                int got = 0;
                while (got < body.length) {
                    int n = in.read(body, got, body.length - got);
                    if (n < 0) {
                        return;
                    }
                    got += n;
                }
                count[0] += got;
                String target = parts.length > 1 ? parts[1] : "/";
                String path = target.indexOf('?') >= 0 ? target.substring(0, target.indexOf('?')) : target;
                int status = 200;
                String reason = "OK";
                String extra = "";
                byte[] resp;
                if (path.equals("/redirect")) {
                    status = 302;
                    reason = "Found";
                    extra = "Location: /landing\r\n";
                    resp = new byte[0];
                } else if (path.equals("/missing") || path.equals("/url/missing")) {
                    status = 404;
                    reason = "Not Found";
                    resp = "not found".getBytes(StandardCharsets.UTF_8);
                } else if (path.equals("/fail")) {
                    status = 500;
                    reason = "Internal Server Error";
                    resp = "boom".getBytes(StandardCharsets.UTF_8);
                } else if (path.equals("/echo") || path.equals("/url/post")) {
                    resp = body;
                } else {
                    if (path.equals("/slow")) {
                        Thread.sleep(1500);
                    }
                    resp = ("hello " + path).getBytes(StandardCharsets.UTF_8);
                }
                String head = "HTTP/1.1 " + status + " " + reason + "\r\nContent-Type: text/plain\r\nContent-Length: "
                        + resp.length + "\r\n" + extra + "\r\n";
                byte[] hb = head.getBytes(StandardCharsets.ISO_8859_1);
                try {
                    out.write(hb);
                    out.write(resp);
                    out.flush();
                } finally {
                    synchronized (this) {
                        seen.add(new Exchange(parts[0], target, count[0], hb.length + resp.length, status));
                    }
                }
            }
        } catch (Exception e) {
            // the client went away (a timeout test) or the server closes
        }
    }

    @Override
    public void close() throws IOException {
        closed = true;
        ss.close();
        synchronized (this) {
            for (Socket s : open) {
                try {
                    s.close();
                } catch (IOException e) {
                    // closing anyway
                }
            }
        }
    }
}
