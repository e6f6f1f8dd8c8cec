package demoblocks;

/** A quick event: some {@link Noise} work, nothing slow. */
final class QuickTask implements Runnable {
    private final int k;

    QuickTask(int k) {
        this.k = k;
    }

    @Override
    public void run() {
        for (int i = 0; i < 8; i++) {
            Noise.some(k + i);
            Noise.layout(k * i);
        }
    }
}
