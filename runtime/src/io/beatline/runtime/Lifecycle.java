package io.beatline.runtime;

/**
 * Connects the runtime to the host's life cycle: where to flush (the app
 * going to the background, the process exiting) and, later, launch marks
 * (TTID). {@link Beatline#start(BeatlineConfig)} calls {@link #install} once.
 *
 * <p>JVM implementation: {@link JvmLifecycle} (a shutdown hook). Android
 * (later issue): {@code Application.ActivityLifecycleCallbacks} and
 * Choreographer, calling the same {@link Hooks}.
 */
public interface Lifecycle {
    /** What the runtime offers to the life cycle; every method never throws. */
    interface Hooks {
        /** Dump the ring buffers into the spool now and wake the uploader (no waiting). */
        void flush();

        /**
         * The process is ending: dump, spool and upload, waiting at most
         * {@code waitMillis} ms; afterwards probes record nothing.
         */
        void shutdown(long waitMillis);
    }

    /** Attaches the hooks; never throws (failures are logged). */
    void install(Hooks hooks);
}
