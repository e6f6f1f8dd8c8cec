package io.beatline.runtime;

/**
 * Android start (issue 13): the Android defaults on top of
 * {@link BeatlineConfig.Builder} and the main Looper's dispatch monitor.
 *
 * <pre>
 * AndroidBeatline.start(AndroidBeatline.builder()
 *         .server("https://beatline.example").app("com.example").ingestKey(KEY).build(BuildConfig.VERSION_NAME)
 *         .spoolDir(new File(context.getFilesDir(), "beatline"))  ...);
 * </pre>
 */
public final class AndroidBeatline {
    private AndroidBeatline() {
    }

    /**
     * A builder with the Android defaults: {@code uploadMode} triggered
     * (only windows around events, plus a {@code sampleRate} fraction of
     * sessions in full) and the main Looper's thread as the main thread.
     */
    public static BeatlineConfig.Builder builder() {
        return new BeatlineConfig.Builder().uploadMode("triggered").threadPolicy(new AndroidThreadPolicy(true));
    }

    /**
     * {@link Beatline#start}, then {@link LooperDispatch#install()}. Never throws.
     *
     * @return whether the runtime started (the hook is installed only then)
     */
    public static boolean start(BeatlineConfig config) {
        boolean ok = Beatline.start(config);
        if (ok) {
            try {
                LooperDispatch.install();
            } catch (Throwable t) {
                Log.STDERR.warn("Looper dispatch monitor not installed: " + t);
            }
        }
        return ok;
    }
}
