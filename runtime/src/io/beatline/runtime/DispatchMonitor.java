package io.beatline.runtime;

import java.util.concurrent.locks.LockSupport;

/**
 * The main thread's message-dispatch monitor (issue 13): the part shared by
 * the Android hook ({@code LooperDispatch}: the main {@code Looper}'s message
 * logging) and the desktop hook ({@link AwtDispatch}: an {@code EventQueue}
 * timing each {@code dispatchEvent}). A hook calls {@link #begin(Object)}
 * when the main thread starts dispatching a message and {@link #end()} when
 * it is done, both on the main thread.
 *
 * <p>A dispatch that lasts at least {@code beatline.blockThresholdMs} is a
 * <b>block</b>: {@link #end()} hands a {@link Block} (target, begin and end in
 * clock µs, the main ring's record numbers of the message) to the session,
 * which uploads it as a {@code block} event with its ring window
 * (schema/batch-format.md, "Events"). The target string is made only then.
 *
 * <p>The <b>watchdog</b> (daemon thread {@code beatline-watchdog}) looks at a
 * dispatch when it has run {@code beatline.anrThresholdMs}: if it still runs,
 * it samples the main thread's Java stack and the session spools an ANR
 * report at once (a block event with {@code "anr":true} and the stack), so a
 * process killed during the stall leaves it on disk for the next start. It
 * wakes about once per {@code anrThresholdMs} while the main thread works,
 * and parks without a deadline once it found the main thread idle for a
 * whole threshold (an idle app wakes no thread; the next message wakes it
 * with one unpark).
 *
 * <p>Per message the main thread pays two {@code System.nanoTime()} reads,
 * a few field stores and a ring position read (docs/benchmarks.md); in a
 * gated session ({@link Session#gated}) also the opening and closing of its
 * dispatch recording window (two uncontended locks). Nested
 * dispatches (a modal loop inside a message) belong to the outer message.
 * Nothing here throws into the app.
 */
public final class DispatchMonitor {
    /** Makes the target string of a block from what the hook passed to {@link #begin(Object)}. */
    public interface Namer {
        /** @return {@code "<handler class>/<callback class or what=N>"} or {@code "<event class>/<source class>"} */
        String target(Object what);
    }

    /** A finished (or, for an ANR report, still running) slow dispatch. */
    static final class Block {
        final String kind;
        final String target;
        final Ring ring;
        /** Main ring record numbers of the message: [pBegin, pEnd). */
        final long pBegin;
        final long pEnd;
        /** Clock µs (the recorder's clock, full 64 bits). */
        final long beginUs;
        final long endUs;
        final boolean anr;
        /** Sampled main-thread stack (ANR only), innermost first; null otherwise. */
        final String[] stack;

        Block(String kind, String target, Ring ring, long pBegin, long pEnd, long beginUs, long endUs, boolean anr,
                String[] stack) {
            this.kind = kind;
            this.target = target;
            this.ring = ring;
            this.pBegin = pBegin;
            this.pEnd = pEnd;
            this.beginUs = beginUs;
            this.endUs = endUs;
            this.anr = anr;
            this.stack = stack;
        }
    }

    /** Where blocks go (the {@link Session}). */
    interface Sink {
        /** A block ended (main thread: must not block or do I/O). */
        void block(Block b, Object anrHandle);

        /** The watchdog saw a dispatch pass the ANR threshold (watchdog thread: spool it now). @return a handle for {@link #block} */
        Object anr(Block b);
    }

    final String kind;
    private final Namer namer;
    private final Recorder recorder;
    private final Clock clock;
    private final Sink sink;
    private final long blockNanos;
    private final long anrNanos;
    private final Thread watchdog;
    private volatile boolean running = true;
    /** The gated session whose dispatch recording window this monitor opens and closes; null: not gated. */
    private final Session gate;

    private static final java.util.concurrent.atomic.AtomicLongFieldUpdater<DispatchMonitor> START =
            java.util.concurrent.atomic.AtomicLongFieldUpdater.newUpdater(DispatchMonitor.class, "start");

    /** The clock's origin in {@code System.nanoTime()} terms when it is nanoTime-based (else unused). */
    private final long originNanos;
    private final boolean nanoBased;

    // main thread only
    private int depth;
    private long beginNanos;
    // written by the main thread before the volatile store of start (read by the watchdog after it)
    private Ring ring;
    private long pBegin;
    private long beginUs;
    private Object what;

    private volatile Thread main;
    /**
     * {@code System.nanoTime()} at the begin of the dispatch running now
     * (made odd-free: never 0), 0 when the main thread is idle: the one
     * field the watchdog watches. One volatile store per begin (its fence
     * orders it before the read of {@link #watchdogParked}), an ordered
     * store per end (a volatile one when the dispatch ran half the ANR
     * threshold or more: see {@link #anrClaim}).
     */
    private volatile long start;
    private volatile boolean watchdogParked;
    /**
     * The watchdog's ANR report, a handshake with {@link #end()}: the watchdog
     * stores {@link #anrClaim} = the dispatch's {@link #start} before it looks
     * at {@code start} again; end() of a long dispatch stores {@code start = 0}
     * (volatile) before it reads the claim. So either the watchdog sees the
     * dispatch over and gives up, or end() sees the claim and waits for
     * {@link #anrSeq} = the same value, published after {@link #anrHandle}
     * (the spooled report, null when the watchdog gave up) and {@link #anrStack}.
     */
    private volatile long anrClaim = -1;
    private volatile Object anrHandle;
    private volatile long anrSeq = -1;
    private volatile String[] anrStack;
    /** end() waits at most this long for a claimed report to be spooled, ns; past it the block is sent beside the report. */
    private static final long ANR_WAIT_NANOS = 2000000000L;

    /** Dispatches seen, blocks found, ANR reports (plain counters: approximate when read elsewhere). */
    long messages;
    long blocks;
    volatile long anrs;

    /**
     * @param kind {@code "looper"} or {@code "awt"} (the event's {@code kind})
     * @param blockThresholdMs a dispatch this long or longer is a block, ms
     * @param anrThresholdMs the watchdog reports a dispatch still running after this long, ms (0: no watchdog)
     * @param gate a gated session ({@link Session#gated}): each dispatch opens and closes its
     *        {@link Session#WINDOW_DISPATCH} recording window; null when recording is not gated
     */
    DispatchMonitor(String kind, Namer namer, Recorder recorder, Sink sink, long blockThresholdMs,
            long anrThresholdMs, Session gate) {
        this.kind = kind;
        this.gate = gate;
        this.namer = namer;
        this.recorder = recorder;
        this.clock = recorder.clock;
        this.sink = sink;
        this.blockNanos = blockThresholdMs * 1000000L;
        this.anrNanos = anrThresholdMs * 1000000L;
        if (clock instanceof NanoClock) {
            nanoBased = true;
            originNanos = ((NanoClock) clock).originNanos;
        } else if (clock instanceof TickerClock) {
            nanoBased = true;
            originNanos = ((TickerClock) clock).originNanos;
        } else {
            nanoBased = false;
            originNanos = 0;
        }
        if (anrThresholdMs > 0) {
            watchdog = new Thread(new Runnable() {
                @Override
                public void run() {
                    watch();
                }
            }, "beatline-watchdog");
            watchdog.setDaemon(true);
            watchdog.start();
        } else {
            watchdog = null;
        }
    }

    /** The main (UI) thread as seen by the first dispatch; null before. */
    Thread mainThread() {
        return main;
    }

    /** Exact clock µs on the recorder clock's time line, from a {@code System.nanoTime()} reading. */
    private long micros(long nanos) {
        return nanoBased ? (nanos - originNanos) / 1000L : clock.nowMicros();
    }

    /**
     * The main thread starts dispatching a message. Never throws.
     *
     * @param target what {@link Namer#target} turns into the target string if
     *        the message blocks (the log line, the event); kept until {@link #end()}
     */
    public void begin(Object target) {
        try {
            if (depth++ > 0) {
                return;
            }
            if (main == null) {
                main = Thread.currentThread();
            }
            Ring r = recorder.ring();
            ring = r;
            what = target;
            long t = System.nanoTime();
            beginNanos = t;
            beginUs = micros(t);
            if (clock instanceof TickerClock) {
                ((TickerClock) clock).resume(beginUs);
            }
            pBegin = r.published();
            if (gate != null) {
                Beatline.window(gate, Session.WINDOW_DISPATCH, true); // the probes record from here
            }
            start = t == 0 ? 1 : t; // volatile: publishes the fields above to the watchdog
            if (watchdogParked) {
                LockSupport.unpark(watchdog);
            }
        } catch (Throwable t) {
            // never into the app
        }
    }

    /** The main thread finished the message begun by {@link #begin(Object)}. Never throws. */
    public void end() {
        try {
            if (depth == 0 || --depth > 0) {
                return;
            }
            long endNanos = System.nanoTime();
            long s = start;
            // only a dispatch near the ANR threshold can be claimed by the watchdog:
            // it alone pays for the full fence of the handshake
            boolean longOne = anrNanos > 0 && endNanos - beginNanos >= anrNanos / 2;
            if (longOne) {
                start = 0;
            } else {
                START.lazySet(this, 0);
            }
            messages++;
            if (gate != null) {
                Beatline.window(gate, Session.WINDOW_DISPATCH, false); // off path again until the next dispatch
            }
            if (clock instanceof TickerClock) {
                ((TickerClock) clock).pause();
            }
            boolean reported = longOne && anrClaim == s && awaitReport(s);
            if (endNanos - beginNanos >= blockNanos || reported) {
                blocks++;
                Ring r = ring;
                String[] stack = reported ? anrStack : null;
                sink.block(new Block(kind, safeTarget(what), r, pBegin, r.published(), beginUs, micros(endNanos),
                        stack != null, stack), reported ? anrHandle : null);
            }
            what = null;
        } catch (Throwable t) {
            // never into the app
        }
    }

    /** The watchdog claimed dispatch {@code s}: waits (bounded) until its report is done. @return true when it was spooled */
    private boolean awaitReport(long s) {
        long deadline = System.nanoTime() + ANR_WAIT_NANOS;
        while (anrSeq != s) {
            if (System.nanoTime() - deadline > 0) {
                return false;
            }
            LockSupport.parkNanos(this, 1000000L);
        }
        return anrHandle != null;
    }

    private String safeTarget(Object w) {
        try {
            String s = namer.target(w);
            return s == null ? "" : s;
        } catch (Throwable t) {
            return "";
        }
    }

    /** Stops the watchdog. */
    void close() {
        running = false;
        if (watchdog != null) {
            LockSupport.unpark(watchdog);
        }
    }

    private void watch() {
        while (running) {
            try {
                long s = start;
                if (s == 0) {
                    // idle now: wait one threshold first (a busy main thread keeps the watchdog
                    // here, without an unpark per message), then park without a deadline
                    LockSupport.parkNanos(this, anrNanos);
                    if (start != 0 || messages != idleMark()) {
                        continue;
                    }
                    watchdogParked = true;
                    if (start == 0 && running) {
                        LockSupport.park(this);
                    }
                    watchdogParked = false;
                    continue;
                }
                long due = s + anrNanos;
                long now = System.nanoTime();
                if (now - due < 0) {
                    LockSupport.parkNanos(this, due - now);
                    continue;
                }
                if (start == s && anrClaim != s) {
                    report(s);
                }
                // this dispatch is reported (or over): look again after a threshold
                LockSupport.parkNanos(this, anrNanos);
            } catch (Throwable t) {
                LockSupport.parkNanos(this, Math.max(1000000L, anrNanos));
            }
        }
    }

    private long lastIdleMark = -1;

    /** Messages seen at the previous look (watchdog only): the main thread was idle all along when unchanged. */
    private long idleMark() {
        long m = messages;
        long prev = lastIdleMark;
        lastIdleMark = m;
        return prev;
    }

    /** Samples the main thread's stack and has the session spool the ANR report. Watchdog thread. */
    private void report(long s) {
        Thread m = main;
        Ring r = ring;
        if (m == null || r == null) {
            return;
        }
        anrClaim = s; // before the look at start: see anrClaim
        Object handle = null;
        String[] stack = null;
        try {
            if (start != s) {
                return; // it ended meanwhile: end() reports it as a block
            }
            stack = sample(m);
            long nowUs = micros(System.nanoTime());
            long p = r.published();
            long b = pBegin;
            long bUs = beginUs;
            Object w = what;
            anrs++;
            handle = sink.anr(new Block(kind, safeTarget(w), r, b, p, bUs, nowUs, true, stack));
        } finally {
            anrStack = stack;
            anrHandle = handle;
            anrSeq = s; // published last: end() waits for it
        }
    }

    /** The main thread's Java stack, innermost first, at most 256 frames. */
    private static String[] sample(Thread m) {
        StackTraceElement[] st = m.getStackTrace();
        int n = Math.min(st.length, 256);
        String[] stack = new String[n];
        for (int i = 0; i < n; i++) {
            stack[i] = st[i].toString();
        }
        return stack;
    }
}
