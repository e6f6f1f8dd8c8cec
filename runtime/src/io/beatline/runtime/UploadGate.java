package io.beatline.runtime;

/**
 * Whether uploading is allowed now (issue 14): on a phone, the network the
 * device is on, Data Saver and the battery decide. Asked by the upload
 * thread before each upload pass (never on a probe path, never on the app's
 * main thread). While it refuses, batches stay in the spool and the upload
 * thread waits, without a deadline, for the next flush (the app going to the
 * background, {@link Beatline#flush()}, the spool reaching
 * {@link BeatlineConfig#uploadMinBatches}): it does not poll.
 *
 * <p>Implementations must be thread-safe and must not throw (a throw counts
 * as "allowed"). Android implementation:
 * {@code io.beatline.runtime.android.AndroidUploadGate}.
 */
public interface UploadGate {
    /**
     * @return null when an upload may start now; else why not (a short text
     *         for the debug log, e.g. {@code "metered network"})
     */
    String blocked();
}
