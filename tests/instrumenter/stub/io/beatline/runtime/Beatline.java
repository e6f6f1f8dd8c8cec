// Stub of the Beatline runtime for the instrumenter tests: the two static
// methods that beatline-instrument's probes call, counting calls only.
// Compiled at test time with `javac --release 8`; the real runtime
// (runtime/, issue 5) is not used here.
package io.beatline.runtime;

import java.util.concurrent.atomic.AtomicLong;

public final class Beatline {
    /** Number of enter (i) and exit (o) probe calls so far, all threads. */
    public static final AtomicLong ENTERS = new AtomicLong();
    public static final AtomicLong EXITS = new AtomicLong();
    /** Read by the guarded probes (beatline-instrument without --no-guard): always on here. */
    public static boolean on = true;

    private Beatline() {}

    /** Enter probe: called first in every instrumented method with its methodId. */
    public static void i(int methodId) {
        ENTERS.incrementAndGet();
    }

    /** Exit probe: called before every return and on every exceptional exit. */
    public static void o(int methodId) {
        EXITS.incrementAndGet();
    }
}
