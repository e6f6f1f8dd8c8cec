package io.beatline.runtime;

/**
 * Decides, once per thread at its first probe, whether the thread is the
 * app's main (UI) thread and whether it is traced. The main thread is always
 * traced; {@link #trace(Thread)} is asked for every other thread.
 *
 * <p>Called on the probe's slow path (a thread's first probe), on the thread
 * itself. Must not throw (a throw counts as "not traced"), must not call
 * instrumented code. JVM implementation: {@link JvmThreadPolicy}; Android
 * (later issue): the Looper's main thread.
 */
public interface ThreadPolicy {
    /** @return true when {@code t} is the app's main thread. */
    boolean isMain(Thread t);

    /** @return true when the non-main thread {@code t} gets a ring buffer. */
    boolean trace(Thread t);
}
