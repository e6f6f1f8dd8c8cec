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
final class Session implements Lifecycle.Hooks {
    /** How often the flush thread looks at ring fill levels, ms. */
    static final long FILL_POLL_MS = 200;

    final BeatlineConfig cfg;
    final Recorder recorder;
    final Spool spool;
    final Uploader uploader;
    final String sessionId = UUID.randomUUID().toString();
    private final String model;
    private final String os;
    private final int sdk;
    private final Log log;
    private final Object dumpLock = new Object();
    private final ReentrantLock uploadLock = new ReentrantLock();
    private final Object wake = new Object();
    private boolean flushWanted;
    private boolean uploadWanted;
    private volatile boolean stopping;
    private boolean ended;
    private Thread flusher;
    private Thread sender;

    // counters (under dumpLock): read them with counters()
    private long batchesSpooled;
    private long recordsSpooled;
    private long batchesLost;
    private long truncatedThreads;

    /** {batches spooled, records spooled, truncated thread entries, batches lost}. */
    long[] counters() {
        synchronized (dumpLock) {
            return new long[] {batchesSpooled, recordsSpooled, truncatedThreads, batchesLost};
        }
    }

    Session(BeatlineConfig cfg) throws IOException {
        this.cfg = cfg;
        this.log = cfg.log != null ? cfg.log : Log.STDERR;
        Clock clock = cfg.clock != null ? cfg.clock : new NanoClock();
        ThreadPolicy policy = cfg.threadPolicy != null ? cfg.threadPolicy : new JvmThreadPolicy(cfg.traceOtherThreads);
        DeviceInfo dev = cfg.device != null ? cfg.device : new JvmDeviceInfo();
        model = dev.model();
        os = dev.osVersion();
        sdk = dev.sdkLevel();
        recorder = new Recorder(clock, policy, cfg.mainBufferRecords, cfg.threadBufferRecords, cfg.maxThreads, log);
        recorder.openCallDepth = OpenCalls.depthFor(cfg.maxBatchRecords);
        spool = new Spool(cfg.spoolDir, cfg.spoolMaxFiles, cfg.spoolMaxBytes, log);
        uploader = new Uploader(cfg.server, cfg.app, cfg.ingestKey, spool, cfg.backoffBaseMillis,
                cfg.backoffMaxMillis, cfg.httpTimeoutMillis, log);
    }

    /** Opens the spool, starts the threads, installs the life-cycle hooks. */
    void begin() {
        spool.open();
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
        long next = System.nanoTime() + cfg.flushIntervalMillis * 1000000L;
        while (!stopping) {
            boolean now;
            try {
                synchronized (wake) {
                    long left = (next - System.nanoTime()) / 1000000L;
                    if (!flushWanted && !stopping && left > 0) {
                        wake.wait(Math.min(left, FILL_POLL_MS));
                    }
                    now = flushWanted;
                    flushWanted = false;
                }
                if (stopping) {
                    return;
                }
                if (now || System.nanoTime() - next >= 0 || cfg.flushFill > 0 && recorder.maxFill() >= cfg.flushFill) {
                    dumpToSpool();
                    wakeUploader(); // upload as we go: what is left at shutdown must fit in shutdownWaitMs
                    next = System.nanoTime() + cfg.flushIntervalMillis * 1000000L;
                }
            } catch (InterruptedException e) {
                return;
            } catch (Throwable t) {
                log.warn("flush failed: " + t);
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
                        if (backingOff) {
                            long left = (retryAt - System.nanoTime()) / 1000000L;
                            if (left > 0) {
                                wake.wait(left); // a flush does not cut a backoff short
                                continue;
                            }
                            break;
                        }
                        if (look || uploadWanted) {
                            break;
                        }
                        wake.wait(cfg.flushIntervalMillis); // woken by a flush, or look again later
                        look = true;
                    }
                    uploadWanted = false;
                }
                if (stopping || !uploadLock.tryLock(1, TimeUnit.SECONDS)) {
                    continue;
                }
                Uploader.Pass p;
                try {
                    p = uploader.pass(Long.MAX_VALUE);
                } finally {
                    uploadLock.unlock();
                }
                look = false;
                backingOff = p.retryInMillis > 0;
                retryAt = System.nanoTime() + p.retryInMillis * 1000000L;
            } catch (InterruptedException e) {
                return;
            } catch (Throwable t) {
                log.warn("upload failed: " + t);
            }
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
        try {
            dumpToSpool();
            wakeUploader();
        } catch (Throwable t) {
            log.warn("flush failed: " + t);
        }
    }

    /** Dumps, spools, then uploads until the spool is empty or {@code waitMillis} passed. */
    boolean flushAndWait(long waitMillis) {
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

    private boolean uploadUntil(long deadline) throws InterruptedException {
        while (true) {
            long left = (deadline - System.nanoTime()) / 1000000L;
            if (left <= 0 || !uploadLock.tryLock(left, TimeUnit.MILLISECONDS)) {
                return spool.list().isEmpty();
            }
            Uploader.Pass p;
            try {
                p = uploader.pass(deadline);
            } finally {
                uploadLock.unlock();
            }
            if (p.retryInMillis == 0) {
                return true;
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
        stopping = true;
        synchronized (wake) {
            wake.notifyAll();
        }
        try {
            flushAndWait(waitMillis, true);
        } catch (Throwable t) {
            log.warn("shutdown: " + t);
        }
        try {
            recorder.clock.close();
        } catch (Throwable t) {
            // clock owned by the user; ignore
        }
    }

    /** {@link #dumpToSpool(boolean) dumpToSpool(false)}: a dump while the session goes on. */
    void dumpToSpool() {
        dumpToSpool(false);
    }

    /**
     * Dumps every ring, turns the dump into segments ({@link #split}) in
     * batches of at most {@code maxBatchRecords} records, and spools them.
     * Serialised (the dump lock also guards every thread's {@link OpenCalls}).
     *
     * @param last whether this is the session's final dump (shutdown): its
     *        segments do not set {@code continues}, so the server closes the
     *        calls still open there as incomplete
     */
    void dumpToSpool(boolean last) {
        synchronized (dumpLock) {
            Recorder.Snapshot snap = recorder.dump(last);
            if (snap.threads.isEmpty()) {
                return;
            }
            long wallUs = System.currentTimeMillis() * 1000L;
            List<List<Recorder.ThreadDump>> batches = split(snap.threads, cfg.maxBatchRecords, snap.nowMicros, last);
            List<Recorder.ThreadDump> all = new ArrayList<Recorder.ThreadDump>();
            for (List<Recorder.ThreadDump> part : batches) {
                all.addAll(part);
            }
            long origin = rebase(new Recorder.Snapshot(snap.nowMicros, all));
            long originWall = wallUs - (snap.nowMicros - origin);
            for (List<Recorder.ThreadDump> part : batches) {
                UUID id = UUID.randomUUID();
                long n = 0;
                for (Recorder.ThreadDump t : part) {
                    n += t.records.length;
                    if (t.truncated) {
                        truncatedThreads++;
                    }
                }
                try {
                    byte[] b = BatchEncoder.encode(new BatchEncoder.Header(id, originWall, sdk, cfg.app, cfg.build,
                            sessionId, model, os), part, new byte[0]);
                    File f = spool.write(id, b);
                    batchesSpooled++;
                    recordsSpooled += n;
                    log.debug("spooled " + f.getName() + ": " + n + " records, " + b.length + " bytes");
                } catch (Throwable e) {
                    batchesLost++;
                    log.warn("batch of " + n + " records lost: cannot spool it: " + e);
                }
            }
        }
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
        List<List<Recorder.ThreadDump>> out = new ArrayList<List<Recorder.ThreadDump>>();
        List<Recorder.ThreadDump> cur = new ArrayList<Recorder.ThreadDump>();
        int room = max;
        for (Recorder.ThreadDump t : threads) {
            OpenCalls oc = t.calls != null ? t.calls : new OpenCalls(OpenCalls.depthFor(max));
            boolean goesOn = t.alive && !last;
            int off = 0;
            boolean first = true;
            do {
                int left = t.records.length - off;
                boolean fresh = first && t.truncated || !oc.canCarry(nowUs)
                        || oc.depth() + Math.min(1, left) > max; // cannot fit (a stack deeper than depthFor(max))
                if (fresh) {
                    oc.clear();
                }
                int c = oc.depth();
                if (c == 0 && left == 0 && !t.truncated) {
                    oc.chained = false;
                    break; // nothing left to carry (they could not be): no entry
                }
                if (room == 0 || room < c + Math.min(1, left)) {
                    out.add(cur);
                    cur = new ArrayList<Recorder.ThreadDump>();
                    room = max;
                }
                int n = Math.min(room - c, left);
                long[] part = t.records;
                if (c != 0 || off != 0 || n != t.records.length) {
                    part = new long[c + n];
                    for (int k = 0; k < c; k++) {
                        part[k] = ((long) oc.id(k) << Recorder.ID_SHIFT) | (oc.enterUs(k) & Recorder.T_MASK);
                    }
                    System.arraycopy(t.records, off, part, c, n);
                }
                long since = oc.lastUs;
                boolean known = oc.replay(t.records, off, off + n, nowUs, c == 0);
                if (n > 0) { // where this segment ends: its last record, or since_us if later (clock steps back)
                    oc.lastUs = c > 0 ? Math.max(since, full(nowUs, t.records[off + n - 1]))
                            : full(nowUs, t.records[off + n - 1]);
                }
                off += n;
                room -= c + n;
                boolean continues = known && (off < t.records.length || goesOn);
                oc.chained = continues;
                if (!known) {
                    oc.clear();
                }
                cur.add(new Recorder.ThreadDump(t.id, t.name, t.main, first && t.truncated, part, c,
                        c > 0 ? since : 0, continues));
                first = false;
            } while (off < t.records.length);
        }
        if (!cur.isEmpty()) {
            out.add(cur);
        }
        return out;
    }
}
