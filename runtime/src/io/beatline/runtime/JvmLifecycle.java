package io.beatline.runtime;

/**
 * {@link Lifecycle} of a plain JVM: a shutdown hook (thread
 * {@code beatline-shutdown}) that calls {@link Lifecycle.Hooks#shutdown(long)}
 * with the configured wait ({@code beatline.shutdownWaitMs}, default 5,000 ms)
 * when the JVM exits normally, by {@code System.exit} or on SIGINT/SIGTERM.
 * A killed JVM (SIGKILL) runs no hook: what was spooled before is uploaded by
 * the next run that uses the same spool directory.
 */
public final class JvmLifecycle implements Lifecycle {
    private final long waitMillis;

    /** @param waitMillis ms the shutdown hook waits for uploads */
    public JvmLifecycle(long waitMillis) {
        this.waitMillis = waitMillis;
    }

    /** {@inheritDoc} */
    @Override
    public void install(final Hooks hooks) {
        try {
            Runtime.getRuntime().addShutdownHook(new Thread(new Runnable() {
                @Override
                public void run() {
                    hooks.shutdown(waitMillis);
                }
            }, "beatline-shutdown"));
        } catch (Throwable t) {
            // IllegalStateException when the JVM is already shutting down; nothing to hook
        }
    }
}
