package io.beatline.runtime;

/**
 * The default {@link Clock}: {@code System.nanoTime()} divided by 1,000, with
 * its origin at construction. Exact to the µs. Cost on the reference machine
 * (Linux, TSC clocksource, JDK 17): 21.4 ns per read (docs/benchmarks.md,
 * "Runtime probes").
 */
public final class NanoClock implements Clock {
    /** {@code System.nanoTime()} at this clock's 0 (read by {@link DispatchMonitor}: µs from a nanoTime it has). */
    final long originNanos = System.nanoTime();

    /** {@inheritDoc} */
    @Override
    public long nowMicros() {
        return (System.nanoTime() - originNanos) / 1000L;
    }

    /** Nothing to release. */
    @Override
    public void close() {
    }
}
