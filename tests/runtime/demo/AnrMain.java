package demo;

import io.beatline.runtime.Beatline;
import java.awt.EventQueue;

/**
 * Issue 13's ANR test program: started with -Dbeatline.dispatch=awt (and a
 * low beatline.anrThresholdMs), it posts one event that enters two
 * methods and stalls for good; the test kills it with SIGKILL once the
 * watchdog's report is in the spool.
 */
public final class AnrMain {
    private AnrMain() {
    }

    static void stall() {
        Beatline.i(6);
        System.out.println("stalling");
        System.out.flush();
        while (true) {
            try {
                Thread.sleep(60000);
            } catch (InterruptedException e) {
                return;
            }
        }
    }

    public static void main(String[] args) throws Exception {
        if (Beatline.stats() == null) { // loads the runtime: it starts from the beatline.* properties
            System.out.println("not started");
            System.exit(2);
        }
        EventQueue.invokeLater(new Runnable() {
            @Override
            public void run() {
                Beatline.i(5);
                stall();
                Beatline.o(6);
                Beatline.o(5);
            }
        });
        Thread.sleep(600000);
    }
}
