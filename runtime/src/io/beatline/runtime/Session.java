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
        long deadline = System.nanoTime() + Math.max(0, waitMillis) * 1000000L;
        try {
            dumpToSpool();
            return uploadUntil(deadline);
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
            flushAndWait(waitMillis);
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
     * Dumps every ring, turns the dump into batches of at most
     * {@code maxBatchRecords} records, and spools them. Serialised.
     */
    void dumpToSpool() {
        synchronized (dumpLock) {
            Recorder.Snapshot snap = recorder.dump();
            if (snap.threads.isEmpty()) {
                return;
            }
            long wallUs = System.currentTimeMillis() * 1000L;
            long origin = rebase(snap);
            long originWall = wallUs - (snap.nowMicros - origin);
            for (List<Recorder.ThreadDump> part : split(snap.threads, cfg.maxBatchRecords)) {
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
     * 6.3 days old), and the origin is the oldest record.
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
        }
        if (origin == Long.MAX_VALUE) {
            return now;
        }
        for (Recorder.ThreadDump t : snap.threads) {
            long[] rs = t.records;
            for (int i = 0; i < rs.length; i++) {
                rs[i] = (rs[i] & ~Recorder.T_MASK) | (full(now, rs[i]) - origin);
            }
        }
        return origin;
    }

    private static long full(long now, long record) {
        long d = (now - record) & Recorder.T_MASK;
        if (d >= (1L << 39)) {
            d -= 1L << 40; // a record a little "after" the dump's clock reading
        }
        return now - d;
    }

    static List<List<Recorder.ThreadDump>> split(List<Recorder.ThreadDump> threads, int max) {
        List<List<Recorder.ThreadDump>> out = new ArrayList<List<Recorder.ThreadDump>>();
        List<Recorder.ThreadDump> cur = new ArrayList<Recorder.ThreadDump>();
        int room = max;
        for (Recorder.ThreadDump t : threads) {
            int off = 0;
            boolean first = true;
            do {
                if (room == 0) {
                    out.add(cur);
                    cur = new ArrayList<Recorder.ThreadDump>();
                    room = max;
                }
                int n = Math.min(room, t.records.length - off);
                long[] part = t.records;
                if (off != 0 || n != t.records.length) {
                    part = new long[n];
                    System.arraycopy(t.records, off, part, 0, n);
                }
                cur.add(new Recorder.ThreadDump(t.id, t.name, t.main, first && t.truncated, part));
                first = false;
                off += n;
                room -= n;
            } while (off < t.records.length);
        }
        if (!cur.isEmpty()) {
            out.add(cur);
        }
        return out;
    }
}
