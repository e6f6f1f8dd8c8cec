package demoblocks;

/** Refreshes a feed; with {@code stall} its query sleeps (culprit {@link Db#query}). */
final class FeedScreen implements Runnable {
    private final int k;
    private final boolean stall;

    FeedScreen(int k, boolean stall) {
        this.k = k;
        this.stall = stall;
    }

    @Override
    public void run() {
        if (k % 2 == 0) {
            Noise.some(k);
        }
        refresh();
        Noise.some(k + 1);
    }

    private void refresh() {
        Noise.layout(k);
        FeedRepository.load(k, stall);
        if (k % 3 == 0) {
            Noise.format(k);
        }
    }
}

final class FeedRepository {
    private FeedRepository() {
    }

    static int load(int k, boolean stall) {
        if (k % 5 < 2) {
            Noise.checksum(k);
        }
        int n = Db.query("SELECT * FROM feed WHERE page = " + (k % 7), stall);
        Noise.some(k + 2);
        return n;
    }
}

final class Db {
    private Db() {
    }

    static int query(String sql, boolean stall) {
        int h = Noise.format(sql.length());
        if (stall) {
            try {
                Thread.sleep(BlocksMain.STALL_MS); // the main thread waits on "disk"
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
        return h;
    }
}
