package io.beatline.runtime;

import android.os.Looper;
import android.os.MessageQueue;
import android.os.SystemClock;
import android.util.Printer;
import java.lang.reflect.Field;

/**
 * The Android hook of the {@link DispatchMonitor} (issue 13): a
 * {@link Printer} set with {@code Looper.getMainLooper().setMessageLogging},
 * fed by the framework's {@code Looper.loopOnce} with the lines
 * {@code ">>>>> Dispatching to <target> <callback>: <what>"} before and
 * {@code "<<<<< Finished to <target> <callback>"} after each message.
 *
 * <ul>
 * <li><b>Chaining:</b> a printer the app had set (read from the Looper's
 *     private {@code mLogging} field) gets every line first, unchanged.</li>
 * <li><b>Re-installing:</b> an {@link MessageQueue.IdleHandler} on the main
 *     queue looks, at most once per {@link #RECHECK_MS} of uptime, whether
 *     the Looper's printer is still this one; when the app replaced it, this
 *     one is set again with the app's new printer chained.</li>
 * </ul>
 *
 * Compiled against android-all (compile-only), never part of the core jar.
 * Verified under Robolectric with the framework's real {@code Looper.loop}
 * ({@code LooperMode.INSTRUMENTATION_TEST}); see runtime/README.md.
 */
public final class LooperDispatch implements Printer, MessageQueue.IdleHandler {
    /** Least uptime between two checks that the printer is still installed, ms. */
    static final long RECHECK_MS = 1000;
    /** The check interval in force, ms (tests set 0). */
    static volatile long recheckMs = RECHECK_MS;

    /** Target of Android messages (see {@link #target(String)}). */
    static final DispatchMonitor.Namer NAMER = new DispatchMonitor.Namer() {
        @Override
        public String target(Object what) {
            return LooperDispatch.target(String.valueOf(what));
        }
    };

    private final DispatchMonitor monitor;
    private final Looper looper;
    private volatile Printer chained;
    private long checkedAt;
    /** The hook installed last; an older one's idle handler removes itself. */
    private static volatile LooperDispatch active;
    /** Times this printer was set again after the app replaced it. */
    volatile int reinstalls;

    private LooperDispatch(DispatchMonitor monitor, Looper looper) {
        this.monitor = monitor;
        this.looper = looper;
    }

    /**
     * Installs the monitor on the main Looper of the running runtime
     * ({@link Beatline#start}), keeping the app's printer chained. Any thread.
     *
     * @return the installed hook, or null when the runtime is not running
     */
    public static LooperDispatch install() {
        DispatchMonitor m = Beatline.dispatchMonitor("looper", NAMER);
        if (m == null) {
            return null;
        }
        Looper main = Looper.getMainLooper();
        LooperDispatch d = new LooperDispatch(m, main);
        active = d;
        d.set();
        main.getQueue().addIdleHandler(d);
        return d;
    }

    private void set() {
        Printer current = printerOf(looper);
        if (current != this) {
            chained = current instanceof LooperDispatch ? ((LooperDispatch) current).chained : current;
            looper.setMessageLogging(this);
        }
    }

    /** The printer the Looper holds now (its private {@code mLogging}); null when unknown. */
    static Printer printerOf(Looper l) {
        try {
            Field f = Looper.class.getDeclaredField("mLogging");
            f.setAccessible(true);
            return (Printer) f.get(l);
        } catch (Throwable t) {
            return null;
        }
    }

    @Override
    public void println(String x) {
        Printer p = chained;
        if (p != null) {
            p.println(x);
        }
        if (x == null || x.isEmpty()) {
            return;
        }
        char c = x.charAt(0);
        if (c == '>') {
            Beatline.nudge(); // full mode on a phone: the flush thread sleeps without a deadline while idle
            monitor.begin(x);
        } else if (c == '<') {
            monitor.end();
        }
    }

    /** Main queue idle: set this printer again if the app replaced it. Stays registered. */
    @Override
    public boolean queueIdle() {
        try {
            if (active != this) {
                return false; // a later install replaced this hook: leave the queue
            }
            long now = SystemClock.uptimeMillis();
            if (now - checkedAt >= recheckMs || checkedAt == 0) {
                checkedAt = now;
                if (printerOf(looper) != this) {
                    set();
                    reinstalls++;
                }
            }
        } catch (Throwable t) {
            // never into the app
        }
        return true;
    }

    /**
     * {@code "<handler class>/<callback class or what=N>"} of a
     * {@code ">>>>> Dispatching to Handler (android.os.Handler) {1a2b} com.example.Feed$1@3c4d: 0"}
     * line: the class in the handler's {@code toString}, the callback's
     * {@code toString} up to its {@code @hash} (or {@code what=N} when the
     * callback is null). A line of another shape is returned as it is, cut
     * after the prefix.
     */
    static String target(String line) {
        String p = ">>>>> Dispatching to ";
        String s = line.startsWith(p) ? line.substring(p.length()) : line;
        int close = s.indexOf("} ");
        if (!s.startsWith("Handler (") || close < 0) {
            return s;
        }
        int paren = s.indexOf(')');
        String handler = paren > 9 ? s.substring(9, paren) : s.substring(0, close + 1);
        String rest = s.substring(close + 2);
        int colon = rest.lastIndexOf(": ");
        String cb = colon >= 0 ? rest.substring(0, colon) : rest;
        String what = colon >= 0 ? rest.substring(colon + 2) : "";
        if (cb.equals("null")) {
            return handler + "/what=" + what;
        }
        int at = cb.lastIndexOf('@');
        return handler + "/" + (at > 0 ? cb.substring(0, at) : cb);
    }
}
