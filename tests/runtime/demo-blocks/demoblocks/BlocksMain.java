package demoblocks;

import java.awt.EventQueue;

/**
 * A desktop program for scripts/demo-blocks: it posts work on the AWT event
 * dispatch thread (runs headless) and some of that work stalls the thread in
 * known methods. Every number the demo checks is fixed here:
 *
 * <ul>
 * <li>{@link FeedScreen} stalls {@value #FEED_STALLS} times in
 *     {@code Db.query} (path FeedScreen.run, FeedScreen.refresh,
 *     FeedRepository.load, Db.query; it sleeps {@value #STALL_MS} ms);
 * <li>{@link GalleryScreen} stalls {@value #GALLERY_STALLS} times in
 *     {@code ImageDecoder.decode} (path GalleryScreen.run, Thumbnails.render,
 *     ImageDecoder.decode; it computes for {@value #STALL_MS} ms);
 * <li>{@link SettingsScreen} stalls {@value #SETTINGS_STALLS} times in
 *     {@code Settings.readFile} (path SettingsScreen.run, Settings.load,
 *     Settings.readFile; it sleeps {@value #STALL_MS} ms);
 * <li>{@value #NEAR_MISSES} events of {@link Prefetch} wait {@value #NEAR_MISS_MS}
 *     ms: below the 700 ms block threshold, never a block;
 * <li>all other events (the first argument, default 4000, {@link QuickTask}
 *     and the same screens without a stall) take well under a millisecond.
 * </ul>
 *
 * Around each call of a stall path, {@link Noise} calls vary from event to
 * event (which ones, how many, before or after), so blocks of one culprit
 * differ in everything but their heaviest path.
 *
 * <p>Prints {@code workload_ms=N stall_ms=M}: wall time from the first post
 * to the end of the last event, and the time the stalls were written to take.
 */
public final class BlocksMain {
    static final int FEED_STALLS = 3;
    static final int GALLERY_STALLS = 2;
    static final int SETTINGS_STALLS = 4;
    static final int NEAR_MISSES = 2;
    static final int STALL_MS = 750;
    static final int NEAR_MISS_MS = 300;

    private BlocksMain() {
    }

    public static void main(String[] args) throws Exception {
        int quick = args.length > 0 ? Integer.parseInt(args[0]) : 4000;
        int stalls = FEED_STALLS + GALLERY_STALLS + SETTINGS_STALLS + NEAR_MISSES;
        int every = Math.max(1, quick / (stalls + 1));
        int feed = 0, gallery = 0, settings = 0, near = 0;
        long t0 = System.nanoTime();
        for (int k = 0; k < quick; k++) {
            switch (k % 4) {
                case 0: EventQueue.invokeLater(new QuickTask(k)); break;
                case 1: EventQueue.invokeLater(new FeedScreen(k, false)); break;
                case 2: EventQueue.invokeLater(new GalleryScreen(k, false)); break;
                default: EventQueue.invokeLater(new SettingsScreen(k, false)); break;
            }
            if (k % every == every - 1) {
                // one slow event in turn: feed, settings, gallery, settings, prefetch, ...
                int turn = k / every;
                if (turn % 2 == 1 && settings < SETTINGS_STALLS) {
                    EventQueue.invokeLater(new SettingsScreen(k, true));
                    settings++;
                } else if (feed < FEED_STALLS && (turn % 4 == 0 || gallery >= GALLERY_STALLS)) {
                    EventQueue.invokeLater(new FeedScreen(k, true));
                    feed++;
                } else if (gallery < GALLERY_STALLS) {
                    EventQueue.invokeLater(new GalleryScreen(k, true));
                    gallery++;
                } else if (near < NEAR_MISSES) {
                    EventQueue.invokeLater(new Prefetch(k));
                    near++;
                }
            }
            if (k % 1024 == 1023) {
                Thread.sleep(1); // the poster is not a flood: the EDT catches up
            }
        }
        // whatever the schedule above did not place
        for (; feed < FEED_STALLS; feed++) {
            EventQueue.invokeLater(new FeedScreen(quick + feed, true));
        }
        for (; gallery < GALLERY_STALLS; gallery++) {
            EventQueue.invokeLater(new GalleryScreen(quick + gallery, true));
        }
        for (; settings < SETTINGS_STALLS; settings++) {
            EventQueue.invokeLater(new SettingsScreen(quick + settings, true));
        }
        for (; near < NEAR_MISSES; near++) {
            EventQueue.invokeLater(new Prefetch(quick + near));
        }
        EventQueue.invokeAndWait(new QuickTask(-1));
        long t1 = System.nanoTime();
        long stallMs = (long) (FEED_STALLS + GALLERY_STALLS + SETTINGS_STALLS) * STALL_MS
                + (long) NEAR_MISSES * NEAR_MISS_MS;
        System.out.println("workload_ms=" + (t1 - t0) / 1_000_000 + " stall_ms=" + stallMs
                + " quick_events=" + quick + " sink=" + (Noise.sink & 1));
        System.exit(0);
    }
}
