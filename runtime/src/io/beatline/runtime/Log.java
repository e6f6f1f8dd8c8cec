package io.beatline.runtime;

/**
 * Where the runtime reports problems (dropped batches, a server answering
 * 4xx, an unwritable spool) and, when asked, progress. Implementations must
 * never throw. Default: {@link #STDERR}, lines prefixed {@code "beatline: "}.
 * Android (later issue): {@code android.util.Log}.
 */
public interface Log {
    /** A problem that loses data or needs the user's attention. */
    void warn(String msg);

    /** Progress (uploads, spool); printed only with {@code beatline.debug=true}. */
    void debug(String msg);

    /** Warnings to {@code System.err}; debug lines only when {@code debug}. */
    final class Stderr implements Log {
        private final boolean debug;

        /** @param debug whether {@link #debug(String)} prints */
        public Stderr(boolean debug) {
            this.debug = debug;
        }

        @Override
        public void warn(String msg) {
            try {
                System.err.println("beatline: " + msg);
            } catch (Throwable t) {
                // nowhere left to report
            }
        }

        @Override
        public void debug(String msg) {
            if (debug) {
                warn(msg);
            }
        }
    }

    /** Warnings to stderr, no debug lines. */
    Log STDERR = new Stderr(false);
}
