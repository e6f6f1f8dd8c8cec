package launchapp;

/** Instrumented work the lifecycle methods call (the launch call tree's leaves). */
public final class Work {
    static volatile long sink;

    private Work() {
    }

    static long spin(int n) {
        long s = 0;
        for (int i = 0; i < n; i++) {
            s += step(i);
        }
        sink = s;
        return s;
    }

    static long step(int i) {
        return Integer.toHexString(i * 31).length();
    }

    static void inflate() {
        spin(4);
    }
}
