package demo;

import io.beatline.runtime.Beatline;

/**
 * A program "instrumented by hand": the probe calls beatline-instrument would
 * insert (enter at the start, exit before each return and in a catch-all
 * handler that rethrows). Method ids (see METHOD_IDS): 1 run, 2 work,
 * 3 background, 4 fails.
 *
 * <p>Records written: main thread 2 (run) + 10 × 2 (work) + 2 (fails) = 24;
 * thread "bg" 5 × 2 = 10. Modes (first argument): {@code normal} (exit at the
 * end), {@code flush-then-hang} (flush, print "flushed", wait to be killed).
 */
public final class DemoMain {
    /** The method-ID file of this program (schema/method-id-file.md). */
    public static final String METHOD_IDS = "# beatline method-ids v1 names=original\n"
            + "1,9,demo.DemoMain run (Ljava/lang/String;)V\n"
            + "2,10,demo.DemoMain work (I)V\n"
            + "3,10,demo.DemoMain background ()V\n"
            + "4,10,demo.DemoMain fails ()V\n";

    private DemoMain() {
    }

    public static void main(String[] args) throws Exception {
        run(args.length > 0 ? args[0] : "normal");
    }

    public static void run(String mode) throws Exception {
        Beatline.i(1);
        try {
            Thread bg = new Thread(() -> {
                for (int k = 0; k < 5; k++) {
                    background();
                }
            }, "bg");
            bg.start();
            for (int k = 0; k < 10; k++) {
                work(k);
            }
            try {
                fails();
            } catch (IllegalStateException expected) {
                System.out.println("caught " + expected.getMessage());
            }
            bg.join();
            System.out.println("done");
        } catch (Throwable t) {
            Beatline.o(1);
            throw t;
        }
        Beatline.o(1);
        if (mode.equals("flush-then-hang")) {
            Beatline.flush();
            System.out.println("flushed");
            System.out.flush();
            Thread.sleep(600_000);
        }
    }

    private static void work(int k) throws InterruptedException {
        Beatline.i(2);
        try {
            Thread.sleep(2);
        } catch (Throwable t) {
            Beatline.o(2);
            throw t;
        }
        Beatline.o(2);
    }

    private static void background() {
        Beatline.i(3);
        Beatline.o(3);
    }

    private static void fails() {
        Beatline.i(4);
        try {
            throw new IllegalStateException("boom");
        } catch (Throwable t) {
            Beatline.o(4);
            throw t;
        }
    }
}
