package io.beatline.runtime;

/**
 * One network request being timed (issue 16): what the OkHttp listener and
 * the HttpURLConnection wrapper of {@code io.beatline.runtime.net} fill, and
 * the {@code network} event it becomes (schema/batch-format.md, "Events",
 * {@code network}). Public for that package only; not an app API.
 *
 * <p>Made by {@link #begin()} on the calling thread (for OkHttp's
 * {@code enqueue}, the enqueuing thread): it reads the session clock, the
 * thread's name and the innermost call open on the thread (the
 * {@code caller}). {@link #end()} hands it to the session, which uploads it
 * in both upload modes. A request is filled by one thread at a time (OkHttp
 * calls a call's listener in order; the wrapper of a connection is the
 * app's to share), and {@link #end()} acts once.
 */
public final class NetRequest {
    /** Records read backwards to find the caller (at most). */
    static final int CALLER_SCAN = 4096;

    /** HTTP method, e.g. "GET" (upper-cased and checked when encoded). */
    public String method;
    /** "http" or "https". */
    public String scheme;
    /** Host (lower-cased when encoded). */
    public String host;
    /** Port, 1..65535 (the scheme's default when the URL has none). */
    public int port;
    /** Path without query or fragment; "/" when empty; at most {@link #KEEP_PATH} chars kept. */
    public String path;
    /**
     * The query's parameter names (after '?', before '#'), joined by '&',
     * or null: {@link #url} keeps the names only (at most
     * {@link #MAX_QUERY_KEYS}, each cut to 256 bytes), never the values, so
     * that a queued request holds a bounded copy of its URL.
     */
    public String query;
    /** HTTP status, or 0 when the call failed before a response. */
    public int status;
    /** "http/1.1", "h2", … or null. */
    public String protocol;
    /** The failure's exception class (binary name), or null. */
    public String error;
    /** Request and response bytes, headers and body. */
    public long bytesOut;
    public long bytesIn;
    /** Phase durations, µs; -1 = the phase did not happen (or cannot be seen). */
    public long dnsUs = -1;
    public long connectUs = -1;
    public long tlsUs = -1;
    public long requestUs = -1;
    public long ttfbUs = -1;
    public long bodyUs = -1;
    /** 1: a pooled connection was reused, 0: a new one, -1: unknown. */
    public int reused = -1;

    private final Session session;
    /** Session clock µs at the start. */
    final long beginUs;
    /** System.nanoTime() at the start: the total is measured with it. */
    private final long beginNanos;
    /** Session clock µs at the end (beginUs + total). */
    long endUs;
    /** Innermost open call on the calling thread at the start, or -1. */
    final int caller;
    final String threadName;
    private boolean ended;

    NetRequest(Session s, long beginUs, int caller, String threadName) {
        session = s;
        this.beginUs = beginUs;
        this.beginNanos = System.nanoTime();
        this.caller = caller;
        this.threadName = threadName;
    }

    /**
     * A request starts now on the calling thread. Never throws.
     *
     * @return null when the runtime is not running (nothing is recorded)
     */
    public static NetRequest begin() {
        Session s = Beatline.session();
        if (s == null) {
            return null;
        }
        try {
            Recorder rec = s.recorder;
            Ring r = rec.ring();
            int caller = r.on ? r.innermostOpen(CALLER_SCAN) : -1;
            return new NetRequest(s, rec.clock.nowMicros(), caller, Thread.currentThread().getName());
        } catch (Throwable t) {
            return null;
        }
    }

    /** Whether the runtime runs now (the wrappers skip their work when not). */
    public static boolean active() {
        return Beatline.session() != null;
    }

    /** µs since {@link #begin()} (System.nanoTime()). */
    public long sinceBeginUs(long nanos) {
        return Math.max(0, (nanos - beginNanos) / 1000);
    }

    /**
     * The request is over: its event is queued for upload (first call only).
     * Never throws.
     */
    public void end() {
        long now = System.nanoTime();
        synchronized (this) {
            if (ended) {
                return;
            }
            ended = true;
        }
        endUs = beginUs + sinceBeginUs(now);
        try {
            session.network(this);
        } catch (Throwable t) {
            // never into the app
        }
    }

    /** Whether {@link #end()} was called. */
    public synchronized boolean ended() {
        return ended;
    }

    /**
     * Fills scheme, host, port, path and query from a URL's parts.
     *
     * @param port the URL's port, or -1 for the scheme's default
     */
    public void url(String scheme, String host, int port, String path, String query) {
        this.scheme = scheme == null ? null : scheme.toLowerCase(java.util.Locale.ROOT);
        this.host = host;
        this.port = port > 0 ? port : "https".equals(this.scheme) ? 443 : 80;
        this.path = path == null || path.isEmpty() ? "/"
                : path.length() > KEEP_PATH ? path.substring(0, KEEP_PATH) : path;
        this.query = queryKeys(query);
    }

    /**
     * Path chars kept: more than the 2,048 bytes the event sends (a char is
     * at least a byte), so the event is the same as with the whole path.
     */
    static final int KEEP_PATH = 2050;

    /** The non-empty parameter names of a raw query, at most MAX_QUERY_KEYS, each cut; null when none. */
    private static String queryKeys(String query) {
        if (query == null || query.isEmpty()) {
            return null;
        }
        StringBuilder sb = new StringBuilder();
        int n = 0;
        for (int at = 0; at <= query.length() && n < MAX_QUERY_KEYS;) {
            int amp = query.indexOf('&', at);
            int end = amp < 0 ? query.length() : amp;
            int eq = query.indexOf('=', at);
            String k = query.substring(at, eq >= 0 && eq < end ? eq : end);
            if (!k.isEmpty()) {
                if (n++ > 0) {
                    sb.append('&');
                }
                sb.append(Blocks.cut(k, 256));
            }
            if (amp < 0) {
                break;
            }
            at = amp + 1;
        }
        return n == 0 ? null : sb.toString();
    }

    /** Most query parameter names sent (the contract's cap). */
    static final int MAX_QUERY_KEYS = 32;

    /**
     * The event line (ended by {@code \n}); null when the request cannot be
     * described by the contract (no method letters, no host, a scheme other
     * than http/https): such requests are counted, not sent.
     *
     * @param origin the batch origin, session clock µs (begin_us and end_us are relative to it)
     * @param device the installation id
     * @param keepQuery send {@code query_keys}
     */
    String event(long origin, String device, boolean keepQuery) {
        String m = method == null ? "GET" : method.toUpperCase(java.util.Locale.ROOT);
        if (m.isEmpty() || m.length() > 16) {
            return null;
        }
        for (int i = 0; i < m.length(); i++) {
            char c = m.charAt(i);
            if (c < 'A' || c > 'Z') {
                return null;
            }
        }
        if (!"http".equals(scheme) && !"https".equals(scheme)) {
            return null;
        }
        String h = host == null ? "" : host.toLowerCase(java.util.Locale.ROOT);
        if (h.startsWith("[") && h.endsWith("]")) {
            h = h.substring(1, h.length() - 1); // IPv6 literal
        }
        if (h.isEmpty() || h.getBytes(BatchEncoder.UTF8).length > 255 || port < 1 || port > 65535) {
            return null;
        }
        StringBuilder sb = new StringBuilder(384);
        long begin = Math.max(0, beginUs - origin);
        long end = Math.max(begin, endUs - origin);
        sb.append("{\"type\":\"network\",\"device\":");
        Blocks.str(sb, Blocks.cut(device, 64));
        if (threadName != null) {
            sb.append(",\"thread_name\":");
            Blocks.str(sb, Blocks.cut(threadName, 256));
        }
        sb.append(",\"begin_us\":").append(begin).append(",\"end_us\":").append(end);
        sb.append(",\"method\":\"").append(m).append("\",\"scheme\":\"").append(scheme).append('"');
        sb.append(",\"host\":");
        Blocks.str(sb, h);
        sb.append(",\"port\":").append(port).append(",\"path\":");
        String p = path == null || !path.startsWith("/") ? "/" + (path == null ? "" : path) : path;
        int q = p.indexOf('?');
        if (q >= 0) {
            p = p.substring(0, q);
        }
        int f = p.indexOf('#');
        if (f >= 0) {
            p = p.substring(0, f);
        }
        Blocks.str(sb, Blocks.cut(p, 2048));
        if (keepQuery && query != null && !query.isEmpty()) {
            sb.append(",\"query_keys\":[");
            int n = 0;
            for (String part : query.split("&")) {
                if (n == MAX_QUERY_KEYS) {
                    break;
                }
                int eq = part.indexOf('=');
                String k = eq >= 0 ? part.substring(0, eq) : part;
                if (k.isEmpty()) {
                    continue;
                }
                if (n++ > 0) {
                    sb.append(',');
                }
                Blocks.str(sb, Blocks.cut(k, 256));
            }
            sb.append(']');
        }
        if (status >= 100 && status <= 599) {
            sb.append(",\"status\":").append(status);
        }
        if (protocol != null && !protocol.isEmpty()) {
            sb.append(",\"protocol\":");
            Blocks.str(sb, Blocks.cut(protocol, 16));
        }
        if (error != null) {
            sb.append(",\"error\":");
            Blocks.str(sb, Blocks.cut(error, 256));
        }
        sb.append(",\"bytes_out\":").append(Math.max(0, bytesOut)).append(",\"bytes_in\":")
                .append(Math.max(0, bytesIn));
        phase(sb, "dns_us", dnsUs);
        phase(sb, "connect_us", connectUs);
        phase(sb, "tls_us", tlsUs);
        phase(sb, "request_us", requestUs);
        phase(sb, "ttfb_us", ttfbUs);
        phase(sb, "body_us", bodyUs);
        sb.append(",\"total_us\":").append(end - begin);
        if (reused >= 0) {
            sb.append(",\"reused\":").append(reused == 1);
        }
        if (caller >= 0) {
            sb.append(",\"caller\":").append(caller);
        }
        return sb.append("}\n").toString();
    }

    private static void phase(StringBuilder sb, String name, long us) {
        if (us >= 0) {
            sb.append(",\"").append(name).append("\":").append(us);
        }
    }
}
