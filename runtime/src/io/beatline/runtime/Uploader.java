package io.beatline.runtime;

import java.io.ByteArrayOutputStream;
import java.io.File;
import java.io.FileInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.HttpURLConnection;
import java.net.URL;
import java.net.URLEncoder;
import java.text.SimpleDateFormat;
import java.util.Date;
import java.util.List;
import java.util.Locale;
import java.util.Random;
import java.util.TimeZone;

/**
 * Uploads spooled batches, oldest first, to {@code POST
 * <server>/v1/apps/<app>/batches} (docs/api.md, "Ingest") with
 * {@code Content-Encoding: gzip} (RFC 1952; the spool files are sent as
 * they are), {@code Content-Type: application/octet-stream} and
 * {@code Authorization: Bearer <ingest key>}, through
 * {@link HttpURLConnection}.
 *
 * <p>Answers:
 * <ul>
 * <li>2xx (202 accepted, 200 duplicate): the file is deleted.</li>
 * <li>429 and 503: retried after the {@code Retry-After} delay (RFC 9110
 *     §10.2.3: seconds or an HTTP-date; capped at {@code backoffMaxMillis}),
 *     or after the backoff when there is none.</li>
 * <li>408 and every other 5xx, connection failures, timeouts: retried after
 *     an exponential backoff with jitter: attempt {@code n} (0-based) waits a
 *     uniformly random delay in {@code [c/2, c]}, {@code c = min(max, base·2^n)}.</li>
 * <li>any other 4xx (400 malformed, 401/403 key or unknown app, 413 too large,
 *     415): the file is deleted, counted in {@code dropped4xx} and logged
 *     with the server's message (once per distinct status and message); the
 *     next file is tried at once.</li>
 * </ul>
 * A failure stops the pass (later files wait their turn: order is kept).
 * One pass at a time (callers serialise; {@link Beatline} does).
 */
final class Uploader {
    private final URL url;
    private final String key;
    private final Spool spool;
    private final long baseMs;
    private final long maxMs;
    private final int timeoutMs;
    private final Log log;
    private final Random random = new Random();
    private int attempt;
    /** Counters: written by the one uploading thread (under the session's upload lock), read by stats. */
    volatile long uploaded;
    volatile long dropped4xx;
    /** Status and message of the last refusal logged (passes run one at a time, under the upload lock). */
    private String lastRefusal;
    volatile long failures;
    /**
     * Why uploads cannot work with this configuration (issue 14: an HTTPS
     * handshake failure, Android's "cleartext not permitted"), set when a
     * pass returned {@code retryInMillis} -1; null otherwise.
     */
    volatile String fatal;

    Uploader(String server, String app, String key, Spool spool, long baseMs, long maxMs, int timeoutMs, Log log)
            throws IOException {
        this.url = new URL(server + "/v1/apps/" + URLEncoder.encode(app, "UTF-8").replace("+", "%20") + "/batches");
        this.key = key;
        this.spool = spool;
        this.baseMs = baseMs;
        this.maxMs = maxMs;
        this.timeoutMs = timeoutMs;
        this.log = log;
    }

    /** What a pass ended with. */
    static final class Pass {
        /** Files uploaded (2xx) in this pass. */
        final int sent;
        /** ms to wait before the next pass; 0 when the spool is empty. */
        final long retryInMillis;
        /** The last HTTP status seen, or -1 for a connection failure, 0 when nothing was sent. */
        final int lastStatus;

        Pass(int sent, long retryInMillis, int lastStatus) {
            this.sent = sent;
            this.retryInMillis = retryInMillis;
            this.lastStatus = lastStatus;
        }
    }

    /**
     * Uploads spool files until the spool is empty, a failure happens, or
     * {@code deadline} ({@code System.nanoTime()} value; {@code Long.MAX_VALUE}
     * for none) passes. Never throws.
     */
    Pass pass(long deadlineNanos) {
        int sent = 0;
        int status = 0;
        for (File f : spool.list()) {
            long left = (deadlineNanos - System.nanoTime()) / 1000000L;
            if (deadlineNanos != Long.MAX_VALUE && left <= 0) {
                return new Pass(sent, 1, status);
            }
            int timeout = (int) Math.max(1, Math.min(timeoutMs, deadlineNanos == Long.MAX_VALUE ? timeoutMs : left));
            Response r = post(f, timeout);
            status = r.status;
            if (r.status == -1 && r.fatal) {
                failures++;
                fatal = r.body;
                return new Pass(sent, -1, status); // retrying would fail the same way: surface it
            }
            if (r.status == -2) {
                continue; // the file went away (another process sent it): next one
            }
            if (r.status >= 200 && r.status < 300) {
                f.delete();
                uploaded++;
                sent++;
                attempt = 0;
                log.debug("uploaded " + f.getName() + ": " + r.status);
                continue;
            }
            if (r.status >= 400 && r.status < 500 && r.status != 408 && r.status != 429) {
                f.delete();
                dropped4xx++;
                attempt = 0;
                // one line per status and message, not per batch (a wrong key refuses them all)
                String why = r.status + " " + r.body;
                if (!why.equals(lastRefusal)) {
                    lastRefusal = why;
                    log.warn("server refused batch " + f.getName() + " (HTTP " + r.status + "): " + r.body
                            + "; batch dropped (later batches refused the same way are dropped silently,"
                            + " counted in dropped4xx)");
                } else {
                    log.debug("server refused batch " + f.getName() + " (HTTP " + r.status + "); dropped");
                }
                continue;
            }
            failures++;
            long wait;
            if ((r.status == 429 || r.status == 503) && r.retryAfterMs >= 0) {
                wait = Math.min(r.retryAfterMs, maxMs); // the server's word (RFC 9110 §10.2.3)
            } else {
                wait = backoff();
            }
            log.debug("upload of " + f.getName() + " failed ("
                    + (r.status == -1 ? r.body : "HTTP " + r.status) + "); retry in " + wait + " ms");
            return new Pass(sent, Math.max(1, wait), status);
        }
        return new Pass(sent, 0, status);
    }

    /** Next backoff delay (and counts the attempt). */
    long backoff() {
        long c = baseMs << Math.min(attempt, 30);
        if (c <= 0 || c > maxMs) {
            c = maxMs;
        }
        attempt++;
        long half = c / 2;
        return half + (long) (random.nextDouble() * (c - half + 1));
    }

    private static final class Response {
        final int status;
        final String body;
        final long retryAfterMs;
        /** A transport error that retrying cannot mend ({@link #configError}). */
        final boolean fatal;

        Response(int status, String body, long retryAfterMs) {
            this(status, body, retryAfterMs, false);
        }

        Response(int status, String body, long retryAfterMs, boolean fatal) {
            this.status = status;
            this.body = body;
            this.retryAfterMs = retryAfterMs;
            this.fatal = fatal;
        }
    }

    private Response post(File f, int timeout) {
        byte[] body;
        try {
            body = readAll(f);
        } catch (IOException e) {
            return new Response(-2, "gone", -1);
        }
        HttpURLConnection c = null;
        try {
            c = (HttpURLConnection) url.openConnection();
            c.setRequestMethod("POST");
            c.setConnectTimeout(timeout);
            c.setReadTimeout(timeout);
            c.setUseCaches(false);
            c.setDoOutput(true);
            c.setFixedLengthStreamingMode(body.length);
            c.setRequestProperty("Content-Type", "application/octet-stream");
            c.setRequestProperty("Content-Encoding", "gzip");
            c.setRequestProperty("Authorization", "Bearer " + key);
            OutputStream os = c.getOutputStream();
            try {
                os.write(body);
            } finally {
                os.close();
            }
            int status = c.getResponseCode();
            InputStream in = status >= 400 ? c.getErrorStream() : c.getInputStream();
            String text = in == null ? "" : readSome(in, 4096);
            long retryAfter = parseRetryAfter(c.getHeaderField("Retry-After"), System.currentTimeMillis());
            return new Response(status, text, retryAfter);
        } catch (IOException e) {
            return new Response(-1, e.toString(), -1, configError(e));
        } catch (RuntimeException e) {
            return new Response(-1, e.toString(), -1);
        }
    }

    /**
     * Parses a Retry-After value (RFC 9110 §10.2.3): delay-seconds or an
     * IMF-fixdate.
     *
     * @return ms to wait (0 or more), or -1 when absent or unreadable
     */
    /**
     * Whether an upload's exception is a configuration error that retrying
     * cannot mend (issue 14): TLS failed (a certificate the device does not
     * trust, a plain-HTTP server behind an https:// URL), or Android refused
     * cleartext ({@code UnknownServiceException: CLEARTEXT communication …
     * not permitted by network security policy}). A TLS error caused by the
     * connection breaking (a socket error or time-out underneath) is not.
     */
    static boolean configError(IOException e) {
        if (e instanceof java.net.UnknownServiceException) {
            return true;
        }
        if (!(e instanceof javax.net.ssl.SSLException)) {
            return false;
        }
        for (Throwable c = e.getCause(); c != null && c != c.getCause(); c = c.getCause()) {
            if (c instanceof java.net.SocketException || c instanceof java.io.InterruptedIOException
                    || c instanceof java.io.EOFException) {
                return false;
            }
        }
        return true;
    }

    static long parseRetryAfter(String v, long nowMillis) {
        if (v == null) {
            return -1;
        }
        v = v.trim();
        if (v.matches("[0-9]{1,9}")) {
            return Long.parseLong(v) * 1000L;
        }
        try {
            SimpleDateFormat f = new SimpleDateFormat("EEE, dd MMM yyyy HH:mm:ss zzz", Locale.US);
            f.setTimeZone(TimeZone.getTimeZone("GMT"));
            Date d = f.parse(v);
            return Math.max(0, d.getTime() - nowMillis);
        } catch (Exception e) {
            return -1;
        }
    }

    private static byte[] readAll(File f) throws IOException {
        FileInputStream in = new FileInputStream(f);
        try {
            ByteArrayOutputStream out = new ByteArrayOutputStream((int) Math.max(16, f.length()));
            byte[] buf = new byte[65536];
            int n;
            while ((n = in.read(buf)) > 0) {
                out.write(buf, 0, n);
            }
            return out.toByteArray();
        } finally {
            in.close();
        }
    }

    /** Reads the whole stream (so the connection can be reused), keeping the first {@code max} bytes as text. */
    private static String readSome(InputStream in, int max) throws IOException {
        try {
            ByteArrayOutputStream out = new ByteArrayOutputStream();
            byte[] buf = new byte[4096];
            int n;
            while ((n = in.read(buf)) > 0) {
                if (out.size() < max) {
                    out.write(buf, 0, Math.min(n, max - out.size()));
                }
            }
            return new String(out.toByteArray(), BatchEncoder.UTF8).trim();
        } finally {
            in.close();
        }
    }

    /** For callers that list the spool to decide whether to wait. */
    boolean spoolEmpty() {
        List<File> l = spool.list();
        return l.isEmpty();
    }
}
