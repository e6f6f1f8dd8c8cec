package io.beatline.runtime;

import java.util.concurrent.locks.LockSupport;

/**
 * A cached {@link Clock} (the way Tencent Matrix's AppMethodBeat keeps time):
 * a daemon thread named {@code beatline-ticker} stores
 * {@code System.nanoTime() / 1000} into a volatile field every
 * {@code periodMicros}; {@link #nowMicros()} is one volatile read (under 1 ns
 * instead of ~21 ns).
 *
 * <p>The price is resolution and CPU: the value lags the true time by up to a
 * period plus the thread's wake-up latency (measured: mean lag 0.55 ms, max
 * 4.3 ms at a 1 ms period; a period under ~60 µs is not reachable by parking
 * at all on Linux), and the thread costs CPU (1.4 % of a core at 1 ms, 10 %
 * at 100 µs). Method durations shorter than the lag read as 0. Opt-in only
 * ({@code beatline.clock=ticker}); never the default.
 */
public final class TickerClock implements Clock {
    /** {@code System.nanoTime()} at this clock's 0 (read by {@link DispatchMonitor}: µs from a nanoTime it has). */
    final long originNanos = System.nanoTime();
    private volatile long now;
    private static final java.util.concurrent.atomic.AtomicLongFieldUpdater<TickerClock> NOW =
            java.util.concurrent.atomic.AtomicLongFieldUpdater.newUpdater(TickerClock.class, "now");
    private static final java.util.concurrent.atomic.AtomicIntegerFieldUpdater<TickerClock> ACTIVE =
            java.util.concurrent.atomic.AtomicIntegerFieldUpdater.newUpdater(TickerClock.class, "active");
    private volatile boolean running = true;
    private final Thread thread;
    /** Gated clock: the thread ticks only between {@link #resume()} and {@link #pause()}. */
    private final boolean gated;
    private volatile int active;
    private volatile boolean parked;
    /**
     * Gated clock: how long the thread keeps ticking after a pause before it
     * parks without a deadline (so a main thread dispatching message after
     * message does not pay an unpark per message; an idle app wakes no
     * thread after this), ns.
     */
    static final long GRACE_NANOS = 200000000L;
    /** The refresh period, µs: the clock's resolution (plus wake-up latency). */
    final long periodMicros;

    /**
     * Starts the ticker thread.
     *
     * @param periodMicros how often the cached value is refreshed, µs, at least 1
     */
    public TickerClock(final long periodMicros) {
        this(periodMicros, false);
    }

    /**
     * A ticker that, when {@code gated}, runs only between {@link #resume()}
     * and {@link #pause()} (issue 13's triggered mode: while the main thread
     * dispatches a message); paused, its thread parks without a deadline and
     * the value stays where it was.
     *
     * @param periodMicros how often the cached value is refreshed, µs, at least 1
     * @param gated whether the thread ticks only while resumed
     */
    public TickerClock(final long periodMicros, final boolean gated) {
        this.periodMicros = Math.max(1L, periodMicros);
        this.gated = gated;
        final long periodNanos = Math.max(1L, periodMicros) * 1000L;
        thread = new Thread(new Runnable() {
            @Override
            public void run() {
                long lastActive = System.nanoTime();
                while (running) {
                    if (gated) {
                        long t = System.nanoTime();
                        if (active != 0) {
                            lastActive = t;
                        } else if (t - lastActive >= GRACE_NANOS) {
                            // idle for GRACE_NANOS: sleep until the next resume() (one unpark then)
                            parked = true;
                            if (active == 0 && running) {
                                LockSupport.park(this);
                            }
                            parked = false;
                            lastActive = System.nanoTime();
                            continue;
                        }
                    }
                    now = (System.nanoTime() - originNanos) / 1000L;
                    LockSupport.parkNanos(periodNanos);
                }
            }
        }, "beatline-ticker");
        thread.setDaemon(true);
        thread.start();
    }

    /** {@inheritDoc} */
    @Override
    public long nowMicros() {
        return now;
    }

    /** Exact µs on this clock's time line ({@code System.nanoTime()}): for the few reads that need it. */
    long exactMicros() {
        return (System.nanoTime() - originNanos) / 1000L;
    }

    /**
     * Gated clock: start ticking; the value is set to {@code nowUs} at once
     * (the caller's exact reading, so no record of the dispatch reads earlier).
     */
    void resume(long nowUs) {
        if (gated) {
            NOW.lazySet(this, nowUs);
            active = 1;
            if (parked) {
                LockSupport.unpark(thread);
            }
        }
    }

    /** Gated clock: stop ticking after the current period. */
    void pause() {
        if (gated) {
            ACTIVE.lazySet(this, 0);
        }
    }

    /** Stops the ticker thread (the value then stays frozen). */
    @Override
    public void close() {
        running = false;
        LockSupport.unpark(thread);
    }
}
