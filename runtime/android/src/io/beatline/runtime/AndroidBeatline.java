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
     * sessions in full), the main Looper's thread as the main thread, the
     * phone behaviour (issue 14: {@code asyncFlush}, no idle wake-ups,
     * {@code uploadMinBatches} 20) and the phone memory budget. Platform
     * pieces that need a {@code Context}: {@code AndroidStart.builder}.
     */
    public static BeatlineConfig.Builder builder() {
        return new BeatlineConfig.Builder().uploadMode("triggered").threadPolicy(new AndroidThreadPolicy(true))
                // phone behaviour (issue 14): no disk or network on the main thread, no idle wake-ups,
                // uploads batched (the radio stays on for seconds after each request)
                .asyncFlush(true).idleWakeups(false).uploadMinBatches(20)
                // memory budget (runtime/README.md, "On Android"): rings at most
                // 8 x (2^17 + 15 x 2^13) = 2,031,616 bytes, records copied out at most 2^17 x 8 = 1,048,576
                .mainBufferRecords(1 << 17).threadBufferRecords(1 << 13).maxThreads(16)
                .maxPendingRecords(1 << 17).maxBatchRecords(1 << 16)
                .spoolMaxFiles(100).spoolMaxBytes(8L << 20).shutdownWaitMillis(0);
    }

    /**
     * {@link Beatline#start}, then {@link LooperDispatch#install()} and, with
     * {@code AndroidLifecycle} (what {@code AndroidStart.builder} sets), the
     * launch tracer's platform (issue 15). Never throws.
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
            try {
                if (config.lifecycle instanceof io.beatline.runtime.android.AndroidLifecycle) {
                    ((io.beatline.runtime.android.AndroidLifecycle) config.lifecycle).launches();
                }
            } catch (Throwable t) {
                Log.STDERR.warn("launch tracer not installed: " + t);
            }
        }
        return ok;
    }
}
