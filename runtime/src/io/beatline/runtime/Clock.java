package io.beatline.runtime;

/**
 * Monotonic time source of the probes: {@link #nowMicros()} is read on every
 * {@link Beatline#i(int)} / {@link Beatline#o(int)}, so it sits on the probe's
 * critical path.
 *
 * <p>Implementations must be thread-safe, must never throw, and must not
 * allocate. The value is in microseconds (µs) since an arbitrary origin fixed
 * for the lifetime of the clock; only differences are meaningful. It must
 * never go backwards (a monotonic clock, not the wall clock).
 *
 * <p>JVM implementations: {@link NanoClock} (the default, exact µs from
 * {@code System.nanoTime()}) and {@link TickerClock} (a cached value updated
 * by a daemon thread: cheaper to read, coarse). The choice and the numbers
 * behind it are in {@code runtime/README.md}. Android (a later issue) may
 * supply {@code SystemClock.elapsedRealtimeNanos()}-based clocks.
 */
public interface Clock {
    /** @return µs since this clock's origin, monotonic, 0 or more. */
    long nowMicros();

    /** Releases what the clock holds (a ticker thread, say); idempotent, never throws. */
    void close();
}
