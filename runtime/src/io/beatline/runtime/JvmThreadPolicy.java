package io.beatline.runtime;

/**
 * {@link ThreadPolicy} of a plain JVM.
 *
 * <p>Main thread: the thread that the launcher runs {@code main(String[])}
 * on, recognised as a thread named {@code "main"} in the thread group named
 * {@code "main"} (both are the JVM's names for it). The name is read at the
 * thread's first probe, so a thread renamed to "main" later does not become
 * main, and the launcher's thread renamed before its first probe is not
 * main. {@link Recorder} gives the main flag to at most one thread.
 *
 * <p>Other threads: all traced ({@code beatline.threads=all}, the default) or
 * none ({@code beatline.threads=main}).
 */
public final class JvmThreadPolicy implements ThreadPolicy {
    private final boolean others;

    /** @param traceOtherThreads whether threads other than main are traced */
    public JvmThreadPolicy(boolean traceOtherThreads) {
        this.others = traceOtherThreads;
    }

    /** {@inheritDoc} */
    @Override
    public boolean isMain(Thread t) {
        ThreadGroup g = t.getThreadGroup();
        return "main".equals(t.getName()) && g != null && "main".equals(g.getName());
    }

    /** {@inheritDoc} */
    @Override
    public boolean trace(Thread t) {
        return others;
    }
}
