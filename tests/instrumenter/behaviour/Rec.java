// Recording runtime for the instrumenter behaviour test: given to the tool as
// --runtime-class beatlinetest/Rec, so every probe calls Rec.i(id) on method
// entry and Rec.o(id) on every exit (normal or exceptional). Each thread
// appends its events to its own list (no locking on the hot path); at JVM
// exit a shutdown hook writes them to the file named by the system property
// beatlinetest.out, one event a line:
//
//   THREAD_NAME <TAB> i|o <TAB> methodId
//
// threads sorted by name, each thread's events in order. Two threads with the
// same name would mix: the dump then says so on a line starting with "!!".
// Compiled with --release 8 at test time; it is never instrumented itself.
package beatlinetest;

import java.io.FileOutputStream;
import java.io.IOException;
import java.io.OutputStreamWriter;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

public final class Rec {
    /** Read by the guarded probes (beatline-instrument without --no-guard): always on here. */
    public static boolean on = true;

    private static final class Events {
        final String thread = Thread.currentThread().getName();
        long[] ev = new long[1024];
        int n;

        void add(long e) {
            if (n == ev.length) ev = java.util.Arrays.copyOf(ev, n * 2);
            ev[n++] = e;
        }
    }

    private static final List<Events> ALL = new ArrayList<>();
    private static final ThreadLocal<Events> MINE = ThreadLocal.withInitial(() -> {
        Events e = new Events();
        synchronized (ALL) {
            ALL.add(e);
        }
        return e;
    });

    static {
        Runtime.getRuntime().addShutdownHook(new Thread(Rec::dump, "beatlinetest-dump"));
    }

    private Rec() {}

    public static void i(int methodId) {
        MINE.get().add((long) methodId << 1);
    }

    public static void o(int methodId) {
        MINE.get().add((long) methodId << 1 | 1);
    }

    private static void dump() {
        String path = System.getProperty("beatlinetest.out");
        if (path == null) return;
        Map<String, Events> byName = new TreeMap<>();
        List<String> clashes = new ArrayList<>();
        synchronized (ALL) {
            for (Events e : ALL)
                if (byName.put(e.thread, e) != null) clashes.add(e.thread);
        }
        try (Writer w = new OutputStreamWriter(new FileOutputStream(path), StandardCharsets.UTF_8)) {
            for (String c : clashes) w.write("!!\ttwo threads named " + c + "\n");
            for (Events e : byName.values())
                for (int k = 0; k < e.n; k++)
                    w.write(e.thread + "\t" + ((e.ev[k] & 1) == 0 ? "i" : "o") + "\t" + (e.ev[k] >>> 1) + "\n");
        } catch (IOException ex) {
            System.err.println("beatlinetest.Rec: cannot write " + path + ": " + ex);
        }
    }
}
