package io.beatline.runtime;

import java.io.File;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.ReentrantLock;

/**
 * One started runtime: the {@link Recorder}, the reporter (dump → batch →
 * gzip → spool) on thread {@code beatline-flush}, and the {@link Uploader} on
 * thread {@code beatline-upload}. Both threads are daemons; no method here
 * throws.
 */
final class Session implements Lifecycle.Hooks, DispatchMonitor.Sink {
    /**
     * Longest wait between two looks of the flush thread at ring fill levels,
     * ms; it looks sooner when a ring is being written fast enough to reach
     * {@code flushFill} before then ({@link #pollMillis}).
     */
    static final long FILL_POLL_MS = 200;
    /** Shortest wait between two looks at ring fill levels, ms. */
    static final long MIN_POLL_MS = 10;

    final BeatlineConfig cfg;
    final Recorder recorder;
    final Spool spool;
    final Uploader uploader;
    /**
     * The session id written into every batch: a random (version 4) UUID,
     * made at its first use ({@link #sessionId()}), normally by the flush
     * thread as it starts: never by {@link #begin} on the thread that starts
     * the runtime (an app's main thread at its first probe), and not from
     * {@code SecureRandom} (issue 13, start-up cost: seeding it and loading
     * its providers cost ~18 ms of CPU, ~100 classes). See {@link #randomUuid()}.
     */
    private volatile String sessionId;
    private final Object idLock = new Object();
    private final String model;
    private final String os;
    private final int sdk;
    private final Log log;
    private final Object dumpLock = new Object();
    private final ReentrantLock uploadLock = new ReentrantLock();
    private final Object wake = new Object();
    private boolean flushWanted;
    /** A flush asked for (not a block's dump): upload what it spools at once (under wake). */
    private boolean uploadNow;
    private boolean uploadWanted;
    /** Set while the flush thread waits without a deadline for want of records ({@link #nudge}). */
    private volatile boolean idleWaiting;
    /**
     * Set while the flush thread waits without watching the rings' fill
     * (full mode, {@code idleWakeups} false: without a deadline for want of
     * records, or until the flush interval after a look that saw nothing
     * written): a ring passing a fill mark ({@link Ring#put}, every quarter
     * capacity, any thread) wakes it, so a worker that starts recording then
     * is dumped before its ring wraps (no main-thread message need nudge it).
     */
    private volatile boolean markWaiting;
    /** Times the flush and upload threads woke up (a wait returned), for the idle test (issue 14). */
    volatile long wakeups;
    /** The upload error that stopped uploads for this session (HTTPS / cleartext), or null. */
    volatile String uploadError;
    private final ThreadPolicy policy;
    private volatile boolean stopping;
    private boolean ended;
    private Thread flusher;
    private Thread sender;
    /**
     * Upload mode in effect (issue 13): true = triggered (only block windows
     * are spooled; the rings are never dumped), false = full. A triggered
     * configuration runs in full for a {@code sampleRate} fraction of sessions.
     */
    final boolean triggered;
    /** A triggered configuration that this session's draw put in full mode. */
    final boolean sampledFull;
    /**
     * Recording is gated (triggered and not sampled, issue 13): the probes
     * record only while a recording window is open — the main thread
     * dispatching a message ({@link #WINDOW_DISPATCH}, opened and closed by
     * the {@link DispatchMonitor}), or a launch ({@link #WINDOW_LAUNCH},
     * raised by issue 15's launch tracer, {@link Launch})
     * — and on the main thread only. Everything else would never be uploaded
     * in this mode (only windows around events are), so outside the windows
     * every probe takes the off path. Full and sampled sessions are not gated.
     */
    final boolean gated;
    /** Recording window: the main thread dispatches a message. */
    static final int WINDOW_DISPATCH = 1;
    /** Recording window: the app launches (issue 15: {@link Launch}, from the launch start to its first frame). */
    static final int WINDOW_LAUNCH = 2;
    /** Open recording windows, bit flags; written under {@link Beatline}'s gate lock ({@link Beatline#window}). */
    int windows;
    /** The clock's resolution, µs, written into every batch header (1: exact µs). */
    final long clockResolutionUs;
    /** Blocks waiting for the flush thread (under blockLock); at most {@link #MAX_PENDING_BLOCKS}. */
    private final List<Object[]> pendingBlocks = new ArrayList<Object[]>();
    private final Object blockLock = new Object();
    static final int MAX_PENDING_BLOCKS = 256;
    private boolean blocksWanted;
    /**
     * Launches waiting for the flush thread (issue 15; under blockLock): a
     * triggered session spools each as a batch of its own, a full one
     * attaches each to the batch whose main-thread segment holds its window.
     * At most {@link #MAX_PENDING_BLOCKS}.
     */
    private final List<Launch.Done> pendingLaunches = new ArrayList<Launch.Done>();
    /** Launch events spooled, and launches lost (queue full, no window in full mode, spool failure). */
    volatile long launchesSpooled;
    volatile long launchesDropped;
    /** Block events spooled, and blocks lost (queue full, no window to attach to, spool failure). */
    volatile long blocksSpooled;
    volatile long blocksDropped;
    private volatile DispatchMonitor monitor;
    private volatile String device;
    /**
     * Network events waiting for the flush thread (issue 16; under netLock):
     * at most {@link #MAX_PENDING_NET}; past it they are dropped (counted).
     */
    private final List<NetRequest> pendingNet = new ArrayList<NetRequest>();
    private final Object netLock = new Object();
    static final int MAX_PENDING_NET = 4096;
    /** Network events per events-only batch (the server stores at most 16,384 a batch). */
    static final int NET_PER_BATCH = 4096;
    /** Queued network events that make the flush thread spool them at once. */
    static final int NET_SOON = 256;
    /** System.nanoTime() by which queued network events are spooled (under netLock; set by the first queued). */
    private long netDueNanos;
    /** The flush thread should spool the network events now (under wake). */
    private boolean netWanted;
    /** Network events spooled; dropped (queue full, not describable, spool failure). */
    volatile long networkSpooled;
    volatile long networkDropped;
    /** When the next regular (interval) dump is due, System.nanoTime(); flush thread only. */
    private long nextDumpNanos;

    // counters (under dumpLock): read them with counters()
    private long batchesSpooled;
    private long recordsSpooled;
    private long batchesLost;
    private long truncatedThreads;
    private long backlogPeak;
    private long copiesLimited;
    private boolean limitLogged;
    // read by counters() while a dump runs: updated under statsLock
    private final Object statsLock = new Object();
    /** Callers of flush/flushAndWait/shutdown waiting for the dump lock (the flush thread then stops copying). */
    private final java.util.concurrent.atomic.AtomicInteger callersWaiting =
            new java.util.concurrent.atomic.AtomicInteger();

    /**
     * {batches spooled, records spooled, truncated thread entries, batches
     * lost, most records held copied but unspooled, copies limited by
     * maxPendingRecords}.
     */
    long[] counters() {
        synchronized (statsLock) {
            return new long[] {batchesSpooled, recordsSpooled, truncatedThreads, batchesLost, backlogPeak,
                    copiesLimited};
        }
    }

    Session(BeatlineConfig cfg) throws IOException {
        this(cfg, null);
    }

    /** @param spool the spool to write to (null: the one {@code cfg} describes) */
    Session(BeatlineConfig cfg, Spool spool) throws IOException {
        this.cfg = cfg;
        this.log = cfg.log != null ? new MutedLog(cfg.log) : Log.STDERR;
        boolean full = true;
        boolean sampled = false;
        if (cfg.triggered()) {
            java.util.Random rnd = cfg.sampleSeed != null ? new java.util.Random(cfg.sampleSeed) : new java.util.Random();
            sampled = rnd.nextDouble() < cfg.sampleRate;
            full = sampled;
        }
        triggered = !full;
        sampledFull = sampled;
        gated = triggered;
        Clock clock = cfg.clock;
        if (clock == null) {
            // triggered: the cheap ticker, running only while the main thread dispatches
            clock = triggered ? new TickerClock(cfg.tickerPeriodMicros, true) : new NanoClock();
        }
        clockResolutionUs = clock instanceof TickerClock ? ((TickerClock) clock).periodMicros : 1;
        ThreadPolicy policy = cfg.threadPolicy != null ? cfg.threadPolicy : new JvmThreadPolicy(cfg.traceOtherThreads);
        if ("awt".equals(cfg.dispatch)) {
            policy = awtPolicy(policy);
        }
        if (triggered) {
            policy = mainOnly(policy); // only main-thread windows are uploaded: other threads' rings would be waste
        }
        policy = runtimeThreadsOff(policy);
        this.policy = policy;
        DeviceInfo dev = cfg.device != null ? cfg.device : new JvmDeviceInfo();
        model = dev.model();
        os = dev.osVersion();
        sdk = dev.sdkLevel();
        recorder = new Recorder(clock, policy, cfg.mainBufferRecords, cfg.threadBufferRecords, cfg.maxThreads, log);
        recorder.openCallDepth = OpenCalls.depthFor(cfg.maxBatchRecords);
        if (this.log instanceof MutedLog) {
            ((MutedLog) this.log).recorder = recorder;
        }
        this.spool = spool != null ? spool : new Spool(cfg.spoolDir, cfg.spoolMaxFiles, cfg.spoolMaxBytes, log);
        uploader = new Uploader(cfg.server, cfg.app, cfg.ingestKey, this.spool, cfg.backoffBaseMillis,
                cfg.backoffMaxMillis, cfg.httpTimeoutMillis, log);
    }

    /**
     * Re-entry guard (issue 14): the runtime's own threads ({@code beatline-*})
     * never get a ring, so the app code they call ({@link Log}, an
     * {@link UploadGate}) records nothing; the app's policy is not asked.
     */
    private static ThreadPolicy runtimeThreadsOff(final ThreadPolicy inner) {
        return new ThreadPolicy() {
            @Override
            public boolean isMain(Thread t) {
                return !t.getName().startsWith("beatline-") && inner.isMain(t);
            }

            @Override
            public boolean trace(Thread t) {
                return !t.getName().startsWith("beatline-") && inner.trace(t);
            }
        };
    }

    /**
     * Re-entry guard (issue 14): an app-supplied {@link Log} (instrumented
     * with the app) runs with the calling thread's probes ignored.
     */
    static final class MutedLog implements Log {
        final Log inner;
        volatile Recorder recorder;

        MutedLog(Log inner) {
            this.inner = inner;
        }

        @Override
        public void warn(String msg) {
            Recorder r = recorder;
            Ring was = r == null ? null : r.mute();
            try {
                inner.warn(msg);
            } catch (Throwable t) {
                // never into the runtime
            } finally {
                if (r != null) {
                    r.unmute(was);
                }
            }
        }

        @Override
        public void debug(String msg) {
            Recorder r = recorder;
            Ring was = r == null ? null : r.mute();
            try {
                inner.debug(msg);
            } catch (Throwable t) {
                // never into the runtime
            } finally {
                if (r != null) {
                    r.unmute(was);
                }
            }
        }
    }

    /** Triggered mode: only the main thread gets a ring. */
    private static ThreadPolicy mainOnly(final ThreadPolicy inner) {
        return new ThreadPolicy() {
            @Override
            public boolean isMain(Thread t) {
                return inner.isMain(t);
            }

            @Override
            public boolean trace(Thread t) {
                return false;
            }
        };
    }

    /** The AWT event dispatch thread is the main thread (and traced whatever the policy says). */
    private static ThreadPolicy awtPolicy(final ThreadPolicy inner) {
        return new ThreadPolicy() {
            @Override
            public boolean isMain(Thread t) {
                return t.getName().startsWith("AWT-EventQueue-");
            }

            @Override
            public boolean trace(Thread t) {
                return inner.trace(t);
            }
        };
    }

    /**
     * The session's dispatch monitor, made at the first call (later calls
     * return the same one whatever they pass).
     *
     * @param kind {@code "looper"} or {@code "awt"}
     */
    synchronized DispatchMonitor monitor(String kind, DispatchMonitor.Namer namer) {
        if (monitor == null) {
            monitor = new DispatchMonitor(kind, namer, recorder, this, cfg.blockThresholdMillis,
                    cfg.anrThresholdMillis, gated ? this : null);
        }
        return monitor;
    }

    /** The dispatch monitor, or null when none was made. */
    DispatchMonitor monitorOrNull() {
        return monitor;
    }

    /** The device id of the block events (made lazily: file I/O). */
    private String device() {
        String d = device;
        if (d == null) {
            d = Blocks.deviceId(cfg.spoolDir);
            device = d;
        }
        return d;
    }

    /** Main thread: queue the block for the flush thread. */
    @Override
    public void block(DispatchMonitor.Block b, Object anrHandle) {
        synchronized (blockLock) {
            if (pendingBlocks.size() >= MAX_PENDING_BLOCKS) {
                blocksDropped++;
                return;
            }
            pendingBlocks.add(new Object[] {b, anrHandle});
        }
        synchronized (wake) {
            if (triggered) {
                blocksWanted = true;
            } else {
                flushWanted = true; // full mode: the window goes out with the next dump, now
            }
            wake.notifyAll();
        }
    }

    /**
     * A network request ended (issue 16; any thread): queues its event for
     * the flush thread, which spools the queue as an events-only batch within
     * one flush interval, at once when {@link #NET_SOON} are queued, and at
     * every flush and shutdown. Never blocks on I/O.
     */
    void network(NetRequest r) {
        boolean soon;
        synchronized (netLock) {
            if (pendingNet.size() >= MAX_PENDING_NET) {
                networkDropped++;
                return;
            }
            if (pendingNet.isEmpty()) {
                netDueNanos = System.nanoTime() + cfg.flushIntervalMillis * 1000000L;
            }
            pendingNet.add(r);
            soon = pendingNet.size() == NET_SOON || pendingNet.size() == 1;
        }
        if (soon) {
            synchronized (wake) {
                if (pendingNetCount() >= NET_SOON) {
                    netWanted = true;
                }
                wake.notifyAll(); // the first one: a waiting flush thread takes the due time
            }
        }
    }

    /**
     * A launch reached its first frame (and its TTFD report, or was
     * handed over without one): queue it for the flush thread. Never blocks
     * on I/O (main thread).
     */
    void launch(Launch.Done d) {
        synchronized (blockLock) {
            if (pendingLaunches.size() >= MAX_PENDING_BLOCKS) {
                launchesDropped++;
                return;
            }
            pendingLaunches.add(d);
        }
        if (triggered) {
            synchronized (wake) {
                blocksWanted = true;
                wake.notifyAll();
            }
        }
    }

    private int pendingNetCount() {
        synchronized (netLock) {
            return pendingNet.size();
        }
    }

    /** ms until queued network events are due (at least 1), 0 when due now, -1 when none are queued. */
    private long netLeftMillis() {
        synchronized (netLock) {
            if (pendingNet.isEmpty()) {
                return -1;
            }
            long ms = (netDueNanos - System.nanoTime()) / 1000000L;
            return ms <= 0 ? 0 : ms;
        }
    }

    /** Hands the launch that waits for a TTFD report over (a dump or flush sends it now). */
    private void takeLaunch() {
        Launch.Done d = Launch.takeDone();
        if (d != null) {
            launch(d);
        }
    }

    /** Triggered mode: each pending launch as its own batch (dump lock held). */
    private void spoolLaunches() {
        List<Launch.Done> l;
        synchronized (blockLock) {
            l = new ArrayList<Launch.Done>(pendingLaunches);
            pendingLaunches.clear();
        }
        for (Launch.Done d : l) {
            try {
                spoolLaunch(d);
            } catch (Throwable t) {
                launchesDropped++;
                log.warn("launch lost: cannot spool it: " + t);
            }
        }
    }

    /**
     * Spools the queued network events as batches of their own (no thread
     * table: the events-only form of schema/batch-format.md), at most
     * {@link #NET_PER_BATCH} a batch; origin = the earliest begin. Dump lock held.
     */
    private void spoolNetwork() {
        List<NetRequest> all;
        synchronized (netLock) {
            if (pendingNet.isEmpty()) {
                return;
            }
            all = new ArrayList<NetRequest>(pendingNet);
            pendingNet.clear();
        }
        for (int from = 0; from < all.size(); from += NET_PER_BATCH) {
            List<NetRequest> part = all.subList(from, Math.min(all.size(), from + NET_PER_BATCH));
            long nowUs = recorder.clock.nowMicros();
            long wallUs = System.currentTimeMillis() * 1000L;
            long origin = Long.MAX_VALUE;
            for (NetRequest r : part) {
                origin = Math.min(origin, r.beginUs);
            }
            StringBuilder sb = new StringBuilder(part.size() * 400);
            int n = 0;
            for (NetRequest r : part) {
                String line = null;
                try {
                    line = r.event(origin, device(), cfg.networkKeepQuery);
                } catch (Throwable t) {
                    // counted below
                }
                if (line == null) {
                    synchronized (netLock) {
                        networkDropped++;
                    }
                    continue;
                }
                sb.append(line);
                n++;
            }
            if (n == 0) {
                continue;
            }
            long originWall = wallUs - (nowUs - origin);
            UUID id = UUID.randomUUID();
            try {
                byte[] b = BatchEncoder.encode(header(id, originWall), new ArrayList<Recorder.ThreadDump>(),
                        sb.toString().getBytes(BatchEncoder.UTF8));
                File f = spool.write(id, b);
                synchronized (statsLock) {
                    batchesSpooled++;
                }
                synchronized (netLock) {
                    networkSpooled += n;
                }
                log.debug("spooled " + f.getName() + ": " + n + " network events, " + b.length + " bytes");
            } catch (Throwable e) {
                synchronized (statsLock) {
                    batchesLost++;
                }
                synchronized (netLock) {
                    networkDropped += n;
                }
                log.warn(n + " network events lost: cannot spool them: " + e);
            }
        }
    }

    /**
     * Encodes one launch as a batch of its own (triggered mode): its window
     * segment (the main ring's records from the launch start to the first
     * frame; thread 0) and its event.
     *
     * @return the spooled file, or null when the launch had no recorded window (counted as dropped)
     */
    File spoolLaunch(Launch.Done d) throws IOException {
        Clock clock = recorder.clock;
        long startUs = LaunchEvents.micros(clock, d.startNanos);
        long frameUs = LaunchEvents.micros(clock, d.firstFrameNanos);
        List<Recorder.ThreadDump> part = new ArrayList<Recorder.ThreadDump>();
        long nowUs = clock instanceof TickerClock ? ((TickerClock) clock).exactMicros() : clock.nowMicros();
        if (d.ring == null) {
            // no window: the launch began before this session started (nothing recorded it)
            launchesDropped++;
            log.debug("launch without a recorded window: not sent");
            return null;
        }
        Recorder.ThreadDump seg = LaunchEvents.window(d, startUs, frameUs);
        long origin = Blocks.rebase(seg, startUs, nowUs);
        part.add(seg);
        long wallUs = System.currentTimeMillis() * 1000L;
        long originWall = wallUs - (nowUs - origin);
        byte[] ev = LaunchEvents.event(d, clock, 0, origin, device()).getBytes(BatchEncoder.UTF8);
        UUID id = UUID.randomUUID();
        byte[] bytes = BatchEncoder.encode(header(id, originWall), part, ev);
        File f = spool.write(id, bytes);
        synchronized (statsLock) {
            batchesSpooled++;
            recordsSpooled += part.get(0).records.length;
        }
        launchesSpooled++;
        log.debug("spooled launch " + f.getName() + ": " + d.kind + ", " + part.get(0).records.length + " records");
        return f;
    }

    /** Watchdog thread: spool the ANR report now (a kill during the stall leaves it on disk). */
    @Override
    public Object anr(DispatchMonitor.Block b) {
        try {
            File f = spoolBlock(b);
            log.warn("main thread stalled " + (b.endUs - b.beginUs) / 1000 + " ms in " + b.target
                    + ": ANR report spooled");
            return f;
        } catch (Throwable t) {
            log.warn("ANR report lost: " + t);
            return null;
        }
    }

    private List<Object[]> takeBlocks() {
        synchronized (blockLock) {
            List<Object[]> l = new ArrayList<Object[]>(pendingBlocks);
            pendingBlocks.clear();
            return l;
        }
    }

    /**
     * A finished block whose ANR report is still in the spool replaces it;
     * one whose report was uploaded already is not sent again.
     *
     * @return whether the block should be sent
     */
    private static boolean replaceReport(Object handle) {
        if (!(handle instanceof File)) {
            return true;
        }
        File f = (File) handle;
        return f.delete();
    }

    /** Triggered mode: each pending block as its own batch (flush thread, or a caller's flush). */
    private void spoolBlocks() {
        for (Object[] e : takeBlocks()) {
            DispatchMonitor.Block b = (DispatchMonitor.Block) e[0];
            if (!replaceReport(e[1])) {
                continue;
            }
            try {
                spoolBlock(b);
            } catch (Throwable t) {
                blocksDropped++;
                log.warn("block lost: cannot spool it: " + t);
            }
        }
    }

    /**
     * Encodes one block as a batch of its own (its window segment and its
     * event) and spools it.
     *
     * @return the spooled file
     */
    File spoolBlock(DispatchMonitor.Block b) throws IOException {
        Recorder.ThreadDump seg = Blocks.window(b, !gated);
        long nowUs = recorder.clock instanceof TickerClock ? ((TickerClock) recorder.clock).exactMicros()
                : recorder.clock.nowMicros();
        long wallUs = System.currentTimeMillis() * 1000L;
        long origin = Blocks.rebase(seg, b.beginUs, nowUs);
        long originWall = wallUs - (nowUs - origin);
        List<Recorder.ThreadDump> part = new ArrayList<Recorder.ThreadDump>();
        part.add(seg);
        byte[] ev = Blocks.event(b, 0, origin, device()).getBytes(BatchEncoder.UTF8);
        UUID id = UUID.randomUUID();
        byte[] bytes = BatchEncoder.encode(header(id, originWall), part, ev);
        File f = spool.write(id, bytes);
        synchronized (statsLock) {
            batchesSpooled++;
            recordsSpooled += seg.records.length;
        }
        blocksSpooled++;
        log.debug("spooled block " + f.getName() + ": " + b.target + ", " + (b.endUs - b.beginUs) / 1000 + " ms, "
                + seg.records.length + " records, " + bytes.length + " bytes");
        return f;
    }

    /** The session id (see {@link #sessionId}), made by the first caller. Never throws. */
    String sessionId() {
        String id = sessionId;
        if (id == null) {
            synchronized (idLock) {
                id = sessionId;
                if (id == null) {
                    sessionId = id = randomUuid();
                }
            }
        }
        return id;
    }

    /**
     * A random version-4 UUID from 16 bytes of {@code /dev/urandom} (the
     * kernel's non-blocking pool: one small read, no {@code SecureRandom}
     * provider to load and seed); {@link UUID#randomUUID()} where that file
     * cannot be read. File I/O: call it on the runtime's threads.
     */
    static String randomUuid() {
        byte[] b = new byte[16];
        try {
            java.io.FileInputStream in = new java.io.FileInputStream("/dev/urandom");
            try {
                int n = 0;
                while (n < b.length) {
                    int k = in.read(b, n, b.length - n);
                    if (k < 0) {
                        throw new IOException("/dev/urandom: end of file");
                    }
                    n += k;
                }
            } finally {
                in.close();
            }
        } catch (IOException | RuntimeException e) {
            return UUID.randomUUID().toString();
        }
        b[6] = (byte) (b[6] & 0x0f | 0x40); // version 4 (random)
        b[8] = (byte) (b[8] & 0x3f | 0x80); // IETF variant
        long msb = 0;
        long lsb = 0;
        for (int i = 0; i < 8; i++) {
            msb = msb << 8 | b[i] & 0xff;
            lsb = lsb << 8 | b[i + 8] & 0xff;
        }
        return new UUID(msb, lsb).toString();
    }

    private BatchEncoder.Header header(UUID id, long originWall) {
        BatchEncoder.Header h = new BatchEncoder.Header(id, originWall, sdk, cfg.app, cfg.build, sessionId(), model, os,
                clockResolutionUs);
        h.process = cfg.process;
        return h;
    }

    /** Opens the spool, starts the threads, installs the life-cycle hooks. */
    void begin() {
        if (!cfg.asyncFlush) {
            spool.open();
        }
        if ("awt".equals(cfg.dispatch)) {
            try {
                AwtDispatch.install(monitor("awt", AwtDispatch.NAMER));
            } catch (Throwable t) {
                log.warn("AWT dispatch monitor not installed: " + t);
            }
        }
        if (!triggered) {
            // a ring written while the flush thread waits without a deadline (no main-thread
            // message to nudge it: a worker in the background) wakes it at its fill marks
            recorder.onMark(new Runnable() {
                @Override
                public void run() {
                    if (markWaiting) {
                        synchronized (wake) {
                            wake.notifyAll();
                        }
                    }
                }
            });
        }
        flusher = new Thread(new Runnable() {
            @Override
            public void run() {
                flushLoop();
            }
        }, "beatline-flush");
        sender = new Thread(new Runnable() {
            @Override
            public void run() {
                uploadLoop();
            }
        }, "beatline-upload");
        flusher.setDaemon(true);
        sender.setDaemon(true);
        flusher.start();
        sender.start();
        Lifecycle lc = cfg.lifecycle != null ? cfg.lifecycle : new JvmLifecycle(cfg.shutdownWaitMillis);
        try {
            lc.install(this);
        } catch (Throwable t) {
            log.warn("life-cycle hooks not installed: " + t);
        }
    }

    private void flushLoop() {
        sessionId(); // here, not on the thread that started the runtime
        if (cfg.asyncFlush) {
            synchronized (dumpLock) {
                spool.open(); // phone: no disk on the thread that called start
            }
        }
        nextDumpNanos = System.nanoTime() + cfg.flushIntervalMillis * 1000000L;
        while (!stopping) {
            boolean now;
            boolean upload;
            try {
                long marks = recorder.marks(); // before the look: a ring's fill mark after it is seen below
                long poll = pollMillis();
                boolean idle = !cfg.idleWakeups && quiet && recorder.pending() == 0;
                synchronized (wake) {
                    long left = (nextDumpNanos - System.nanoTime()) / 1000000L;
                    long netLeft = netLeftMillis();
                    if (!flushWanted && !blocksWanted && !netWanted && netLeft != 0 && !stopping
                            && (left > 0 || triggered || idle)) {
                        // phone, nothing written since the last look: no fill to watch, only the interval
                        long ms = triggered || idle ? 0
                                : Math.max(1, !cfg.idleWakeups && quiet ? left : Math.min(left, poll));
                        if (netLeft > 0) {
                            ms = ms == 0 ? netLeft : Math.min(ms, netLeft); // network events wait one interval at most
                        }
                        idleWaiting = ms == 0 && !triggered; // triggered: a message needs no dump (nudge)
                        // no fill watched (idle, or quiet: only the interval): a ring that passes a fill
                        // mark from here on wakes this wait (Ring#put, markWake); one that passed it
                        // since the look (it saw markWaiting false) is seen here, and there is no wait
                        markWaiting = !triggered && (idle || !cfg.idleWakeups && quiet);
                        if (!markWaiting || recorder.marks() == marks) {
                            wake.wait(ms);
                            wakeups++;
                        }
                        idleWaiting = false;
                        markWaiting = false;
                    }
                    now = flushWanted;
                    flushWanted = false;
                    upload = uploadNow;
                    uploadNow = false;
                }
                if (stopping) {
                    return;
                }
                boolean net;
                synchronized (wake) {
                    net = netWanted || now;
                    netWanted = false;
                }
                if (net || netLeftMillis() == 0) {
                    synchronized (dumpLock) {
                        spoolNetwork();
                    }
                    uploadIfDue(upload);
                }
                if (triggered) {
                    boolean blocks;
                    synchronized (wake) {
                        blocks = blocksWanted || now;
                        blocksWanted = false;
                    }
                    if (now) {
                        takeLaunch(); // a flush: the launch waiting for its TTFD report goes now
                    }
                    if (blocks) {
                        synchronized (dumpLock) {
                            spoolBlocks();
                            spoolLaunches();
                        }
                        uploadIfDue(upload);
                    }
                    continue; // the rings are never dumped: they wrap
                }
                if (now || System.nanoTime() - nextDumpNanos >= 0
                        || cfg.flushFill > 0 && recorder.maxFill() >= cfg.flushFill) {
                    takeLaunch(); // full mode: a launch rides in the dump that holds its window
                    drain(false, true);
                    uploadIfDue(upload); // upload as we go: what is left at shutdown must fit in shutdownWaitMs
                } else if (upload) {
                    wakeUploader();
                }
            } catch (InterruptedException e) {
                return;
            } catch (Throwable t) {
                log.warn("flush failed: " + t);
            }
        }
    }

    /**
     * ms until the flush thread looks at the fill levels again: half the
     * time the fastest-filling ring needs to reach {@code flushFill} at the
     * rate it was written since the last look, within
     * {@link #MIN_POLL_MS} … {@link #FILL_POLL_MS} (a thread writing 10^7
     * records/s fills half of a 2^17-record ring in 6.5 ms, of a 2^24-record
     * ring in 0.84 s).
     */
    private long pollMillis() {
        double until = recorder.msUntilFill(cfg.flushFill > 0 ? cfg.flushFill : 1);
        quiet = until == Double.POSITIVE_INFINITY; // no ring written since the last look
        if (cfg.flushFill <= 0) {
            return FILL_POLL_MS;
        }
        double ms = until / 2;
        return (long) Math.max(MIN_POLL_MS, Math.min(FILL_POLL_MS, ms));
    }

    /** No ring was written between the flush thread's last two looks (flush thread only). */
    private boolean quiet;

    /**
     * Wakes the uploader when {@code now} or when the spool holds at least
     * {@code uploadMinBatches} batches (uploads batched: the radio stays on
     * for seconds after each request).
     */
    private void uploadIfDue(boolean now) {
        if (now || cfg.uploadMinBatches <= 1 || spool.list().size() >= cfg.uploadMinBatches) {
            wakeUploader();
        }
    }

    /**
     * A main-thread message began (Android's {@code LooperDispatch}): wakes
     * the flush thread when it waits without a deadline for want of records
     * (full mode, {@code idleWakeups} false). One volatile read otherwise.
     * (Rings written on other threads wake it at their fill marks: {@link #markWaiting}.)
     */
    void nudge() {
        if (idleWaiting) {
            synchronized (wake) {
                wake.notifyAll();
            }
        }
    }

    private void uploadLoop() {
        boolean backingOff = false;
        long retryAt = 0;
        boolean look = true; // the spool may hold batches of an earlier run
        while (!stopping) {
            try {
                synchronized (wake) {
                    while (!stopping) {
                        if (uploadError != null) {
                            wake.wait(); // stopped by an HTTPS / cleartext error: until the session ends
                            wakeups++;
                            continue;
                        }
                        if (backingOff) {
                            long left = (retryAt - System.nanoTime()) / 1000000L;
                            if (left > 0) {
                                wake.wait(left); // a flush does not cut a backoff short
                                wakeups++;
                                continue;
                            }
                            break;
                        }
                        if (look || uploadWanted) {
                            break;
                        }
                        // woken by a flush, or (JVM) look again later; a phone waits for a flush
                        wake.wait(cfg.idleWakeups ? cfg.flushIntervalMillis : 0);
                        wakeups++;
                        look = cfg.idleWakeups;
                    }
                    uploadWanted = false;
                }
                if (stopping) {
                    continue;
                }
                String gate = gateBlocked();
                if (gate != null) {
                    look = false;
                    backingOff = false;
                    log.debug("uploads paused: " + gate);
                    continue; // until the next flush wakes this thread
                }
                if (!uploadLock.tryLock(1, TimeUnit.SECONDS)) {
                    continue;
                }
                Uploader.Pass p;
                try {
                    if (uploader.fatal != null) {
                        stopUploads();
                        continue; // stopped while this thread waited for the lock
                    }
                    p = uploader.pass(Long.MAX_VALUE);
                } finally {
                    uploadLock.unlock();
                }
                look = false;
                if (p.retryInMillis < 0) {
                    stopUploads();
                    continue;
                }
                backingOff = p.retryInMillis > 0;
                retryAt = System.nanoTime() + p.retryInMillis * 1000000L;
            } catch (InterruptedException e) {
                return;
            } catch (Throwable t) {
                log.warn("upload failed: " + t);
            }
        }
    }

    /** The upload gate's answer (null: go; a throwing gate counts as go). */
    private String gateBlocked() {
        UploadGate g = cfg.uploadGate;
        if (g == null) {
            return null;
        }
        try {
            return g.blocked();
        } catch (Throwable t) {
            return null;
        }
    }

    /** An HTTPS / cleartext error: uploads stop for this session (the batches stay in the spool). */
    private synchronized void stopUploads() {
        if (uploadError == null) {
            uploadError = uploader.fatal;
            log.warn("uploads stopped for this session: " + uploader.fatal + " (the server must be reachable over"
                    + " HTTPS, or http:// allowed by the app's network security config; batches stay in the spool"
                    + " for the next start)");
        }
    }

    private void wakeUploader() {
        synchronized (wake) {
            uploadWanted = true;
            wake.notifyAll();
        }
    }

    /** Dumps every ring into the spool now (on the caller's thread) and wakes the uploader. */
    @Override
    public void flush() {
        if (cfg.asyncFlush) {
            synchronized (wake) { // phone: the flush thread dumps, spools and wakes the uploader
                flushWanted = true;
                uploadNow = true;
                wake.notifyAll();
            }
            return;
        }
        try {
            dumpToSpool();
            wakeUploader();
        } catch (Throwable t) {
            log.warn("flush failed: " + t);
        }
    }

    /** Dumps, spools, then uploads until the spool is empty or {@code waitMillis} passed. */
    boolean flushAndWait(long waitMillis) {
        if (cfg.asyncFlush && onMain()) {
            flush(); // never blocks the main thread: handed over, not waited for
            return false;
        }
        return flushAndWait(waitMillis, false);
    }

    /**
     * @param waitMillis upload time after the dump is spooled (a big final dump takes seconds to compress)
     * @param last whether this is the final dump (shutdown): no segment sets {@code continues}
     */
    private boolean flushAndWait(long waitMillis, boolean last) {
        try {
            dumpToSpool(last);
            return uploadUntil(System.nanoTime() + Math.max(0, waitMillis) * 1000000L);
        } catch (Throwable t) {
            log.warn("flush failed: " + t);
            return false;
        }
    }

    /** Whether the calling thread is the app's main thread (the policy's word; false if it throws). */
    private boolean onMain() {
        try {
            return policy.isMain(Thread.currentThread());
        } catch (Throwable t) {
            return false;
        }
    }

    private boolean uploadUntil(long deadline) throws InterruptedException {
        while (true) {
            if (uploadError != null || gateBlocked() != null) {
                return spool.list().isEmpty();
            }
            long left = (deadline - System.nanoTime()) / 1000000L;
            if (left <= 0 || !uploadLock.tryLock(left, TimeUnit.MILLISECONDS)) {
                return spool.list().isEmpty();
            }
            Uploader.Pass p;
            try {
                if (uploader.fatal != null) {
                    stopUploads();
                    return false; // stopped while this thread waited for the lock
                }
                p = uploader.pass(deadline);
            } finally {
                uploadLock.unlock();
            }
            if (p.retryInMillis == 0) {
                return true;
            }
            if (p.retryInMillis < 0) {
                stopUploads();
                return false;
            }
            left = (deadline - System.nanoTime()) / 1000000L;
            if (p.retryInMillis >= left) {
                return false;
            }
            Thread.sleep(p.retryInMillis);
        }
    }

    /** The end: probes off, final dump, bounded upload, threads stopped. Only the first call acts. */
    @Override
    public void shutdown(long waitMillis) {
        synchronized (wake) {
            if (ended) {
                return;
            }
            ended = true;
        }
        Beatline.ended(this);
        DispatchMonitor m = monitor;
        if (m != null) {
            m.close();
        }
        stopping = true;
        synchronized (wake) {
            wake.notifyAll();
        }
        try {
            boolean empty = flushAndWait(waitMillis, true);
            long[] c = counters();
            long dropped = spool.dropped();
            String sum = "session " + sessionId() + ": " + c[0] + " batches, " + c[1] + " records spooled, "
                    + uploader.uploaded + " uploaded" + (empty ? "" : ", some left in the spool") + "; "
                    + c[2] + " truncated thread entries, " + dropped + " batches dropped (spool full), " + c[3]
                    + " lost; backlog peak " + c[4] + " records, ring fill peak "
                    + twoDecimals(recorder.peakFill());
            if (c[2] > 0 || dropped > 0 || c[3] > 0) {
                log.warn(sum);
            } else {
                log.debug(sum);
            }
        } catch (Throwable t) {
            log.warn("shutdown: " + t);
        }
        try {
            recorder.clock.close();
        } catch (Throwable t) {
            // clock owned by the user; ignore
        }
    }

    /**
     * {@code x} with two decimals and a '.' whatever the default locale
     * (the shutdown summary's ring fill), rounded half up; without
     * {@code String.format}, whose first use loads the Formatter and the
     * locale's data (~14 ms of CPU at every exit, issue 13 start-up cost).
     * NaN, infinities and values of 10^15 or more as {@link Double#toString}.
     */
    static String twoDecimals(double x) {
        if (Double.isNaN(x) || Double.isInfinite(x) || Math.abs(x) >= 1e15) {
            return Double.toString(x);
        }
        long c = Math.round(Math.abs(x) * 100);
        long f = c % 100;
        return (x < 0 && c != 0 ? "-" : "") + c / 100 + (f < 10 ? ".0" : ".") + f;
    }

    /** {@link #dumpToSpool(boolean) dumpToSpool(false)}: a dump while the session goes on. */
    void dumpToSpool() {
        dumpToSpool(false);
    }

    /**
     * Dumps every ring, turns the records into segments in batches of at most
     * {@code maxBatchRecords} records, and spools them, on the caller's
     * thread; while it works through the batches it copies the rings again
     * until it has taken what they held when it began (a caller's dump ends
     * even if a thread never stops writing). Serialised (the dump lock also
     * guards every thread's {@link OpenCalls}).
     *
     * @param last whether this is the session's final dump (shutdown): its
     *        segments do not set {@code continues}, so the server closes the
     *        calls still open there as incomplete
     */
    void dumpToSpool(boolean last) {
        takeLaunch();
        synchronized (dumpLock) {
            spoolNetwork();
        }
        if (triggered) {
            synchronized (dumpLock) {
                spoolBlocks();
                spoolLaunches();
            }
            return;
        }
        long before = recorder.clock.nowMicros();
        drain(last, false);
        dropUnattached(before);
    }

    /**
     * Full mode: blocks that ended before a dump began and found no
     * main-thread segment in it (the message made no traced call) are
     * counted lost: no window, nothing to group them by.
     */
    private void dropUnattached(long beforeUs) {
        int n = 0;
        synchronized (blockLock) {
            for (java.util.Iterator<Object[]> it = pendingBlocks.iterator(); it.hasNext();) {
                DispatchMonitor.Block b = (DispatchMonitor.Block) it.next()[0];
                if (b.endUs <= beforeUs) {
                    it.remove();
                    n++;
                }
            }
        }
        if (n > 0) {
            blocksDropped += n;
            log.debug(n + " block(s) without main-thread records in the dump: not sent");
        }
        int nl = 0;
        synchronized (blockLock) {
            for (java.util.Iterator<Launch.Done> it = pendingLaunches.iterator(); it.hasNext();) {
                Launch.Done d = it.next();
                if (LaunchEvents.micros(recorder.clock, d.firstFrameNanos) <= beforeUs) {
                    it.remove();
                    nl++;
                }
            }
        }
        if (nl > 0) {
            launchesDropped += nl;
            log.debug(nl + " launch(es) without main-thread records in the dump: not sent");
        }
    }

    /**
     * Copies the rings into a {@link Backlog} and spools it batch by batch;
     * between two batches it copies again what the threads wrote meanwhile
     * (appended in order to each thread's queued records), so compression
     * does not hold copying back. Copying stops while {@code maxPendingRecords}
     * records are held: the rings must then hold the rest, and a ring that
     * wraps is dumped truncated (counted), its next segment fresh.
     *
     * <ul>
     * <li>caller's dump ({@code background} false: flush, flushAndWait,
     *     shutdown): copies every ring until it has taken as many records as
     *     the rings held at the start;</li>
     * <li>flush thread ({@code background} true): copies every ring at the
     *     start and when the flush interval is due, and between batches the
     *     rings at least {@code flushFill / 2} full; it returns when nothing
     *     is queued, and stops copying when the session stops or a caller
     *     waits to dump (the caller's dump takes the rest).</li>
     * </ul>
     */
    private void drain(boolean last, boolean background) {
        if (!background) {
            callersWaiting.incrementAndGet(); // the flush thread stops copying and hands the lock over
        }
        try {
            drainLocked(last, background);
        } finally {
            if (!background) {
                callersWaiting.decrementAndGet();
            }
        }
    }

    private void drainLocked(boolean last, boolean background) {
        synchronized (dumpLock) {
            final int max = cfg.maxBatchRecords;
            final double topUp = cfg.flushFill / 2;
            Backlog work = new Backlog(max);
            long owed = background ? 0 : recorder.pending();
            long nowUs = 0;
            long firstDumpUs = -1;
            long wallUs = 0;
            boolean copy = true;
            double minFill = 0;
            while (true) {
                long got = 0;
                if (copy) {
                    long budget = cfg.maxPendingRecords - work.held();
                    boolean limited = budget <= 0;
                    if (!limited) {
                        if (background && minFill == 0) {
                            nextDumpNanos = System.nanoTime() + cfg.flushIntervalMillis * 1000000L;
                        }
                        Recorder.Snapshot snap = recorder.dump(last, budget, minFill);
                        nowUs = snap.nowMicros;
                        if (firstDumpUs < 0) {
                            firstDumpUs = nowUs;
                        }
                        wallUs = System.currentTimeMillis() * 1000L;
                        work.add(snap.threads);
                        got = snap.records();
                        owed -= got;
                        for (Recorder.ThreadDump t : snap.threads) {
                            limited |= t.more;
                        }
                    }
                    synchronized (statsLock) {
                        backlogPeak = Math.max(backlogPeak, work.held());
                        if (limited) {
                            copiesLimited++;
                        }
                    }
                    if (limited && !limitLogged) {
                        limitLogged = true;
                        log.warn("records come faster than they can be compressed: " + work.held()
                                + " records held (maxPendingRecords); the rings keep the rest, and a ring that"
                                + " wraps loses records (counted as truncated)");
                    }
                }
                List<Recorder.ThreadDump> batch = work.next(max, nowUs, last);
                if (batch == null) {
                    if (background || owed <= 0 || copy && got == 0) {
                        return;
                    }
                    copy = true; // a caller's dump the budget cut short: take the rest
                    minFill = 0;
                    continue;
                }
                spoolBatch(batch, nowUs, wallUs);
                if (background && work.held() == 0) {
                    dropUnattached(firstDumpUs);
                }
                uploadIfDue(false);
                if (background) {
                    copy = false;
                    if (stopping || callersWaiting.get() > 0) {
                        minFill = 0; // finish what is queued; the final dump or the caller's takes the rest
                    } else if (System.nanoTime() - nextDumpNanos >= 0) {
                        copy = true;
                        minFill = 0;
                    } else if (topUp > 0 && recorder.maxFill() >= topUp) {
                        copy = true;
                        minFill = topUp;
                    }
                } else {
                    copy = owed > 0;
                    minFill = 0;
                }
            }
        }
    }

    /** Rebases, encodes and spools one batch of segments (dump lock held). */
    private void spoolBatch(List<Recorder.ThreadDump> part, long nowUs, long wallUs) {
        long origin = rebase(new Recorder.Snapshot(nowUs, part));
        long originWall = wallUs - (nowUs - origin);
        byte[] events = attachBlocks(part, origin);
        UUID id = UUID.randomUUID();
        long n = 0;
        int truncated = 0;
        for (Recorder.ThreadDump t : part) {
            n += t.records.length;
            if (t.truncated) {
                truncated++;
            }
        }
        try {
            long t0 = System.nanoTime();
            byte[] b = BatchEncoder.encode(header(id, originWall), part, events);
            long t1 = System.nanoTime();
            File f = spool.write(id, b);
            long t2 = System.nanoTime();
            synchronized (statsLock) {
                batchesSpooled++;
                recordsSpooled += n;
                truncatedThreads += truncated;
            }
            log.debug("spooled " + f.getName() + ": " + n + " records, " + b.length + " bytes, encoded in "
                    + (t1 - t0) / 1000000 + " ms, compressed and written in " + (t2 - t1) / 1000000 + " ms");
        } catch (Throwable e) {
            synchronized (statsLock) {
                batchesLost++;
                truncatedThreads += truncated;
            }
            log.warn("batch of " + n + " records lost: cannot spool it: " + e);
        }
    }

    /**
     * Full mode: the block events whose window this batch's main-thread
     * segment holds (its last record is at or after the block's begin), with
     * {@code thread} = that segment's index; the others stay queued.
     *
     * @param origin the batch origin (clock µs); the segments are rebased
     */
    private byte[] attachBlocks(List<Recorder.ThreadDump> part, long origin) {
        int main = -1;
        for (int i = 0; i < part.size(); i++) {
            Recorder.ThreadDump t = part.get(i);
            if (t.main && t.records.length > 0) {
                main = i;
                break;
            }
        }
        if (main < 0) {
            return new byte[0];
        }
        long[] rs = part.get(main).records;
        long lastUs = origin + (rs[rs.length - 1] & Recorder.T_MASK);
        long firstUs = LaunchEvents.firstUs(part.get(main), origin);
        StringBuilder sb = new StringBuilder();
        synchronized (blockLock) {
            // a launch whose window [start, first frame] overlaps this batch's main-thread segment
            for (java.util.Iterator<Launch.Done> it = pendingLaunches.iterator(); it.hasNext();) {
                Launch.Done d = it.next();
                long s = LaunchEvents.micros(recorder.clock, d.startNanos);
                long f = LaunchEvents.micros(recorder.clock, d.firstFrameNanos);
                if (lastUs >= s && firstUs <= f) {
                    it.remove();
                    sb.append(LaunchEvents.event(d, recorder.clock, main, origin, device()));
                    launchesSpooled++;
                }
            }
        }
        synchronized (blockLock) {
            for (java.util.Iterator<Object[]> it = pendingBlocks.iterator(); it.hasNext();) {
                Object[] e = it.next();
                DispatchMonitor.Block b = (DispatchMonitor.Block) e[0];
                if (lastUs >= b.beginUs) {
                    it.remove();
                    if (replaceReport(e[1])) {
                        sb.append(Blocks.event(b, main, origin, device()));
                        blocksSpooled++;
                    }
                }
            }
        }
        return sb.toString().getBytes(BatchEncoder.UTF8);
    }

    /**
     * Turns each record's 40-bit time (µs since the clock's origin, modulo
     * 2^40) into µs since the batch origin: the full time is recovered as the
     * dump time minus the signed 40-bit difference (records are less than
     * 6.3 days old), and the origin is the oldest record — carried enters
     * included, and the {@code since_us} of continued segments (full clock
     * µs before, µs since the origin after). Rewrites the records (and
     * {@code sinceUs}) in place; each array must belong to one entry.
     *
     * @return the origin (clock µs)
     */
    static long rebase(Recorder.Snapshot snap) {
        final long now = snap.nowMicros;
        long origin = Long.MAX_VALUE;
        for (Recorder.ThreadDump t : snap.threads) {
            for (long r : t.records) {
                origin = Math.min(origin, full(now, r));
            }
            if (t.carried > 0) {
                origin = Math.min(origin, t.sinceUs);
            }
        }
        if (origin == Long.MAX_VALUE) {
            return now;
        }
        for (Recorder.ThreadDump t : snap.threads) {
            long[] rs = t.records;
            for (int i = 0; i < rs.length; i++) {
                rs[i] = (rs[i] & ~Recorder.T_MASK) | (full(now, rs[i]) - origin);
            }
            if (t.carried > 0) {
                t.sinceUs -= origin;
            }
        }
        return origin;
    }

    /**
     * The full clock µs of a record's 40-bit time, for a record written at
     * most 2^39 µs (6.3 days) before {@code now} (or a little after it).
     */
    static long full(long now, long record) {
        long d = (now - record) & Recorder.T_MASK;
        if (d >= (1L << 39)) {
            d -= 1L << 40; // a record a little "after" the dump's clock reading
        }
        return now - d;
    }

    /**
     * Cuts a dump into segments and the segments into batches of at most
     * {@code max} records (carried enters included), in thread order; a
     * thread's records go on in the next batch when a batch is full, so no
     * batch holds two segments of one thread.
     *
     * <p>Each segment of a thread whose {@link OpenCalls} can carry (the
     * previous segment set {@code continues} and calls are open) starts with
     * the carried enters, outermost first, at their original times, and sets
     * {@code continued} with {@code since_us} = the previous segment's last
     * record. Otherwise it is fresh (a truncated window always is). Its
     * records are then replayed on the stack. It sets {@code continues} when
     * the stack is still known and the thread goes on: a later piece of this
     * dump, or a later dump (the thread is alive and {@code last} is false).
     * A dump entry with no records left (the thread ended or the session
     * ends) becomes a segment of carried enters only, without
     * {@code continues}, so the server closes them. Records are raw (40-bit
     * times); {@code sinceUs} is in full clock µs: {@link #rebase} follows.
     * The cutting is {@link Backlog#next}, which the dumper uses batch by
     * batch; this is all of one dump at once.
     *
     * @param threads a {@link Recorder#dump}; entries without {@link OpenCalls}
     *        (made by hand) are treated as a thread's first dump
     * @param max records per batch, at least 1
     * @param nowUs the dump's clock reading (full µs)
     * @param last whether this is the final dump
     * @return batches, each a list of segments
     */
    static List<List<Recorder.ThreadDump>> split(List<Recorder.ThreadDump> threads, int max, long nowUs,
            boolean last) {
        Backlog b = new Backlog(max);
        b.add(threads);
        List<List<Recorder.ThreadDump>> out = new ArrayList<List<Recorder.ThreadDump>>();
        List<Recorder.ThreadDump> batch;
        while ((batch = b.next(max, nowUs, last)) != null) {
            out.add(batch);
        }
        return out;
    }
}
