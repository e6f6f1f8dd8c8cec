package demo;

import io.beatline.runtime.Beatline;
import io.beatline.runtime.BeatlineConfig;
import java.io.File;

/**
 * A long-running {@code main} "instrumented by hand" whose calls span many
 * batches: it starts the runtime from code (flush interval 10 ms, at most 64
 * records per batch, so a dump is cut into many batches), then enters
 * {@code main} (id 1) and calls {@code work} (id 2) {@value #WORK} times, each
 * calling {@code leaf} (id 3) {@value #LEAVES} times and the recursive
 * {@code down} (id 4) {@value #DEPTH} + 1 levels deep; every 8th work it
 * flushes explicitly, so main is open across many dumps whatever the timer
 * does. Thread "bg" runs {@code background} (id 5), {@value #TICKS} calls of
 * {@code tick} (id 6), and ends before main returns. The JVM's shutdown hook
 * makes the final dump and uploads.
 *
 * <p>Arguments: server URL, app, build, ingest key, spool directory, and
 * optionally {@code exit-inside-main}: main then ends the JVM with
 * {@code System.exit(0)} without returning, so main is still open at the
 * final dump. Prints {@code main_us N}: main's duration measured inside its
 * probes (a lower bound of what the probes record); with
 * {@code exit-inside-main}, up to the start of the last work call (the last
 * time main's thread recorded anything is after it).
 */
public final class SpanMain {
    public static final String METHOD_IDS = "# beatline method-ids v1 names=original\n"
            + "1,9,demo.SpanMain main ([Ljava/lang/String;)V\n"
            + "2,10,demo.SpanMain work (I)V\n"
            + "3,10,demo.SpanMain leaf ()V\n"
            + "4,10,demo.SpanMain down (I)V\n"
            + "5,10,demo.SpanMain background ()V\n"
            + "6,10,demo.SpanMain tick ()V\n";
    public static final int WORK = 40;
    public static final int LEAVES = 20;
    public static final int DEPTH = 5;
    public static final int TICKS = 300;

    private SpanMain() {
    }

    public static void main(String[] args) throws Exception {
        BeatlineConfig cfg = new BeatlineConfig.Builder().server(args[0]).app(args[1]).build(args[2])
                .ingestKey(args[3]).spoolDir(new File(args[4])).flushIntervalMillis(10).maxBatchRecords(64)
                .mainBufferRecords(1 << 16).threadBufferRecords(1 << 14).shutdownWaitMillis(60_000).build();
        if (!Beatline.start(cfg)) {
            System.exit(3);
        }
        boolean exitInside = args.length > 5 && args[5].equals("exit-inside-main");
        Beatline.i(1);
        long t0 = System.nanoTime();
        try {
            Thread bg = new Thread(SpanMain::background, "bg");
            bg.start();
            long lastWork = 0;
            for (int k = 0; k < WORK; k++) {
                lastWork = System.nanoTime();
                work(k);
                if (k % 8 == 7) {
                    Beatline.flush();
                }
            }
            bg.join();
            if (exitInside) {
                System.out.println("main_us " + (lastWork - t0) / 1000);
                System.out.flush();
                System.exit(0); // main never exits: the shutdown hook's final dump closes it
            }
        } catch (Throwable t) {
            Beatline.o(1);
            throw t;
        }
        long t1 = System.nanoTime();
        Beatline.o(1);
        System.out.println("main_us " + (t1 - t0) / 1000);
    }

    private static void work(int k) throws InterruptedException {
        Beatline.i(2);
        try {
            for (int j = 0; j < LEAVES; j++) {
                leaf();
            }
            down(DEPTH);
            Thread.sleep(2);
        } catch (Throwable t) {
            Beatline.o(2);
            throw t;
        }
        Beatline.o(2);
    }

    private static void leaf() {
        Beatline.i(3);
        Beatline.o(3);
    }

    private static void down(int n) {
        Beatline.i(4);
        try {
            if (n > 0) {
                down(n - 1);
            }
        } catch (Throwable t) {
            Beatline.o(4);
            throw t;
        }
        Beatline.o(4);
    }

    private static void background() {
        Beatline.i(5);
        try {
            for (int k = 0; k < TICKS; k++) {
                tick();
                if (k % 50 == 49) {
                    Thread.sleep(3);
                }
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } finally {
            Beatline.o(5);
        }
    }

    private static void tick() {
        Beatline.i(6);
        Beatline.o(6);
    }
}
