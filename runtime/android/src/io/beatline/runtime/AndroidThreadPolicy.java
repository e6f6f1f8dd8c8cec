package io.beatline.runtime;

import android.os.Looper;

/**
 * Android's {@link ThreadPolicy}: the main thread is the main Looper's
 * thread; other threads are traced when {@code traceOthers}.
 */
public final class AndroidThreadPolicy implements ThreadPolicy {
    private final boolean others;

    /** @param traceOthers whether threads other than the main Looper's are traced */
    public AndroidThreadPolicy(boolean traceOthers) {
        this.others = traceOthers;
    }

    @Override
    public boolean isMain(Thread t) {
        Looper m = Looper.getMainLooper();
        return m != null && m.getThread() == t;
    }

    @Override
    public boolean trace(Thread t) {
        return others;
    }
}
