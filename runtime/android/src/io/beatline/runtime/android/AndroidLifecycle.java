package io.beatline.runtime.android;

import android.app.Activity;
import android.app.Application;
import android.content.ComponentCallbacks2;
import android.content.res.Configuration;
import android.os.Bundle;
import io.beatline.runtime.Launch;
import io.beatline.runtime.Lifecycle;

/**
 * Android's {@link Lifecycle} (issue 14): the app going to the background
 * (its last started activity stopped, not for a configuration change) and
 * {@code onTrimMemory} at {@code TRIM_MEMORY_BACKGROUND} or any
 * {@code RUNNING_*} level, and {@code onLowMemory}, call
 * {@link Lifecycle.Hooks#flush()}: the rings are dumped and spooled and the
 * uploader woken, on the runtime's thread (the callbacks run on the main
 * thread and return at once; see {@code BeatlineConfig.asyncFlush}).
 * Android ends processes without notice: there is no shutdown hook; what is
 * spooled is uploaded by this run or the next.
 *
 * <p>Launches (issue 15): the activity callbacks also feed {@link Launch}
 * (activities started and stopped, the resumed activity's name, a pause
 * before the first frame), and {@link #launches()} installs
 * {@link AndroidLaunch} (frames, process start).
 */
public final class AndroidLifecycle implements Lifecycle, Application.ActivityLifecycleCallbacks, ComponentCallbacks2 {
    private final Application app;
    private volatile Hooks hooks;
    /** Activities started and not stopped (main thread only). */
    private int started;
    /** Times the app went to the background (main thread writes). */
    volatile int backgrounds;

    /** @param app the application whose activities and memory callbacks are followed */
    public AndroidLifecycle(Application app) {
        this.app = app;
    }

    @Override
    public void install(Hooks h) {
        hooks = h;
        app.registerActivityLifecycleCallbacks(this);
        app.registerComponentCallbacks(this);
    }

    private void flush() {
        Hooks h = hooks;
        if (h != null) {
            try {
                h.flush();
            } catch (Throwable t) {
                // never into the app
            }
        }
    }

    /** Installs the launch tracer's platform ({@link AndroidLaunch}); called once the runtime runs. */
    public void launches() {
        AndroidLaunch.install();
    }

    @Override
    public void onActivityStarted(Activity a) {
        started++;
        Launch.activityStarted();
    }

    @Override
    public void onActivityStopped(Activity a) {
        if (started > 0) {
            started--;
        }
        Launch.activityStopped();
        if (started == 0 && !a.isChangingConfigurations()) {
            backgrounds++;
            flush(); // in the background: dump and spool (and upload, batched)
        }
    }

    @Override
    public void onTrimMemory(int level) {
        if (level >= TRIM_MEMORY_BACKGROUND || level == TRIM_MEMORY_RUNNING_MODERATE
                || level == TRIM_MEMORY_RUNNING_LOW || level == TRIM_MEMORY_RUNNING_CRITICAL) {
            flush();
        }
    }

    @Override
    public void onLowMemory() {
        flush();
    }

    @Override
    public void onConfigurationChanged(Configuration c) {
    }

    @Override
    public void onActivityCreated(Activity a, Bundle b) {
    }

    @Override
    public void onActivityResumed(Activity a) {
        Launch.activityResumed(a.getClass().getName());
    }

    @Override
    public void onActivityPaused(Activity a) {
        Launch.activityPaused(a.isFinishing());
    }

    @Override
    public void onActivitySaveInstanceState(Activity a, Bundle b) {
    }

    @Override
    public void onActivityDestroyed(Activity a) {
    }
}
