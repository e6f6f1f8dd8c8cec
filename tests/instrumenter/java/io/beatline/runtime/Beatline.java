package io.beatline.runtime;

/** Stub runtime for the instrumenter tests: counts probes, optionally prints them. */
public final class Beatline {
    public static long enters, exits;
    /** Read by the guarded probes (beatline-instrument without --no-guard): always on here. */
    public static boolean on = true;
    public static boolean print = Boolean.getBoolean("beatline.print");

    private Beatline() {}

    public static void i(int id) {
        enters++;
        if (print) System.out.println("i " + id);
    }

    public static void o(int id) {
        exits++;
        if (print) System.out.println("o " + id);
    }
}
