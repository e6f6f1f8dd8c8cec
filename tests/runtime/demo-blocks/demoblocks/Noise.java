package demoblocks;

/**
 * Quick calls that surround the stalls and make up the quick events: real
 * (small) work, different from event to event.
 */
final class Noise {
    static long sink;

    private Noise() {
    }

    static int format(int k) {
        String s = "item-" + k + "-" + (k * 31);
        sink += s.length();
        return s.hashCode();
    }

    static int checksum(int k) {
        int h = k;
        for (int i = 0; i < 64; i++) {
            h = h * 31 + i;
        }
        sink += h;
        return h;
    }

    static int layout(int k) {
        int w = 0;
        for (int i = 0; i < 8; i++) {
            w += measure(k + i);
        }
        sink += w;
        return w;
    }

    static int measure(int k) {
        return (k * 7) % 13 + 1;
    }

    /** Between 0 and 5 of the calls above, chosen by {@code k}. */
    static void some(int k) {
        int n = Math.floorMod(k * 7 + 3, 6);
        for (int i = 0; i < n; i++) {
            switch (Math.floorMod(k + i, 3)) {
                case 0: format(k + i); break;
                case 1: checksum(k + i); break;
                default: layout(k + i); break;
            }
        }
    }
}
