package io.beatline.runtime;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The per-thread ring buffers of one runtime session: attaches a
 * {@link Ring} to each thread at its first probe (or {@link Ring#OFF} when
 * the {@link ThreadPolicy} says no or {@code maxThreads} rings exist), writes
 * probe records, and dumps every ring into {@link Snapshot}s.
 */
final class Recorder {
    static final long EXIT = 1L << 63;
    static final int ID_BITS = 23;
    static final int ID_MASK = (1 << ID_BITS) - 1;
    static final int ID_SHIFT = 40;
    static final long T_MASK = (1L << 40) - 1;

    /**
     * The session's clock for every reader but the probes (dumper, dispatch
     * monitor, block spooling): the runtime's own clock, or an app clock
     * wrapped in {@link MutedClock}.
     */
    final Clock clock;
    /** The probes' clock: the runtime's own ({@link NanoClock} / {@link TickerClock}), or null for an app clock. */
    private final Clock ownClock;
    /** An app-supplied clock (instrumented with the app, issue 14), read by the probes through {@link #appNow}; else null. */
    private final Clock appClock;
    private final ThreadPolicy policy;
    private final int mainCapacity;
    private final int threadCapacity;
    private final int maxThreads;
    private final Log log;
    private final List<Ring> rings = new ArrayList<Ring>();
    private boolean mainTaken;
    /** Threads refused a ring because maxThreads were traced. */
    long threadsRefused;
    private boolean refusedLogged;

    private final ThreadLocal<Ring> local = new ThreadLocal<Ring>() {
        @Override
        protected Ring initialValue() {
            set(Ring.OFF); // re-entry guard (issue 14): probes inside the policy see OFF, not a new attach
            return attach(Thread.currentThread());
        }
    };

    /**
     * @param mainCapacity records in the main thread's ring (power of two)
     * @param threadCapacity records in every other traced thread's ring (power of two)
     * @param maxThreads at most this many rings at once (dead threads' rings leave after their last dump)
     */
    Recorder(Clock clock, ThreadPolicy policy, int mainCapacity, int threadCapacity, int maxThreads, Log log) {
        boolean own = clock instanceof NanoClock || clock instanceof TickerClock;
        this.clock = own ? clock : new MutedClock(clock);
        this.ownClock = own ? clock : null;
        this.appClock = own ? null : clock;
        this.policy = policy;
        this.mainCapacity = mainCapacity;
        this.threadCapacity = threadCapacity;
        this.maxThreads = maxThreads;
        this.log = log;
    }

    /** Fill marks passed by any ring ({@link Ring#put}), for the flush thread's idle check. */
    private final AtomicLong marks = new AtomicLong();
    /** Woken at each fill mark (the session's flush thread); null: nobody. */
    private volatile Runnable onMark;

    /** @param r run (on the writing thread, cheaply) at each ring's fill marks; null: nothing */
    void onMark(Runnable r) {
        onMark = r;
    }

    /**
     * A ring passed a fill mark (its first record, or another quarter
     * capacity): counts it (a full fence: the count is ordered before the
     * read of the flush thread's waiting flag in {@code onMark}, as the flush
     * thread's write of that flag is before its read of {@link #marks()}),
     * then runs {@code onMark}. Writer thread, once per quarter ring; never throws.
     */
    void filled() {
        marks.incrementAndGet();
        Runnable r = onMark;
        if (r != null) {
            try {
                r.run();
            } catch (Throwable t) {
                // never into the app
            }
        }
    }

    /** Fill marks passed so far (see {@link #filled()}). */
    long marks() {
        return marks.get();
    }

    /** Method enter on the calling thread. Never throws. */
    void enter(int methodId) {
        Ring r = local.get();
        if (r.on) {
            Clock c = ownClock;
            r.put(((long) (methodId & ID_MASK) << ID_SHIFT) | ((c != null ? c.nowMicros() : appNow(r)) & T_MASK));
        }
    }

    /** Method exit (normal or exceptional) on the calling thread. Never throws. */
    void exit(int methodId) {
        Ring r = local.get();
        if (r.on) {
            Clock c = ownClock;
            r.put(EXIT | ((long) (methodId & ID_MASK) << ID_SHIFT) | ((c != null ? c.nowMicros() : appNow(r)) & T_MASK));
        }
    }

    /**
     * Re-entry guard (issue 14) on the probe path: reads the app clock with
     * the calling thread's ring switched off, so the clock's own probes (it
     * is instrumented with the app) see an off ring and return; the ring is
     * the one the probe already looked up (no second {@code ThreadLocal}
     * lookup, no {@code ThreadLocal.set}).
     *
     * @param r the calling thread's ring, {@code r.on} true
     */
    private long appNow(Ring r) {
        r.on = false;
        try {
            return appClock.nowMicros();
        } finally {
            r.on = true;
        }
    }

    /**
     * Re-entry guard (issue 14) for the other readers of an app clock (not
     * the runtime's {@link NanoClock} / {@link TickerClock}: instrumented
     * with the app, its probes would come back here at every reading): the
     * dumper's, the dispatch monitor's. Each reading runs with the calling
     * thread's probes ignored. The probes read it through {@link #appNow}.
     */
    private final class MutedClock implements Clock {
        private final Clock app;

        MutedClock(Clock app) {
            this.app = app;
        }

        @Override
        public long nowMicros() {
            Ring r = local.get();
            if (!r.on) {
                return app.nowMicros(); // untraced or already muted: its probes are ignored anyway
            }
            r.on = false;
            try {
                return app.nowMicros();
            } finally {
                r.on = true;
            }
        }

        @Override
        public void close() {
            app.close();
        }
    }

    /**
     * Re-entry guard (issue 14): ignores the calling thread's probes until
     * {@link #unmute}; for runtime code calling app code ({@link Log}, say).
     * Attaches a ring first when the thread has none (as its first probe would).
     *
     * @return what {@link #unmute} restores
     */
    Ring mute() {
        Ring r = local.get();
        local.set(Ring.OFF);
        return r;
    }

    /** Ends a {@link #mute()}: the thread's probes record again (into {@code r}). */
    void unmute(Ring r) {
        local.set(r);
    }

    /** The calling thread's ring (attached on first use). */
    Ring ring() {
        return local.get();
    }

    private Ring attach(Thread t) {
        try {
            boolean main;
            synchronized (this) {
                main = !mainTaken && policy.isMain(t);
                if (!main && !policy.trace(t)) {
                    return Ring.OFF;
                }
                if (rings.size() >= maxThreads) {
                    threadsRefused++;
                    if (!refusedLogged) {
                        refusedLogged = true;
                        log.warn("more than " + maxThreads + " traced threads: thread \"" + t.getName()
                                + "\" and later ones are not traced (beatline.maxThreads)");
                    }
                    return Ring.OFF;
                }
                if (main) {
                    mainTaken = true;
                }
            }
            Ring r = new Ring(main ? mainCapacity : threadCapacity, t, main, this);
            synchronized (this) {
                rings.add(r);
            }
            return r;
        } catch (Throwable e) {
            // OutOfMemoryError for the ring, a throwing policy: this thread stays untraced
            return Ring.OFF;
        }
    }

    /**
     * One thread's dumped records, and later one <b>segment</b> of them: the
     * records of one thread in one batch (schema/batch-format.md, thread
     * table and "Segments: calls that span batches").
     */
    static final class ThreadDump {
        /** {@code Thread.getId()}. */
        final long id;
        /** Thread name at the dump. */
        final String name;
        /** Thread-table flag bit 0. */
        final boolean main;
        /** Thread-table flag bit 1: records were lost before the first one here. */
        final boolean truncated;
        /**
         * The records, oldest first: the first {@link #carried} are carried
         * enters. Times are raw 40-bit clock µs until {@link Session#rebase},
         * µs since the batch origin after.
         */
        final long[] records;
        /** {@code n_carried}: 0 = not {@code continued} (flag bit 2), else 1 … {@code records.length}. */
        final int carried;
        /**
         * {@code since_us} when {@link #carried} &gt; 0: full clock µs until
         * {@link Session#rebase}, µs since the batch origin after.
         */
        long sinceUs;
        /** Flag bit 3: the thread goes on in a later segment. */
        final boolean continues;
        /** The thread's open-call state (dumper only); null for dumps not made by {@link Recorder#dump}. */
        final OpenCalls calls;
        /** False when the thread had ended before the dump: this is its last. */
        final boolean alive;
        /** True when the thread's ring still holds records the dump did not take (a later dump takes them). */
        final boolean more;

        /** A segment that stands alone (neither {@code continued} nor {@code continues}). */
        ThreadDump(long id, String name, boolean main, boolean truncated, long[] records) {
            this(id, name, main, truncated, records, 0, 0, false, null, true);
        }

        /**
         * A segment.
         *
         * @param carried {@code n_carried} (0: not continued)
         * @param sinceUs {@code since_us} (used when carried &gt; 0)
         * @param continues flag bit 3
         */
        ThreadDump(long id, String name, boolean main, boolean truncated, long[] records, int carried, long sinceUs,
                boolean continues) {
            this(id, name, main, truncated, records, carried, sinceUs, continues, null, true);
        }

        /** A dumped window ({@link #more} false), as tests make them. */
        ThreadDump(long id, String name, boolean main, boolean truncated, long[] records, int carried, long sinceUs,
                boolean continues, OpenCalls calls, boolean alive) {
            this(id, name, main, truncated, records, carried, sinceUs, continues, calls, alive, false);
        }

        /**
         * A dumped window or a segment.
         *
         * @param calls the thread's dumper state (null: made by hand)
         * @param alive false when the thread had ended before the dump
         * @param more the ring still holds records this dump did not take
         */
        ThreadDump(long id, String name, boolean main, boolean truncated, long[] records, int carried, long sinceUs,
                boolean continues, OpenCalls calls, boolean alive, boolean more) {
            this.id = id;
            this.name = name;
            this.main = main;
            this.truncated = truncated;
            this.records = records;
            this.carried = carried;
            this.sinceUs = sinceUs;
            this.continues = continues;
            this.calls = calls;
            this.alive = alive;
            this.more = more;
        }
    }

    /** Everything dumped at one moment. */
    static final class Snapshot {
        /** Clock reading (µs) at the dump. */
        final long nowMicros;
        final List<ThreadDump> threads;

        Snapshot(long nowMicros, List<ThreadDump> threads) {
            this.nowMicros = nowMicros;
            this.threads = threads;
        }

        long records() {
            long n = 0;
            for (ThreadDump t : threads) {
                n += t.records.length;
            }
            return n;
        }
    }

    /** Stack depth bound of each thread's {@link OpenCalls} (set by {@link Session} before the first dump). */
    int openCallDepth = OpenCalls.MAX_DEPTH;

    /** {@link #dump(boolean) dump(false)}. */
    Snapshot dump() {
        return dump(false);
    }

    /** {@link #dump(boolean, long, double) dump(last, Long.MAX_VALUE, 0)}: every ring, everything. */
    Snapshot dump(boolean last) {
        return dump(last, Long.MAX_VALUE, 0);
    }

    /**
     * Dumps the rings (records written since the previous dump; threads
     * with none and not truncated are left out, unless calls carried from
     * their previous segment must be closed: the thread ended, or
     * {@code last}). Rings of threads that have ended leave the registry once
     * dumped empty. Serialised. Each {@link ThreadDump} holds the thread's
     * {@link OpenCalls} (made here at the ring's first dump), whether the
     * thread is alive and whether its ring still holds records this dump did
     * not take; {@link Session#split} and {@link Backlog} turn them into
     * segments.
     *
     * @param last whether this is the session's final dump (shutdown)
     * @param maxRecords most records taken in all (rings in registration
     *        order, oldest records first; at least 1): the dumper's memory
     *        bound. A ring the budget does not reach is left as it is.
     * @param minFill take only rings at least this full (records not yet
     *        dumped / capacity, 0..1; 0: every ring)
     */
    synchronized Snapshot dump(boolean last, long maxRecords, double minFill) {
        List<ThreadDump> out = new ArrayList<ThreadDump>();
        long budget = maxRecords;
        for (int i = 0; i < rings.size(); i++) {
            Ring r = rings.get(i);
            long pending = r.pending();
            double fill = pending / (double) (r.mask + 1);
            if (pending > 0 && (budget <= 0 || fill < minFill)) {
                continue; // left in the ring for a later dump
            }
            if (fill > peakFill) {
                peakFill = fill;
            }
            Thread t = r.thread.get();
            boolean alive = t != null && t.isAlive();
            if (t != null) {
                r.threadName = t.getName();
            }
            if (r.calls == null) {
                r.calls = new OpenCalls(openCallDepth);
            }
            Ring.Window w = r.dump(Math.max(1, budget));
            budget -= w.records.length;
            boolean close = r.calls.chained && r.calls.depth() > 0 && (!alive || last) && !w.more;
            if (w.records.length > 0 || w.truncated || close) {
                out.add(new ThreadDump(r.threadId, r.threadName, r.main, w.truncated, w.records, 0, 0, false,
                        r.calls, alive, w.more));
            }
            if (!alive && r.pending() == 0) {
                rings.remove(i--);
            }
        }
        return new Snapshot(clock.nowMicros(), out);
    }

    /**
     * Largest fill (records not yet dumped / capacity) a ring had when a dump
     * looked at it, since the session started; 1 or more means a ring wrapped
     * (or nearly: the two newest slots are never trusted).
     */
    double peakFill;

    /** {@link #peakFill}, read under the lock. */
    synchronized double peakFill() {
        return peakFill;
    }

    /** Records written to the rings and not yet dumped, over all rings (records). */
    synchronized long pending() {
        long n = 0;
        for (Ring r : rings) {
            n += Math.min(r.pending(), r.mask + 1);
        }
        return n;
    }

    /** Largest fill (records not yet dumped / capacity) over all rings, 0..1+. */
    synchronized double maxFill() {
        double m = 0;
        for (Ring r : rings) {
            m = Math.max(m, r.pending() / (double) (r.mask + 1));
        }
        return m;
    }

    private long polledNanos = System.nanoTime();

    /**
     * ms until the first ring reaches {@code fill} (records not yet dumped /
     * capacity), at the rate each ring was written since the previous call
     * (infinite when no ring was written). Flush thread only.
     */
    synchronized double msUntilFill(double fill) {
        long now = System.nanoTime();
        double ms = (now - polledNanos) / 1e6;
        polledNanos = now;
        double soonest = Double.POSITIVE_INFINITY;
        for (Ring r : rings) {
            long p = r.published();
            long written = p - r.polled;
            r.polled = p;
            if (written > 0 && ms > 0) {
                double room = fill * (r.mask + 1) - r.pending();
                soonest = Math.min(soonest, Math.max(0, room) / (written / ms));
            }
        }
        return soonest;
    }

    /** Rings currently registered. */
    synchronized int threads() {
        return rings.size();
    }
}
