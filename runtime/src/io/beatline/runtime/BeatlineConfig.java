package io.beatline.runtime;

import java.io.File;
import java.util.Map;

/**
 * What {@link Beatline#start(BeatlineConfig)} needs: where to upload, as
 * which app and build, buffer sizes, intervals, spool bounds and the platform
 * pieces ({@link Clock}, {@link ThreadPolicy}, {@link Lifecycle},
 * {@link DeviceInfo}, {@link Log}). Immutable; made with {@link Builder} or
 * read from system properties / environment with {@link #fromSystem}.
 *
 * <p>Every setting, its system property, environment variable and default
 * is listed in {@code runtime/README.md}.
 */
public final class BeatlineConfig {
    /** Server base URL, e.g. {@code http://127.0.0.1:8080} (no trailing path). */
    public final String server;
    /** App name on the server ({@code beatline-server app create NAME}). */
    public final String app;
    /** App build (the build the method-ID file was uploaded for). */
    /**
     * The build in every batch header: the generated class's {@code BUILD}
     * when the app has one (schema/build-id.md), else the configured build.
     */
    public final String build;
    /** Non-null when a configured build was replaced by the generated one: says so (logged at start). */
    public final String buildNote;
    /** Ingest key ({@code blk_ing_…}), sent as {@code Authorization: Bearer}. */
    public final String ingestKey;
    /** Records (8 bytes each) in the main thread's ring buffer; a power of two. */
    public final int mainBufferRecords;
    /** Records in each other traced thread's ring buffer; a power of two. */
    public final int threadBufferRecords;
    /** Whether threads other than main are traced (when no custom {@link ThreadPolicy}). */
    public final boolean traceOtherThreads;
    /** At most this many threads traced at once. */
    public final int maxThreads;
    /** ms between regular dumps of the ring buffers into the spool. */
    public final long flushIntervalMillis;
    /** A ring buffer at least this full (0.05..1) is dumped before the interval ends; 0: never early. */
    public final double flushFill;
    /** At most this many records in one batch (larger dumps are split). */
    public final int maxBatchRecords;
    /**
     * At most this many records (8 bytes each) copied out of the rings and
     * not yet spooled; past it the dumper stops copying and the rings keep
     * the rest (a ring that wraps loses records, counted as truncated).
     */
    public final long maxPendingRecords;
    /** Spool directory (created when missing). */
    public final File spoolDir;
    /** At most this many batch files in the spool; the oldest are deleted first. */
    public final int spoolMaxFiles;
    /** At most this many bytes of batch files in the spool; the oldest are deleted first. */
    public final long spoolMaxBytes;
    /** First retry delay after a failed upload, ms (doubles per failure, with jitter). */
    public final long backoffBaseMillis;
    /** Largest retry delay, ms (also the cap on a server's Retry-After). */
    public final long backoffMaxMillis;
    /** HTTP connect and read timeout, ms. */
    public final int httpTimeoutMillis;
    /** ms the shutdown hook waits for uploads. */
    public final long shutdownWaitMillis;
    /** Monotonic clock of the probes (null: {@link NanoClock}). */
    public final Clock clock;
    /** Main-thread detector and thread filter (null: {@link JvmThreadPolicy}). */
    public final ThreadPolicy threadPolicy;
    /** Life-cycle hooks (null: {@link JvmLifecycle}). */
    public final Lifecycle lifecycle;
    /** Device fields of the batch header (null: {@link JvmDeviceInfo}). */
    public final DeviceInfo device;
    /** Where problems are reported (null: {@link Log#STDERR}). */
    public final Log log;
    /** Message-dispatch monitor on the plain JVM: {@code "none"} or {@code "awt"} (Android installs its own). */
    public final String dispatch;
    /** A main-thread dispatch at least this long is a block, ms. */
    public final long blockThresholdMillis;
    /** The watchdog reports a dispatch still running after this long (ANR), ms; 0: no watchdog. */
    public final long anrThresholdMillis;
    /** {@code "full"} (every record uploaded) or {@code "triggered"} (only windows around events). */
    public final String uploadMode;
    /** Triggered mode: fraction 0..1 of sessions uploaded in full. */
    public final double sampleRate;
    /** Seed of the session's sampling draw (null: random). */
    public final Long sampleSeed;
    /** Triggered mode: the gated ticker clock's period, µs (its resolution). */
    public final long tickerPeriodMicros;
    /**
     * Phone behaviour (issue 14): {@link Beatline#flush()} and the life-cycle
     * flush hand the dump to the runtime's thread instead of doing it on the
     * caller's; {@link Beatline#flushAndWait} on the main thread (as the
     * {@link ThreadPolicy} says) hands it over too and returns at once. The
     * spool directory is opened on the runtime's thread.
     */
    public final boolean asyncFlush;
    /**
     * False (phone behaviour): the runtime's threads wait without a deadline
     * while idle (no records written since the last look, nothing to upload):
     * no periodic wake-ups; a flush, a block, a main-thread message
     * ({@link Beatline#nudge()}) or the app going to the background wakes
     * them. True (JVM default): the flush thread looks at the rings every
     * 10 … 200 ms and the upload thread at the spool every flush interval.
     */
    public final boolean idleWakeups;
    /**
     * Uploads start when the spool holds at least this many batches, or at a
     * flush ({@link Beatline#flush()}, the app going to the background); 1:
     * after every batch (JVM default).
     */
    public final int uploadMinBatches;
    /** Whether uploads may start now (null: always). */
    public final UploadGate uploadGate;
    /** Process name written into every batch header (issue 14; null: not written, the main process). */
    public final String process;
    /**
     * Network events (issue 16) carry the request's query parameter NAMES as
     * {@code query_keys} (values are never sent); false (default): no query
     * at all. Property {@code beatline.networkKeepQuery}.
     */
    public final boolean networkKeepQuery;

    private BeatlineConfig(Builder b) {
        server = b.server;
        app = b.app;
        build = b.build;
        buildNote = b.buildNote;
        ingestKey = b.ingestKey;
        mainBufferRecords = b.mainBufferRecords;
        threadBufferRecords = b.threadBufferRecords;
        traceOtherThreads = b.traceOtherThreads;
        maxThreads = b.maxThreads;
        flushIntervalMillis = b.flushIntervalMillis;
        flushFill = b.flushFill;
        maxBatchRecords = b.maxBatchRecords;
        maxPendingRecords = b.maxPendingRecords;
        spoolDir = b.spoolDir != null ? b.spoolDir : defaultSpool(b.app);
        spoolMaxFiles = b.spoolMaxFiles;
        spoolMaxBytes = b.spoolMaxBytes;
        backoffBaseMillis = b.backoffBaseMillis;
        backoffMaxMillis = b.backoffMaxMillis;
        httpTimeoutMillis = b.httpTimeoutMillis;
        shutdownWaitMillis = b.shutdownWaitMillis;
        clock = b.clock;
        threadPolicy = b.threadPolicy;
        lifecycle = b.lifecycle;
        device = b.device;
        log = b.log;
        dispatch = b.dispatch;
        blockThresholdMillis = b.blockThresholdMillis;
        anrThresholdMillis = b.anrThresholdMillis;
        uploadMode = b.uploadMode;
        sampleRate = b.sampleRate;
        sampleSeed = b.sampleSeed;
        tickerPeriodMicros = b.tickerPeriodMicros;
        asyncFlush = b.asyncFlush;
        idleWakeups = b.idleWakeups;
        uploadMinBatches = b.uploadMinBatches;
        uploadGate = b.uploadGate;
        process = b.process;
        networkKeepQuery = b.networkKeepQuery;
    }

    /** Whether this configuration asks for triggered uploads. */
    boolean triggered() {
        return "triggered".equals(uploadMode);
    }

    /** {@code <java.io.tmpdir>/beatline-<user.name>/<app>}, app name made file-safe. */
    static File defaultSpool(String app) {
        String user = System.getProperty("user.name", "user");
        String safeApp = (app == null ? "app" : app).replaceAll("[^A-Za-z0-9._-]", "_");
        String safeUser = user.replaceAll("[^A-Za-z0-9._-]", "_");
        return new File(new File(System.getProperty("java.io.tmpdir", "/tmp"), "beatline-" + safeUser), safeApp);
    }

    /** Builder with the documented defaults; {@link #build()} checks the values. */
    public static final class Builder {
        String server;
        String app;
        String build = "unknown";
        String buildNote;
        String ingestKey;
        int mainBufferRecords = 1 << 20;
        int threadBufferRecords = 1 << 15;
        boolean traceOtherThreads = true;
        int maxThreads = 64;
        long flushIntervalMillis = 30000;
        double flushFill = 0.5;
        int maxBatchRecords = 1 << 20;
        long maxPendingRecords = 1L << 22;
        File spoolDir;
        int spoolMaxFiles = 200;
        long spoolMaxBytes = 32L << 20;
        long backoffBaseMillis = 1000;
        long backoffMaxMillis = 300000;
        int httpTimeoutMillis = 15000;
        long shutdownWaitMillis = 5000;
        Clock clock;
        ThreadPolicy threadPolicy;
        Lifecycle lifecycle;
        DeviceInfo device;
        Log log;
        String dispatch = "none";
        long blockThresholdMillis = 700;
        long anrThresholdMillis = 5000;
        String uploadMode = "full";
        double sampleRate = 0.01;
        Long sampleSeed;
        long tickerPeriodMicros = 1000;
        boolean asyncFlush;
        boolean idleWakeups = true;
        int uploadMinBatches = 1;
        UploadGate uploadGate;
        String process;
        boolean networkKeepQuery;

        /** @param on send the query's parameter names with network events ({@link BeatlineConfig#networkKeepQuery}) */
        public Builder networkKeepQuery(boolean on) {
            networkKeepQuery = on;
            return this;
        }

        /** @param on phone behaviour: flushes on the runtime's thread ({@link BeatlineConfig#asyncFlush}) */
        public Builder asyncFlush(boolean on) {
            asyncFlush = on;
            return this;
        }

        /** @param on false: no periodic wake-ups while idle ({@link BeatlineConfig#idleWakeups}) */
        public Builder idleWakeups(boolean on) {
            idleWakeups = on;
            return this;
        }

        /** @param n upload when the spool holds this many batches, 1 … 10,000 ({@link BeatlineConfig#uploadMinBatches}) */
        public Builder uploadMinBatches(int n) {
            uploadMinBatches = n;
            return this;
        }

        /** @param g whether uploads may start now (null: always) */
        public Builder uploadGate(UploadGate g) {
            uploadGate = g;
            return this;
        }

        /** @param name process name for the batch header (null: the main process, not written); at most 255 bytes */
        public Builder process(String name) {
            process = name;
            return this;
        }

        /** @param d {@code "none"} or {@code "awt"}: the plain JVM's dispatch monitor */
        public Builder dispatch(String d) {
            dispatch = d;
            return this;
        }

        /** @param ms a dispatch at least this long is a block, ms (1 or more) */
        public Builder blockThresholdMillis(long ms) {
            blockThresholdMillis = ms;
            return this;
        }

        /** @param ms the watchdog reports a dispatch still running after this long, ms (0: no watchdog) */
        public Builder anrThresholdMillis(long ms) {
            anrThresholdMillis = ms;
            return this;
        }

        /** @param mode {@code "full"} or {@code "triggered"} */
        public Builder uploadMode(String mode) {
            uploadMode = mode;
            return this;
        }

        /** @param rate triggered mode: fraction 0..1 of sessions uploaded in full */
        public Builder sampleRate(double rate) {
            sampleRate = rate;
            return this;
        }

        /** @param seed seed of the sampling draw (tests: a deterministic draw); null: random */
        public Builder sampleSeed(Long seed) {
            sampleSeed = seed;
            return this;
        }

        /** @param us triggered mode: the gated ticker's period, µs, 10 … 1,000,000 */
        public Builder tickerPeriodMicros(long us) {
            tickerPeriodMicros = us;
            return this;
        }

        /** @param url server base URL, {@code http://host:port} or {@code https://…} */
        public Builder server(String url) {
            this.server = url;
            return this;
        }

        /** @param name the app's name on the server */
        public Builder app(String name) {
            this.app = name;
            return this;
        }

        /** @param name the app build, 1–128 bytes without control characters, '/' or '\' (default "unknown") */
        public Builder build(String name) {
            this.build = name;
            return this;
        }

        /** @param key the app's ingest key */
        public Builder ingestKey(String key) {
            this.ingestKey = key;
            return this;
        }

        /** @param records main thread ring size, power of two 4..2^26 (default 1,048,576 = 8 MiB) */
        public Builder mainBufferRecords(int records) {
            this.mainBufferRecords = records;
            return this;
        }

        /** @param records other threads' ring size, power of two 4..2^26 (default 32,768 = 256 KiB) */
        public Builder threadBufferRecords(int records) {
            this.threadBufferRecords = records;
            return this;
        }

        /** @param on trace threads other than main (default true) */
        public Builder traceOtherThreads(boolean on) {
            this.traceOtherThreads = on;
            return this;
        }

        /** @param n at most n threads traced at once, 1..65,536 (default 64) */
        public Builder maxThreads(int n) {
            this.maxThreads = n;
            return this;
        }

        /** @param ms ms between regular dumps, at least 10 (default 30,000) */
        public Builder flushIntervalMillis(long ms) {
            this.flushIntervalMillis = ms;
            return this;
        }

        /** @param fill dump early when a ring is this full, 0.05..1 (default 0.5); 0: only every interval */
        public Builder flushFill(double fill) {
            this.flushFill = fill;
            return this;
        }

        /** @param n records per batch at most, 1..2^24 (default 1,048,576 = 8 MiB) */
        public Builder maxBatchRecords(int n) {
            this.maxBatchRecords = n;
            return this;
        }

        /**
         * @param n records copied out of the rings and not yet spooled, at
         *        most, at least 1 (default 4,194,304 = 32 MiB); past it the
         *        rings keep the rest and may wrap
         */
        public Builder maxPendingRecords(long n) {
            this.maxPendingRecords = n;
            return this;
        }

        /** @param dir the spool directory (default {@code <tmpdir>/beatline-<user>/<app>}) */
        public Builder spoolDir(File dir) {
            this.spoolDir = dir;
            return this;
        }

        /** @param n batch files kept at most, at least 1 (default 200) */
        public Builder spoolMaxFiles(int n) {
            this.spoolMaxFiles = n;
            return this;
        }

        /** @param bytes bytes of batch files kept at most, at least 1 (default 32 MiB) */
        public Builder spoolMaxBytes(long bytes) {
            this.spoolMaxBytes = bytes;
            return this;
        }

        /** @param baseMs first retry delay, ms (default 1,000) @param maxMs largest, ms (default 300,000) */
        public Builder backoff(long baseMs, long maxMs) {
            this.backoffBaseMillis = baseMs;
            this.backoffMaxMillis = maxMs;
            return this;
        }

        /** @param ms HTTP connect/read timeout, ms (default 15,000) */
        public Builder httpTimeoutMillis(int ms) {
            this.httpTimeoutMillis = ms;
            return this;
        }

        /** @param ms how long the shutdown hook waits for uploads, ms (default 5,000) */
        public Builder shutdownWaitMillis(long ms) {
            this.shutdownWaitMillis = ms;
            return this;
        }

        /** @param c the probes' clock (default {@link NanoClock}) */
        public Builder clock(Clock c) {
            this.clock = c;
            return this;
        }

        /** @param p main-thread detector and filter (default {@link JvmThreadPolicy}) */
        public Builder threadPolicy(ThreadPolicy p) {
            this.threadPolicy = p;
            return this;
        }

        /** @param l life-cycle hooks (default {@link JvmLifecycle}) */
        public Builder lifecycle(Lifecycle l) {
            this.lifecycle = l;
            return this;
        }

        /** @param d device fields (default {@link JvmDeviceInfo}) */
        public Builder device(DeviceInfo d) {
            this.device = d;
            return this;
        }

        /** @param l problem reports (default {@link Log#STDERR}) */
        public Builder log(Log l) {
            this.log = l;
            return this;
        }

        /**
         * @return the configuration
         * @throws IllegalArgumentException naming the first bad setting
         */
        public BeatlineConfig build() {
            // the build the instrumenter generated into the app wins: uploads are keyed by it
            String gen = GeneratedBuild.name(Thread.currentThread().getContextClassLoader());
            if (gen != null && !gen.equals(build)) {
                buildNote = "unknown".equals(build) ? null
                        : "build " + build + " ignored: the app's generated " + GeneratedBuild.CLASS
                                + " names build " + gen;
                build = gen;
            }
            require(server != null && (server.startsWith("http://") || server.startsWith("https://"))
                    && validUrl(server), "server must be an http:// or https:// URL with a host: " + server);
            require(app != null && !app.isEmpty(), "app is required");
            require(!app.matches(".*[\\x00-\\x1f\\x7f/].*"), "app must not contain control characters or '/'");
            require(ingestKey != null && !ingestKey.isEmpty(), "ingest key is required");
            require(ingestKey.matches("[\\x21-\\x7e]+"), "ingest key must be printable ASCII without spaces");
            require(build != null && !build.isEmpty() && build.getBytes(BatchEncoder.UTF8).length <= 128
                    && !build.matches(".*[\\x00-\\x1f\\x7f/\\\\].*"),
                    "build must be 1-128 bytes without control characters, '/' or '\\': " + build);
            require(pow2(mainBufferRecords), "mainBufferRecords must be a power of two 4..2^26: " + mainBufferRecords);
            require(pow2(threadBufferRecords),
                    "threadBufferRecords must be a power of two 4..2^26: " + threadBufferRecords);
            require(maxThreads >= 1 && maxThreads <= 65536, "maxThreads must be 1..65536: " + maxThreads);
            require(flushIntervalMillis >= 10, "flushIntervalMillis must be >= 10: " + flushIntervalMillis);
            require(flushFill == 0 || flushFill >= 0.05 && flushFill <= 1, "flushFill must be 0 or 0.05..1: " + flushFill);
            require(maxBatchRecords >= 1 && maxBatchRecords <= (1 << 24), "maxBatchRecords must be 1..2^24");
            require(maxPendingRecords >= 1, "maxPendingRecords must be >= 1: " + maxPendingRecords);
            require(spoolMaxFiles >= 1, "spoolMaxFiles must be >= 1");
            require(spoolMaxBytes >= 1, "spoolMaxBytes must be >= 1");
            require(backoffBaseMillis >= 1 && backoffMaxMillis >= backoffBaseMillis,
                    "backoff must be 1 <= base <= max");
            require(httpTimeoutMillis >= 1, "httpTimeoutMillis must be >= 1");
            require(shutdownWaitMillis >= 0, "shutdownWaitMillis must be >= 0");
            require("none".equals(dispatch) || "awt".equals(dispatch), "dispatch must be none or awt: " + dispatch);
            require(blockThresholdMillis >= 1, "blockThresholdMillis must be >= 1: " + blockThresholdMillis);
            require(anrThresholdMillis >= 0, "anrThresholdMillis must be >= 0: " + anrThresholdMillis);
            require("full".equals(uploadMode) || "triggered".equals(uploadMode),
                    "uploadMode must be full or triggered: " + uploadMode);
            require(sampleRate >= 0 && sampleRate <= 1, "sampleRate must be 0..1: " + sampleRate);
            require(tickerPeriodMicros >= 10 && tickerPeriodMicros <= 1000000,
                    "tickerPeriodMicros must be 10..1000000: " + tickerPeriodMicros);
            require(uploadMinBatches >= 1 && uploadMinBatches <= 10000,
                    "uploadMinBatches must be 1..10000: " + uploadMinBatches);
            require(process == null || !process.isEmpty() && process.getBytes(BatchEncoder.UTF8).length <= 255
                    && !process.matches(".*[\\x00-\\x1f\\x7f].*"),
                    "process must be 1-255 bytes without control characters: " + process);
            while (server.endsWith("/")) {
                server = server.substring(0, server.length() - 1);
            }
            return new BeatlineConfig(this);
        }

        /** An absolute http(s) URL with a host and, if given, a port 1..65535. */
        private static boolean validUrl(String u) {
            try {
                java.net.URI uri = new java.net.URI(u);
                return uri.getHost() != null && !uri.getHost().isEmpty()
                        && (uri.getPort() == -1 || uri.getPort() >= 1 && uri.getPort() <= 65535);
            } catch (java.net.URISyntaxException e) {
                return false;
            }
        }

        private static boolean pow2(int n) {
            return n >= 4 && n <= (1 << 26) && Integer.bitCount(n) == 1;
        }

        private static void require(boolean ok, String msg) {
            if (!ok) {
                throw new IllegalArgumentException(msg);
            }
        }
    }

    /**
     * Reads the configuration a plain JVM program is started with: for each
     * setting the system property {@code beatline.X} first, then the
     * environment variable {@code BEATLINE_X} (names in runtime/README.md).
     *
     * @return null when {@code beatline.server} is not set anywhere (Beatline
     *         is not wanted: probes stay off, silently)
     * @throws IllegalArgumentException when it is set but something is
     *         missing or malformed (the message names it)
     */
    public static BeatlineConfig fromSystem(Map<String, String> props, Map<String, String> env) {
        Src s = new Src(props, env);
        String server = s.get("server", "SERVER");
        if (server == null) {
            return null;
        }
        if (s.get("app", "APP") == null) {
            throw new IllegalArgumentException("beatline.app (BEATLINE_APP) is required");
        }
        if (s.get("key", "KEY") == null) {
            throw new IllegalArgumentException("beatline.key (BEATLINE_KEY), the app's ingest key, is required");
        }
        Builder b = new Builder().server(server).app(s.get("app", "APP")).ingestKey(s.get("key", "KEY"));
        String v;
        if ((v = s.get("build", "BUILD")) != null) {
            b.build(v);
        }
        if ((v = s.get("spool", "SPOOL")) != null) {
            b.spoolDir(new File(v));
        }
        if ((v = s.get("threads", "THREADS")) != null) {
            if (!v.equals("all") && !v.equals("main")) {
                throw new IllegalArgumentException("beatline.threads must be all or main: " + v);
            }
            b.traceOtherThreads(v.equals("all"));
        }
        if ((v = s.get("mainBuffer", "MAIN_BUFFER")) != null) {
            b.mainBufferRecords(num32("mainBuffer", v));
        }
        if ((v = s.get("threadBuffer", "THREAD_BUFFER")) != null) {
            b.threadBufferRecords(num32("threadBuffer", v));
        }
        if ((v = s.get("maxThreads", "MAX_THREADS")) != null) {
            b.maxThreads(num32("maxThreads", v));
        }
        if ((v = s.get("flushIntervalMs", "FLUSH_INTERVAL_MS")) != null) {
            b.flushIntervalMillis(num("flushIntervalMs", v));
        }
        if ((v = s.get("maxPendingRecords", "MAX_PENDING_RECORDS")) != null) {
            b.maxPendingRecords(num("maxPendingRecords", v));
        }
        if ((v = s.get("spoolMaxFiles", "SPOOL_MAX_FILES")) != null) {
            b.spoolMaxFiles(num32("spoolMaxFiles", v));
        }
        if ((v = s.get("spoolMaxBytes", "SPOOL_MAX_BYTES")) != null) {
            b.spoolMaxBytes(num("spoolMaxBytes", v));
        }
        if ((v = s.get("shutdownWaitMs", "SHUTDOWN_WAIT_MS")) != null) {
            b.shutdownWaitMillis(num("shutdownWaitMs", v));
        }
        long base = b.backoffBaseMillis;
        long max = b.backoffMaxMillis;
        if ((v = s.get("backoffBaseMs", "BACKOFF_BASE_MS")) != null) {
            base = num("backoffBaseMs", v);
        }
        if ((v = s.get("backoffMaxMs", "BACKOFF_MAX_MS")) != null) {
            max = num("backoffMaxMs", v);
        }
        b.backoff(base, max);
        if ((v = s.get("dispatch", "DISPATCH")) != null) {
            b.dispatch(v);
        }
        if ((v = s.get("blockThresholdMs", "BLOCK_THRESHOLD_MS")) != null) {
            b.blockThresholdMillis(num("blockThresholdMs", v));
        }
        if ((v = s.get("anrThresholdMs", "ANR_THRESHOLD_MS")) != null) {
            b.anrThresholdMillis(num("anrThresholdMs", v));
        }
        if ((v = s.get("uploadMode", "UPLOAD_MODE")) != null) {
            b.uploadMode(v);
        }
        if ((v = s.get("sampleRate", "SAMPLE_RATE")) != null) {
            try {
                b.sampleRate(Double.parseDouble(v.trim()));
            } catch (NumberFormatException e) {
                throw new IllegalArgumentException("beatline.sampleRate must be a number 0..1: " + v);
            }
        }
        if ((v = s.get("tickerPeriodUs", "TICKER_PERIOD_US")) != null) {
            b.tickerPeriodMicros(num("tickerPeriodUs", v));
        }
        if ((v = s.get("networkKeepQuery", "NETWORK_KEEP_QUERY")) != null) {
            if (!v.equals("true") && !v.equals("false")) {
                throw new IllegalArgumentException("beatline.networkKeepQuery must be true or false: " + v);
            }
            b.networkKeepQuery(v.equals("true"));
        }
        boolean debug = "true".equals(s.get("debug", "DEBUG"));
        b.log(new Log.Stderr(debug));
        String clock = s.get("clock", "CLOCK");
        if (clock != null && !clock.equals("ticker") && !clock.equals("nano")) {
            throw new IllegalArgumentException("beatline.clock must be nano or ticker: " + clock);
        }
        BeatlineConfig checked = b.build();
        if (!"ticker".equals(clock)) {
            return checked;
        }
        return b.clock(new TickerClock(1000)).build(); // the ticker thread starts only for a valid config
    }

    /** An int setting: out of int range is an error naming the property, not a silent wrap. */
    private static int num32(String name, String v) {
        long n = num(name, v);
        if (n < Integer.MIN_VALUE || n > Integer.MAX_VALUE) {
            throw new IllegalArgumentException("beatline." + name + " is out of range: " + v);
        }
        if ((name.equals("mainBuffer") || name.equals("threadBuffer"))
                && (n < 4 || n > (1 << 26) || Long.bitCount(n) != 1)) {
            throw new IllegalArgumentException("beatline." + name + " must be a power of two 4..2^26: " + v);
        }
        return (int) n;
    }

    private static long num(String name, String v) {
        try {
            return Long.parseLong(v.trim());
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("beatline." + name + " must be an integer: " + v);
        }
    }

    private static final class Src {
        final Map<String, String> props;
        final Map<String, String> env;

        Src(Map<String, String> props, Map<String, String> env) {
            this.props = props;
            this.env = env;
        }

        String get(String prop, String envSuffix) {
            String v = props == null ? null : props.get("beatline." + prop);
            if (v == null && env != null) {
                v = env.get("BEATLINE_" + envSuffix);
            }
            return v == null || v.isEmpty() ? null : v;
        }
    }
}
