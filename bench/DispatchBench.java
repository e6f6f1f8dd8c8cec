import io.beatline.runtime.Beatline;
import io.beatline.runtime.BeatlineConfig;
import io.beatline.runtime.DispatchMonitor;
import io.beatline.runtime.Lifecycle;
import io.beatline.runtime.ThreadPolicy;
import java.io.File;
import java.util.Arrays;

/**
 * Issue 13 figures (docs/benchmarks.md, "Dispatch monitor"), run by
 * bench/dispatch-bench.sh:
 *
 * <pre>
 *   java DispatchBench cost bare|full|triggered SPOOL
 *       ns per message of the Looper-style printer: "bare" = a Printer that
 *       only receives the two lines (what any app printer costs), "full" /
 *       "triggered" = the same printer driving DispatchMonitor.begin/end of a
 *       started runtime in that upload mode (triggered: the gated ticker is
 *       resumed and paused per message); 5 warm-up rounds, median of 9
 *       rounds of 2,000,000 empty messages
 *   java DispatchBench bytes full|triggered SECONDS SPOOL
 *       a busy "main" thread for SECONDS s: messages of 200 traced call
 *       pairs back to back, and every 2 s one message that stalls 750 ms
 *       (a block); prints the bytes spooled (= what would be uploaded)
 * </pre>
 */
public final class DispatchBench {
    interface Printer {
        void println(String x);
    }

    static volatile long sink;
    static final String BEGIN = ">>>>> Dispatching to Handler (android.os.Handler) {1a2b3c} com.example.Feed$1@4d5e6f: 0";
    static final String END = "<<<<< Finished to Handler (android.os.Handler) {1a2b3c} com.example.Feed$1@4d5e6f";

    static BeatlineConfig config(String mode, File spool, final Thread main) {
        return new BeatlineConfig.Builder().server("http://127.0.0.1:9").app("bench").ingestKey("k").spoolDir(spool)
                .uploadMode(mode).sampleRate(0).backoff(3600000, 3600000).flushIntervalMillis(3600000)
                .spoolMaxFiles(1000000).spoolMaxBytes(1L << 36)
                .threadPolicy(new ThreadPolicy() {
                    @Override
                    public boolean isMain(Thread t) {
                        return t == main;
                    }

                    @Override
                    public boolean trace(Thread t) {
                        return false;
                    }
                }).lifecycle(new Lifecycle() {
                    @Override
                    public void install(Hooks hooks) {
                    }
                }).build();
    }

    static final DispatchMonitor.Namer NAMER = new DispatchMonitor.Namer() {
        @Override
        public String target(Object what) {
            return String.valueOf(what);
        }
    };

    public static void main(String[] a) throws Exception {
        if (a[0].equals("cost")) {
            cost(a[1], new File(a[2]));
        } else {
            bytes(a[1], Integer.parseInt(a[2]), new File(a[3]));
        }
    }

    static void cost(String v, File spool) {
        final DispatchMonitor m;
        if (v.equals("bare")) {
            m = null;
        } else {
            Beatline.start(config(v, spool, Thread.currentThread()));
            m = Beatline.dispatchMonitor("looper", NAMER);
        }
        Printer p = m == null ? new Printer() {
            @Override
            public void println(String x) {
                sink += x.length();
            }
        } : new Printer() {
            @Override
            public void println(String x) {
                char c = x.charAt(0);
                if (c == '>') {
                    m.begin(x);
                } else if (c == '<') {
                    m.end();
                }
            }
        };
        final int n = 2000000;
        double[] r = new double[9];
        for (int round = -5; round < 9; round++) {
            long t0 = System.nanoTime();
            for (int i = 0; i < n; i++) {
                p.println(BEGIN);
                p.println(END);
            }
            double ns = (System.nanoTime() - t0) / (double) n;
            if (round >= 0) {
                r[round] = ns;
            }
        }
        Arrays.sort(r);
        System.out.printf("cost %-9s %8.1f ns/message%n", v, r[4]);
        Beatline.shutdown(0);
    }

    static void bytes(String mode, int seconds, File spool) throws Exception {
        Beatline.start(config(mode, spool, Thread.currentThread()));
        DispatchMonitor m = Beatline.dispatchMonitor("looper", NAMER);
        long end = System.nanoTime() + seconds * 1000000000L;
        long nextBlock = System.nanoTime() + 2000000000L;
        long msgs = 0;
        while (System.nanoTime() < end) {
            m.begin(BEGIN);
            for (int k = 0; k < 200; k++) {
                Beatline.i(10 + k % 40);
                Beatline.o(10 + k % 40);
            }
            if (System.nanoTime() > nextBlock) {
                Beatline.i(99);
                Thread.sleep(750);
                Beatline.o(99);
                nextBlock = System.nanoTime() + 2000000000L;
            }
            m.end();
            msgs++;
            if ((msgs & 1023) == 0) {
                Thread.sleep(1); // a UI thread is not 100 % busy
            }
        }
        Beatline.Stats st = Beatline.stats();
        Beatline.flush();
        long bytes = 0;
        File[] fs = spool.listFiles();
        for (File f : fs == null ? new File[0] : fs) {
            if (f.getName().endsWith(".blb.gz")) {
                bytes += f.length();
            }
        }
        System.out.printf("bytes %-9s %d s: %d messages, %d blocks, %d bytes spooled = %.0f bytes/min%n", mode,
                seconds, msgs, st.blocks, bytes, bytes * 60.0 / seconds);
        Beatline.shutdown(0);
    }
}
