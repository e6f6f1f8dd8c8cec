package io.beatline.runtime;

import java.util.HashMap;
import java.util.Map;
import java.util.Properties;

/**
 * Beatline's in-app runtime: the probes the instrumenter inserts
 * ({@link #i(int)}, {@link #o(int)}) and the public API ({@link #start},
 * {@link #flush()}, {@link #flushAndWait(long)}, {@link #shutdown(long)},
 * {@link #stats()}). User documentation: {@code runtime/README.md}.
 *
 * <p>Nothing here throws into the host app, blocks on the probe path or
 * allocates on it after a thread's first probe.
 *
 * <p><b>Plain JVM start.</b> Loading this class (the first probe) reads
 * {@code beatline.*} system properties / {@code BEATLINE_*} environment
 * variables ({@link BeatlineConfig#fromSystem}); when {@code beatline.server}
 * is set, the runtime starts (a bad setting is reported on stderr and the
 * runtime stays off). Without configuration the probes record nothing: each
 * is one static field read and a branch.
 */
public final class Beatline {
    /** The recording session's recorder; null = off (probes return at once). */
    private static volatile Session current;
    /**
     * Read by the probes: plain, so the off path is a field load and a branch.
     * A gated session ({@link Session#gated}: triggered, not sampled) sets it
     * only while one of its recording windows is open ({@link #window}); a
     * full one from its start to its end. Written under {@link #GATE}.
     */
    private static Recorder recorder;
    /**
     * {@code recorder != null}, for the guard that {@code beatline-instrument}
     * puts before each probe call ({@code if (Beatline.on) Beatline.i(id)}):
     * code that is not compiled yet (interpreter, C1) then skips the call
     * while nothing records. Written with {@link #recorder}; not for apps to write.
     */
    public static boolean on;
    /** Orders the writes of {@link #recorder} and {@link #on} (start, end, recording windows). */
    private static final Object GATE = new Object();

    static {
        try {
            autoStart();
        } catch (Throwable t) {
            // class initialisation must never fail: probes would throw NoClassDefFoundError into the app
            try {
                Log.STDERR.warn("not started: " + t);
            } catch (Throwable ignored) {
                // nothing left
            }
        }
    }

    private Beatline() {
    }

    private static void autoStart() {
        Map<String, String> props = new HashMap<String, String>();
        Properties p = System.getProperties();
        for (String k : p.stringPropertyNames()) {
            if (k.startsWith("beatline.")) {
                props.put(k, p.getProperty(k));
            }
        }
        Map<String, String> env;
        try {
            env = System.getenv();
        } catch (SecurityException e) {
            env = null;
        }
        BeatlineConfig cfg;
        try {
            cfg = BeatlineConfig.fromSystem(props, env);
        } catch (IllegalArgumentException e) {
            Log.STDERR.warn("not started: " + e.getMessage());
            return;
        }
        if (cfg != null) {
            start(cfg);
        }
    }

    /**
     * Probe: method enter. Inserted by {@code beatline-instrument} at the start
     * of every instrumented method. Appends one record (methodId, µs) to the
     * calling thread's ring buffer when the runtime runs and the thread is
     * traced.
     *
     * @param methodId the method's id from the method-ID file, 0..8,388,607
     *        (higher bits are ignored)
     */
    public static void i(int methodId) {
        Recorder r = recorder;
        if (r != null) {
            try {
                r.enter(methodId);
            } catch (Throwable t) {
                // never into the app (OutOfMemoryError at a thread's first probe, say)
            }
        }
    }

    /**
     * Probe: method exit, normal or exceptional. Inserted before every return
     * and in a catch-all handler that rethrows.
     *
     * @param methodId the same id as the matching {@link #i(int)}
     */
    public static void o(int methodId) {
        Recorder r = recorder;
        if (r != null) {
            try {
                r.exit(methodId);
            } catch (Throwable t) {
                // never into the app
            }
        }
    }

    /**
     * Starts recording and reporting: creates the spool directory, starts the
     * daemon threads {@code beatline-flush} and {@code beatline-upload},
     * installs the life-cycle hooks (on the JVM: a shutdown hook). Never throws.
     *
     * @param config made with {@link BeatlineConfig.Builder} (which checks it)
     * @return true when started; false when already running (the running
     *         session is kept) or when starting failed (logged)
     */
    public static synchronized boolean start(BeatlineConfig config) {
        if (current != null) {
            log(config).warn("start: already running; the new configuration is ignored");
            return false;
        }
        try {
            if (config.buildNote != null) {
                log(config).warn(config.buildNote);
            }
            Session s = new Session(config);
            s.begin();
            synchronized (GATE) {
                current = s;
                recorder = s.gated && s.windows == 0 ? null : s.recorder;
                on = recorder != null;
            }
            return true;
        } catch (Throwable t) {
            log(config).warn("start failed: " + t);
            return false;
        }
    }

    private static Log log(BeatlineConfig c) {
        return c != null && c.log != null ? c.log : Log.STDERR;
    }

    /**
     * Dumps every traced thread's ring buffer now, as batches, into the spool
     * (on the calling thread: file I/O, keep it off a UI thread) and wakes the
     * uploader without waiting for it. With {@code asyncFlush} (Android) it
     * only hands the dump to the runtime's thread. No-op when not running.
     * Never throws.
     */
    public static void flush() {
        Session s = current;
        if (s != null) {
            s.flush();
        }
    }

    /**
     * {@link #flush()}, then uploads on the calling thread until the spool is
     * empty or {@code waitMillis} ms passed (retries inside that time honour
     * the backoff / Retry-After). Never throws.
     *
     * @return true when the spool is empty at the end (everything was
     *         accepted or dropped by the server); false when not running or
     *         batches remain (they are sent later), and at once on the main
     *         thread with {@code asyncFlush} (Android: handed over, not waited for)
     */
    public static boolean flushAndWait(long waitMillis) {
        Session s = current;
        return s != null && s.flushAndWait(waitMillis);
    }

    /**
     * Stops recording: probes turn off, the ring buffers are dumped and spooled,
     * uploads run for at most {@code waitMillis} ms, the threads end. What was
     * not uploaded stays in the spool for the next start. No-op when not
     * running; {@link #start} may be called again afterwards. Never throws.
     */
    public static void shutdown(long waitMillis) {
        Session s = current;
        if (s != null) {
            s.shutdown(waitMillis);
        }
    }

    static synchronized void ended(Session s) {
        synchronized (GATE) {
            if (current == s) {
                current = null;
                recorder = null;
                on = false;
            }
        }
    }

    /**
     * Opens or closes one of a gated session's recording windows (issue 13):
     * the probes record while at least one is open and take the off path
     * (the field load and branch of an off runtime) otherwise. Reasons are
     * bit flags ({@link Session#WINDOW_DISPATCH}, {@link Session#WINDOW_LAUNCH}).
     * No-op for a session that is not gated or no longer running. Call it on
     * the main thread: only that thread records in a gated session, and it
     * sees its own write of the probes' field at once. Never throws.
     *
     * @param s the session (its {@link Session#windows} is guarded by the same lock)
     * @param reason one bit flag
     * @param open true to open, false to close
     */
    static void window(Session s, int reason, boolean open) {
        synchronized (GATE) {
            int w = open ? s.windows | reason : s.windows & ~reason;
            s.windows = w;
            if (s.gated && current == s) {
                recorder = w != 0 ? s.recorder : null;
                on = w != 0;
            }
        }
    }

    /**
     * Opens ({@code true}) or closes
     * the launch recording window of a gated session (triggered, not
     * sampled), in which the main thread records outside message dispatches
     * too (e.g. from the process start to the first frame). Main thread. A
     * no-op when the runtime is not running or records everything anyway.
     */
    static void launchWindow(boolean open) {
        Session s = current;
        if (s != null) {
            window(s, Session.WINDOW_LAUNCH, open);
        }
    }

    /** The running session, or null (the network events of issue 16: {@link NetRequest}). */
    static Session session() {
        return current;
    }

    /**
     * The app shows its full content (after data loaded, say): the launch's
     * time to full display (TTFD), as {@code Activity.reportFullyDrawn()}.
     * The first call after a launch counts; before the launch's first frame
     * it counts as the first frame. Call it on the main thread. Never throws.
     */
    public static void reportFullyDrawn() {
        try {
            Launch.fullyDrawn();
        } catch (Throwable t) {
            // never into the app
        }
    }

    /** Whether the probes record now (tests: a gated session's windows). */
    static boolean recording() {
        return recorder != null;
    }

    /**
     * The running session's message-dispatch monitor (issue 13), made at the
     * first call: what a platform hook (Android's {@code LooperDispatch})
     * feeds. Never throws.
     *
     * @param kind {@code "looper"} or {@code "awt"} (the block events' {@code kind})
     * @param namer makes a block's target string from what the hook passes to {@link DispatchMonitor#begin}
     * @return the monitor, or null when the runtime is not running
     */
    public static DispatchMonitor dispatchMonitor(String kind, DispatchMonitor.Namer namer) {
        Session s = current;
        try {
            return s == null ? null : s.monitor(kind, namer);
        } catch (Throwable t) {
            return null;
        }
    }

    /**
     * A main-thread message began (Android's {@code LooperDispatch}, issue
     * 14): wakes the flush thread when it sleeps without a deadline for want
     * of records. Cheap (volatile reads); never throws.
     */
    public static void nudge() {
        Session s = current;
        if (s != null) {
            s.nudge();
        }
    }

    /** @return counters of the running session, or null when not running */
    public static Stats stats() {
        Session s = current;
        return s == null ? null : new Stats(s);
    }

    /** Counters of a session, a snapshot (see {@link #stats()}). */
    public static final class Stats {
        /** Threads with a ring buffer now. */
        public final int threads;
        /** Threads refused a ring buffer ({@code maxThreads} reached). */
        public final long threadsRefused;
        /** Batches written to the spool. */
        public final long batchesSpooled;
        /** Records in those batches. */
        public final long recordsSpooled;
        /** Thread entries marked truncated (the ring wrapped before a dump). */
        public final long truncatedThreads;
        /** Batches lost because they could not be written to the spool. */
        public final long batchesLost;
        /** Most records held at once copied out of the rings but not yet spooled (at most {@code maxPendingRecords}). */
        public final long backlogPeakRecords;
        /** Ring copies that {@code maxPendingRecords} cut short or prevented (the rings kept those records). */
        public final long copiesLimited;
        /**
         * Largest fill of a ring (records not yet copied / capacity) seen when
         * the dumper copied it; 1 or more: it wrapped.
         */
        public final double peakRingFill;
        /** Batches deleted unsent because the spool was over its bounds. */
        public final long spoolDropped;
        /** Batches the server accepted (2xx). */
        public final long batchesUploaded;
        /** Batches the server refused with a 4xx other than 408/429 (dropped). */
        public final long batchesRefused;
        /** Upload attempts that failed and will be retried. */
        public final long uploadFailures;
        /** The session id written into every batch. */
        public final String sessionId;
        /** Upload mode in effect: "full" or "triggered" (a sampled triggered session runs "full"). */
        public final String uploadMode;
        /** Whether a triggered configuration's draw put this session in full mode. */
        public final boolean sampledFull;
        /** Main-thread dispatches seen, blocks found, ANR reports spooled by the watchdog. */
        public final long messages;
        public final long blocks;
        public final long anrReports;
        /** Block events spooled; blocks lost (queue full, no window in full mode, spool failure). */
        public final long blocksSpooled;
        public final long blocksDropped;
        /** Times the runtime's flush and upload threads woke up (issue 14: 0 while idle on a phone). */
        public final long wakeups;
        /** The HTTPS / cleartext error that stopped uploads for this session, or null (issue 14). */
        public final String uploadError;
        /** Network events spooled; lost (queue full, not describable by the contract, spool failure) (issue 16). */
        public final long networkSpooled;
        public final long networkDropped;
        /** Launch events spooled; launches lost (queue full, no window in full mode, spool failure) (issue 15). */
        public final long launchesSpooled;
        public final long launchesDropped;

        Stats(Session s) {
            threads = s.recorder.threads();
            synchronized (s.recorder) {
                threadsRefused = s.recorder.threadsRefused;
                peakRingFill = s.recorder.peakFill;
            }
            long[] c = s.counters();
            batchesSpooled = c[0];
            recordsSpooled = c[1];
            truncatedThreads = c[2];
            batchesLost = c[3];
            backlogPeakRecords = c[4];
            copiesLimited = c[5];
            spoolDropped = s.spool.dropped();
            batchesUploaded = s.uploader.uploaded;
            batchesRefused = s.uploader.dropped4xx;
            uploadFailures = s.uploader.failures;
            sessionId = s.sessionId();
            uploadMode = s.triggered ? "triggered" : "full";
            sampledFull = s.sampledFull;
            DispatchMonitor m = s.monitorOrNull();
            messages = m == null ? 0 : m.messages;
            blocks = m == null ? 0 : m.blocks;
            anrReports = m == null ? 0 : m.anrs;
            blocksSpooled = s.blocksSpooled;
            blocksDropped = s.blocksDropped;
            wakeups = s.wakeups;
            uploadError = s.uploadError;
            networkSpooled = s.networkSpooled;
            networkDropped = s.networkDropped;
            launchesSpooled = s.launchesSpooled;
            launchesDropped = s.launchesDropped;
        }
    }
}
