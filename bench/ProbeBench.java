import io.beatline.runtime.Beatline;
import io.beatline.runtime.BeatlineConfig;
import io.beatline.runtime.Log;
import io.beatline.runtime.TickerClock;
import java.io.File;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.util.Arrays;
import java.util.concurrent.CyclicBarrier;

/**
 * ns per probe pair (enter + exit around a tiny body) for one variant, in
 * this JVM: warm-up rounds, then measured rounds, median printed. Run by
 * bench/probe-bench.sh, one fresh JVM per variant (as JMH forks), so that
 * one variant's profile does not shape another's compiled code.
 *
 *   java -cp beatline-runtime.jar:. ProbeBench VARIANT THREADS
 *
 * Variants: baseline (the body only), empty (empty static i/o),
 * nanotime (two System.nanoTime() reads), off (Beatline not started),
 * beatline (started, NanoClock, every thread traced), beatline-ticker
 * (started, TickerClock at 1 ms), matrix (one global long[] ring with a
 * shared index and a clock cached every 5 ms by a thread, as Tencent
 * Matrix's AppMethodBeat keeps it), beatline-appclock (started, an app's
 * Clock, ProbeBenchAppClock from the class path: probe-bench.sh runs it as
 * compiled, instrumented and instrumented with --no-skip-callbacks; an
 * optional third argument labels the line).
 * Each line gives the median wall time per pair over the rounds and the
 * median CPU time of the probing threads per pair (the machine is shared:
 * the CPU figure is the one to compare).
 */
public final class ProbeBench {
    static final int PAIRS = 10_000_000;
    static final int WARMUP = 5;
    static final int ROUNDS = 9;
    static volatile long sink;

    // --- empty static probes -------------------------------------------------
    static final class Empty {
        static void i(int id) {
        }

        static void o(int id) {
        }
    }

    // --- Matrix-style global ring ---------------------------------------------
    static final class Matrix {
        static final long[] BUF = new long[1_000_000];
        static int index;
        static volatile long diffMs;
        static final long START = System.nanoTime();

        static {
            Thread t = new Thread(() -> {
                while (true) {
                    diffMs = (System.nanoTime() - START) / 1_000_000L;
                    try {
                        Thread.sleep(5);
                    } catch (InterruptedException e) {
                        return;
                    }
                }
            }, "matrix-clock");
            t.setDaemon(true);
            t.start();
        }

        static void i(int id) {
            int idx = index;
            BUF[idx] = ((long) id << 43) | (diffMs & 0x7FFFFFFFFFFL);
            if (++idx >= BUF.length) {
                idx = 0;
            }
            index = idx;
        }

        static void o(int id) {
            int idx = index;
            BUF[idx] = (1L << 63) | ((long) id << 43) | (diffMs & 0x7FFFFFFFFFFL);
            if (++idx >= BUF.length) {
                idx = 0;
            }
            index = idx;
        }
    }

    // --- one loop per variant (each its own call sites) -------------------------
    static long baseline(int n, long acc) {
        for (int k = 0; k < n; k++) {
            acc = acc * 31 + k;
        }
        return acc;
    }

    static long empty(int n, long acc) {
        for (int k = 0; k < n; k++) {
            Empty.i(k & 1023);
            acc = acc * 31 + k;
            Empty.o(k & 1023);
        }
        return acc;
    }

    static long nanotime(int n, long acc) {
        for (int k = 0; k < n; k++) {
            acc += System.nanoTime();
            acc = acc * 31 + k;
            acc += System.nanoTime();
        }
        return acc;
    }

    static long beatline(int n, long acc) {
        for (int k = 0; k < n; k++) {
            Beatline.i(k & 1023);
            acc = acc * 31 + k;
            Beatline.o(k & 1023);
        }
        return acc;
    }

    static long matrix(int n, long acc) {
        for (int k = 0; k < n; k++) {
            Matrix.i(k & 1023);
            acc = acc * 31 + k;
            Matrix.o(k & 1023);
        }
        return acc;
    }

    static long run(String v, int n, long acc) {
        switch (v) {
            case "baseline": return baseline(n, acc);
            case "empty": return empty(n, acc);
            case "nanotime": return nanotime(n, acc);
            case "off":
            case "beatline":
            case "beatline-ticker":
            case "beatline-appclock": return beatline(n, acc);
            case "matrix": return matrix(n, acc);
            default: throw new IllegalArgumentException(v);
        }
    }

    public static void main(String[] args) throws Exception {
        final String v = args[0];
        final int threads = Integer.parseInt(args[1]);
        final String label = args.length > 2 ? args[2] : v;
        final ThreadMXBean mx = ManagementFactory.getThreadMXBean();
        final long[][] cpu = new long[threads][WARMUP + ROUNDS];
        if (v.startsWith("beatline")) {
            BeatlineConfig.Builder b = new BeatlineConfig.Builder().server("http://127.0.0.1:9").app("bench")
                    .ingestKey("k").spoolDir(new File(System.getProperty("java.io.tmpdir"), "beatline-bench-spool"))
                    .mainBufferRecords(1 << 17).threadBufferRecords(1 << 17)
                    .flushIntervalMillis(3_600_000L).flushFill(0) // rings wrap; no dumps during the timing
                    .log(new Log() {
                        @Override
                        public void warn(String msg) {
                        }

                        @Override
                        public void debug(String msg) {
                        }
                    });
            if (v.equals("beatline-ticker")) {
                b.clock(new TickerClock(1000));
            }
            if (v.equals("beatline-appclock")) {
                b.clock((io.beatline.runtime.Clock) Class.forName("ProbeBenchAppClock").getDeclaredConstructor()
                        .newInstance());
            }
            if (!Beatline.start(b.build())) {
                throw new IllegalStateException("not started");
            }
        }
        final double[] perRound = new double[WARMUP + ROUNDS];
        final CyclicBarrier start = new CyclicBarrier(threads + 1);
        final CyclicBarrier end = new CyclicBarrier(threads + 1);
        Thread[] ts = new Thread[threads];
        for (int t = 0; t < threads; t++) {
            final int seed = t;
            ts[t] = new Thread(() -> {
                long acc = seed;
                try {
                    for (int r = 0; r < WARMUP + ROUNDS; r++) {
                        start.await();
                        long c0 = mx.getCurrentThreadCpuTime();
                        acc = run(v, PAIRS, acc);
                        cpu[seed][r] = mx.getCurrentThreadCpuTime() - c0;
                        end.await();
                    }
                } catch (Exception e) {
                    throw new RuntimeException(e);
                }
                sink += acc;
            }, t == 0 ? "main" : "worker-" + t);
            ts[t].start();
        }
        for (int r = 0; r < WARMUP + ROUNDS; r++) {
            start.await();
            long t0 = System.nanoTime();
            end.await();
            perRound[r] = (System.nanoTime() - t0) / (double) PAIRS;
        }
        for (Thread t : ts) {
            t.join();
        }
        double[] m = Arrays.copyOfRange(perRound, WARMUP, WARMUP + ROUNDS);
        Arrays.sort(m);
        double[] c = new double[ROUNDS];
        for (int r = 0; r < ROUNDS; r++) {
            long sum = 0;
            for (int t = 0; t < threads; t++) {
                sum += cpu[t][WARMUP + r];
            }
            c[r] = sum / (double) threads / PAIRS; // CPU ns per pair of one thread
        }
        Arrays.sort(c);
        String threadsTraced = "";
        Beatline.Stats st = Beatline.stats();
        if (st != null) {
            threadsTraced = " (rings: " + st.threads + ")";
        }
        System.out.printf("%-24s threads=%d  median %.2f ns/pair  (min %.2f, max %.2f)  cpu median %.2f ns/pair"
                + " (min %.2f)%s%n", label, threads, m[m.length / 2], m[0], m[m.length - 1], c[c.length / 2], c[0],
                threadsTraced);
        System.exit(0);
    }
}
