package io.beatline.runtime.android;

import io.beatline.runtime.Log;

/**
 * {@link Log} via {@code android.util.Log} (issue 14), tag {@code "Beatline"}:
 * warnings as {@code Log.w}; debug lines as {@code Log.d} only when
 * {@code debug} (manifest meta-data {@code io.beatline.debug}). Never throws.
 */
public final class AndroidLog implements Log {
    /** The logcat tag. */
    public static final String TAG = "Beatline";
    private final boolean debug;

    /** @param debug whether {@link #debug(String)} lines are written */
    public AndroidLog(boolean debug) {
        this.debug = debug;
    }

    @Override
    public void warn(String msg) {
        try {
            android.util.Log.w(TAG, msg);
        } catch (Throwable t) {
            // nowhere left to report
        }
    }

    @Override
    public void debug(String msg) {
        if (debug) {
            try {
                android.util.Log.d(TAG, msg);
            } catch (Throwable t) {
                // nowhere left to report
            }
        }
    }
}
