package demoblocks;

/** Opens settings; with {@code stall} reading the file sleeps (culprit {@link Settings#readFile}). */
final class SettingsScreen implements Runnable {
    private final int k;
    private final boolean stall;

    SettingsScreen(int k, boolean stall) {
        this.k = k;
        this.stall = stall;
    }

    @Override
    public void run() {
        Settings.load(k, stall);
        Noise.some(k * 3);
    }
}

final class Settings {
    private Settings() {
    }

    static int load(int k, boolean stall) {
        if (k % 3 != 0) {
            Noise.format(k);
        }
        int n = readFile("settings-" + (k % 4) + ".xml", stall);
        Noise.some(k + 5);
        return n;
    }

    static int readFile(String name, boolean stall) {
        if (stall) {
            try {
                Thread.sleep(BlocksMain.STALL_MS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
        return Noise.checksum(name.length());
    }
}

/** Warms a cache for 300 ms: slow, but below the block threshold (never a block). */
final class Prefetch implements Runnable {
    private final int k;

    Prefetch(int k) {
        this.k = k;
    }

    @Override
    public void run() {
        Noise.some(k);
        warm();
    }

    private static void warm() {
        try {
            Thread.sleep(BlocksMain.NEAR_MISS_MS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
