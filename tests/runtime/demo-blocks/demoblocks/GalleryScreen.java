package demoblocks;

/** Shows thumbnails; with {@code stall} the decoder computes for 750 ms (culprit {@link ImageDecoder#decode}). */
final class GalleryScreen implements Runnable {
    private final int k;
    private final boolean stall;

    GalleryScreen(int k, boolean stall) {
        this.k = k;
        this.stall = stall;
    }

    @Override
    public void run() {
        Noise.some(k + 3);
        Thumbnails.render(k, stall);
        if (k % 4 == 1) {
            Noise.layout(k);
        }
    }
}

final class Thumbnails {
    private Thumbnails() {
    }

    static long render(int k, boolean stall) {
        Noise.some(k);
        byte[] img = new byte[64 + k % 32];
        long px = ImageDecoder.decode(img, stall);
        if (k % 2 == 1) {
            Noise.checksum((int) px);
        }
        return px;
    }
}

final class ImageDecoder {
    private ImageDecoder() {
    }

    /** With {@code stall}: decodes the same bytes over and over for 750 ms (CPU, no calls). */
    static long decode(byte[] img, boolean stall) {
        long px = 0;
        long until = System.nanoTime() + (stall ? BlocksMain.STALL_MS * 1_000_000L : 0);
        do {
            for (int i = 0; i < img.length; i++) {
                px = px * 131 + img[i] + i;
            }
        } while (System.nanoTime() < until);
        Noise.sink += px;
        return px;
    }
}
