package io.beatline.runtime.android;

import android.app.ActivityManager;
import android.os.Build;
import android.os.Handler;
import android.os.Looper;
import android.os.MessageQueue;
import android.os.Process;
import android.os.SystemClock;
import android.view.Choreographer;
import io.beatline.runtime.Launch;

/**
 * Android's {@link Launch.Platform} (issue 15): the first frame, the process
 * start, and whether the process was started for an activity.
 *
 * <ul>
 * <li><b>First frame:</b> {@link #awaitFrame} posts a
 *     {@code Choreographer} frame callback; the frame callback posts a
 *     message at the front of the main queue, which runs once that frame's
 *     traversal (measure, layout, draw) is done: its time is the first
 *     frame.</li>
 * <li><b>Process start:</b> {@code Process.getStartUptimeMillis()} (API
 *     24+), moved onto the {@code System.nanoTime()} line through
 *     {@code SystemClock.uptimeMillis()} (both {@code CLOCK_MONOTONIC} on
 *     Android); below API 24, or when the value is not plausible (0, in the
 *     future), the first launch hook / the runtime's start.</li>
 * <li><b>Started for an activity:</b> the importance of the process
 *     ({@code ActivityManager.getMyMemoryState}) at the first main-thread
 *     message after the runtime's start (a message posted at the front of
 *     the queue, before the system's activity launch message): a process
 *     started for an activity is {@code IMPORTANCE_FOREGROUND} then; one
 *     started for a service or a broadcast is not, and its first activity,
 *     if any, is a warm launch.</li>
 * <li><b>Idle:</b> the first time the main queue goes idle after the
 *     runtime's start, {@link Launch#idle()} closes a cold candidate's
 *     recording window until its first activity comes.</li>
 * </ul>
 * Main thread; nothing here throws into the app.
 */
public final class AndroidLaunch implements Launch.Platform {
    private final Handler main = new Handler(Looper.getMainLooper());

    private AndroidLaunch() {
    }

    /**
     * Installs the platform on the main thread (posted there when called
     * elsewhere) and, at the next main-thread message, gives {@link Launch}
     * the importance verdict. Never throws.
     */
    public static void install() {
        try {
            final AndroidLaunch p = new AndroidLaunch();
            Runnable in = new Runnable() {
                @Override
                public void run() {
                    Launch.install(p, processStartNanos(), true);
                    Looper.myQueue().addIdleHandler(new MessageQueue.IdleHandler() {
                        @Override
                        public boolean queueIdle() {
                            Launch.idle(); // once: a cold candidate's window closes while nothing runs
                            return false;
                        }
                    });
                    p.main.postAtFrontOfQueue(new Runnable() {
                        @Override
                        public void run() {
                            Launch.foreground(startedInForeground());
                        }
                    });
                }
            };
            if (Looper.myLooper() == Looper.getMainLooper()) {
                in.run();
            } else {
                p.main.post(in);
            }
        } catch (Throwable t) {
            // never into the app
        }
    }

    /** The process start on the {@code System.nanoTime()} line, 0 when unknown. */
    static long processStartNanos() {
        try {
            if (Build.VERSION.SDK_INT < 24) {
                return 0;
            }
            long start = Process.getStartUptimeMillis();
            long up = SystemClock.uptimeMillis();
            if (start <= 0 || start > up) {
                return 0;
            }
            return System.nanoTime() - (up - start) * 1000000L;
        } catch (Throwable t) {
            return 0;
        }
    }

    /** Whether the process is in the foreground now (importance FOREGROUND); true when unknown. */
    static boolean startedInForeground() {
        try {
            ActivityManager.RunningAppProcessInfo info = new ActivityManager.RunningAppProcessInfo();
            ActivityManager.getMyMemoryState(info);
            return info.importance == ActivityManager.RunningAppProcessInfo.IMPORTANCE_FOREGROUND;
        } catch (Throwable t) {
            return true;
        }
    }

    @Override
    public void awaitFrame(final int token) {
        try {
            Choreographer.getInstance().postFrameCallback(new Choreographer.FrameCallback() {
                @Override
                public void doFrame(long frameTimeNanos) {
                    // after this frame's traversal: the frame is drawn
                    main.postAtFrontOfQueue(new Runnable() {
                        @Override
                        public void run() {
                            Launch.frame(token);
                        }
                    });
                }
            });
        } catch (Throwable t) {
            // never into the app
        }
    }
}
