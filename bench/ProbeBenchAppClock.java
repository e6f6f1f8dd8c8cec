import io.beatline.runtime.Clock;

/**
 * An app-supplied {@link Clock} for bench/ProbeBench's {@code beatline-appclock}
 * variant (issue 14): the same reading as the runtime's NanoClock in an app's
 * class. bench/probe-bench.sh runs it three times: as javac wrote it,
 * instrumented by beatline-instrument like the rest of an app (by default
 * {@link #nowMicros()} gets no probes: --skip-callbacks), and instrumented
 * with --no-skip-callbacks (guarded enter/exit probes in
 * {@link #nowMicros()}, which the runtime must ignore).
 */
public final class ProbeBenchAppClock implements Clock {
    private final long origin = System.nanoTime();

    @Override
    public long nowMicros() {
        return (System.nanoTime() - origin) / 1000L;
    }

    @Override
    public void close() {
    }
}
