package io.beatline.runtime;

/**
 * App launches (issue 15): the launch hooks {@code beatline-instrument}
 * inserts into subclasses of {@code android.app.Application} and
 * {@code android.app.Activity} ({@link #enter(int)} / {@link #exit(int)} at
 * entry and at every exit, normal or exceptional, of the lifecycle methods
 * they declare; instrumenter/README.md, "Launch hooks"), the platform's
 * frame and lifecycle reports, and the detection rules of runtime/README.md
 * ("Launches"): cold, warm, hot, non-launches.
 *
 * <p>Times are {@code System.nanoTime()} readings, turned into the records'
 * clock µs when the launch is handed to the {@link Session} (the hooks of
 * {@code Application.attachBaseContext} run before the runtime starts).
 * Everything runs on the app's main thread except {@link #takeDone()}; the
 * state is guarded by one lock (a few uncontended acquisitions per
 * lifecycle callback, nothing per probe). Nothing here throws into the app.
 */
public final class Launch {
    /** Hook numbers (instrumenter/hierarchy.h, enum bl_hook). */
    static final int APP_ATTACH = 1;
    static final int APP_CREATE = 2;
    static final int ACT_CREATE = 3;
    static final int ACT_START = 4;
    static final int ACT_RESUME = 5;
    static final int ACT_RESTART = 6;
    private static final int HOOKS = 7;

    /** Phase names of the {@code launch} event, by hook number (restart has none). */
    static final String[] PHASES = {null, "application_attach_base_context", "application_on_create",
        "activity_on_create", "activity_on_start", "activity_on_resume", null};

    /** Launch kinds (the event's {@code kind}). */
    static final String COLD = "cold";
    static final String WARM = "warm";
    static final String HOT = "hot";

    /**
     * A first {@code Activity.onCreate} later than this after the process
     * start is not a cold launch (the process was started for something
     * else and kept alive): 60 s, as Firebase Performance's rule.
     */
    static final long COLD_MAX_NANOS = 60000000000L;

    /** What the platform (Android's {@code AndroidLaunch}) offers. */
    public interface Platform {
        /**
         * Calls {@link #frame(int)} with {@code token} once the next frame
         * is drawn (main thread). Never throws.
         */
        void awaitFrame(int token);
    }

    /** A launch that reached its first frame, waiting to be sent. Times: {@code System.nanoTime()}. */
    static final class Done {
        final String kind;
        final long startNanos;
        /** [hook * 2] begin, [hook * 2 + 1] end; 0: the phase did not run (or has no hook). */
        final long[] phases;
        final long firstFrameNanos;
        /** 0: not reported (yet). */
        long fullyDrawnNanos;
        final String activity;
        /** The main thread's ring and its record positions [pBegin, pEnd) over the window (gated sessions), else null. */
        final Ring ring;
        final long pBegin;
        final long pEnd;
        /** The session that recorded the window (null: none was running). */
        final Session session;

        Done(Pending p, long firstFrameNanos, long pEnd) {
            this.kind = p.kind;
            this.startNanos = p.startNanos;
            this.phases = p.phases.clone();
            if (p.kind == COLD) { // the Application's phases belong to a cold launch only
                for (int h = APP_ATTACH; h <= APP_CREATE; h++) {
                    if (app[h * 2] != 0 && app[h * 2 + 1] != 0) {
                        phases[h * 2] = app[h * 2];
                        phases[h * 2 + 1] = app[h * 2 + 1];
                    }
                }
            }
            this.firstFrameNanos = firstFrameNanos;
            this.fullyDrawnNanos = p.fullyDrawnNanos == 0 ? 0 : Math.max(p.fullyDrawnNanos, firstFrameNanos);
            this.activity = p.activity;
            this.ring = p.ring;
            this.pBegin = p.pBegin;
            this.pEnd = pEnd;
            this.session = p.session;
        }
    }

    /** A launch between its start and its first frame. */
    static final class Pending {
        final String kind;
        long startNanos;
        final long[] phases = new long[HOOKS * 2];
        String activity;
        /** The launched activity resumed: its first frame is awaited. */
        boolean resumed;
        boolean frameAsked;
        long fullyDrawnNanos;
        final int token;
        Session session;
        Ring ring;
        long pBegin;
        /** The gated session's launch window is open now (closed while the main thread idles before a cold launch's activity). */
        boolean windowOpen;

        Pending(String kind, long startNanos, int token) {
            this.kind = kind;
            this.startNanos = startNanos;
            this.token = token;
        }
    }

    private static final Object LOCK = new Object();
    /** The first hook's or platform report's thread (the app's main thread); others are ignored. */
    private static Thread main;
    /** When this class was loaded (the first hook of the process): the process start when nothing better is known. */
    private static long firstNanos = System.nanoTime();
    /** The process start ({@code Process.getStartUptimeMillis()} on the nanoTime line), 0: unknown. */
    private static long processStartNanos;
    private static Platform platform;
    /** No activity was created yet in this process, and the process may have been started for one. */
    private static boolean coldPossible = true;
    /** Activities started and not stopped (the platform's lifecycle callbacks). */
    private static int started;
    /** Application phases: once per process. */
    private static final long[] app = new long[HOOKS * 2];
    /** Nesting depth per hook (a library Activity's onCreate inside the app's). */
    private static final int[] depth = new int[HOOKS];
    private static Pending cur;
    private static Done done;
    private static int tokens;
    /** Launches completed, and not-launches recognised (abandoned: backgrounded before the first frame). */
    static long completed;
    static long abandoned;

    private Launch() {
    }

    /**
     * Launch hook: a lifecycle method begins (inserted by
     * {@code beatline-instrument}, never called by apps). Never throws.
     *
     * @param hook 1 … 6 (see the constants)
     */
    public static void enter(int hook) {
        try {
            long now = System.nanoTime();
            synchronized (LOCK) {
                if (hook <= 0 || hook >= HOOKS || !onMain() || depth[hook]++ > 0) {
                    return;
                }
                begin(hook, now);
            }
        } catch (Throwable t) {
            // never into the app
        }
    }

    /**
     * Launch hook: the lifecycle method begun by {@link #enter(int)} returns
     * or throws. Never throws.
     */
    public static void exit(int hook) {
        try {
            long now = System.nanoTime();
            Platform ask = null;
            int token = 0;
            synchronized (LOCK) {
                if (hook <= 0 || hook >= HOOKS || !onMain() || depth[hook] == 0 || --depth[hook] > 0) {
                    return;
                }
                if (hook == APP_ATTACH || hook == APP_CREATE) {
                    if (app[hook * 2] != 0 && app[hook * 2 + 1] == 0) {
                        app[hook * 2 + 1] = now;
                    }
                    return;
                }
                Pending p = cur;
                if (p == null || p.phases[hook * 2] == 0 || p.phases[hook * 2 + 1] != 0) {
                    return;
                }
                p.phases[hook * 2 + 1] = now;
                if (hook == ACT_RESUME && !p.frameAsked) {
                    p.resumed = true;
                    p.frameAsked = true;
                    ask = platform;
                    token = p.token;
                }
            }
            if (ask != null) {
                ask.awaitFrame(token);
            }
        } catch (Throwable t) {
            // never into the app
        }
    }

    private static boolean onMain() {
        Thread t = Thread.currentThread();
        if (main == null) {
            main = t;
        }
        return main == t;
    }

    /** An outermost hook entry (lock held). */
    private static void begin(int hook, long now) {
        if (hook == APP_ATTACH || hook == APP_CREATE) {
            if (app[hook * 2] == 0) {
                app[hook * 2] = now;
            }
            return;
        }
        if (platform == null) {
            return; // no platform (plain JVM, runtime not started): no frames, no launches
        }
        Pending p = cur;
        if (hook == ACT_CREATE) {
            if (p != null && p.startNanos == 0) {
                // the cold candidate of install(): this is its first activity
                long ps = processStart();
                if (started == 0 && coldPossible && now - ps <= COLD_MAX_NANOS) {
                    p.startNanos = ps;
                    reopen(p);
                } else {
                    cur = null;
                    closeWindow(p);
                    p = null;
                }
            }
            if (p == null) {
                if (started > 0) {
                    coldPossible = false;
                    return; // the app is in front: navigation, not a launch
                }
                long ps = processStart();
                boolean cold = coldPossible && now - ps <= COLD_MAX_NANOS;
                p = open(cold ? COLD : WARM, cold ? ps : now);
            } else if (p.resumed) {
                return; // another activity before the first frame: the launch goes on with the first
            } else {
                // a trampoline (a splash finishing in its onCreate): the launch goes on with this one
                java.util.Arrays.fill(p.phases, 0L);
                p.activity = null;
            }
            coldPossible = false;
            p.phases[hook * 2] = now;
        } else if (hook == ACT_RESTART || hook == ACT_START) {
            if (p == null) {
                if (started > 0) {
                    return;
                }
                coldPossible = false;
                p = open(HOT, now);
            }
            if (hook == ACT_START && p.phases[hook * 2] == 0) {
                p.phases[hook * 2] = now;
            }
        } else if (hook == ACT_RESUME) {
            if (p != null && p.phases[hook * 2] == 0) {
                p.phases[hook * 2] = now;
            }
        }
    }

    /** The process start on the nanoTime line: the platform's, else the earliest we saw. */
    private static long processStart() {
        long ps = processStartNanos != 0 ? processStartNanos : firstNanos;
        return Math.min(ps, firstNanos);
    }

    /** Starts a launch (lock held): a launch still waiting to be sent goes first; the recording window opens. */
    private static Pending open(String kind, long startNanos) {
        Done d = done;
        done = null;
        if (d != null) {
            send(d);
        }
        Pending p = new Pending(kind, startNanos, ++tokens);
        cur = p;
        openWindow(p);
        return p;
    }

    /** Gated session: opens the launch recording window, notes the main ring's position. */
    private static void openWindow(Pending p) {
        Session s = Beatline.session();
        p.session = s;
        if (s == null || !s.gated) {
            return;
        }
        reopen(p);
        p.ring = s.recorder.ring();
        p.pBegin = p.ring.published();
    }

    /** Opens the window of a gated launch (again). */
    private static void reopen(Pending p) {
        Session s = p.session;
        if (s == null || !s.gated || p.windowOpen) {
            return;
        }
        Beatline.window(s, Session.WINDOW_LAUNCH, true);
        p.windowOpen = true;
        if (s.recorder.clock instanceof TickerClock) {
            TickerClock tc = (TickerClock) s.recorder.clock;
            tc.resume(tc.exactMicros());
        }
    }

    /** Closes the window of a gated launch (if open); the main ring's position now, 0 without a window. */
    private static long closeWindow(Pending p) {
        Session s = p.session;
        if (s == null || !s.gated || p.ring == null) {
            return 0;
        }
        long end = p.ring.published();
        if (p.windowOpen) {
            p.windowOpen = false;
            Beatline.window(s, Session.WINDOW_LAUNCH, false);
            if (s.recorder.clock instanceof TickerClock) {
                ((TickerClock) s.recorder.clock).pause(); // as a dispatch's end: no ticking while idle
            }
        }
        return end;
    }

    /**
     * The platform: the main thread's queue went idle (the first time after
     * {@link #install}). A cold candidate still waiting for its first
     * activity closes its window meanwhile (an idle thread records nothing;
     * a process that never shows an activity must not keep recording): the
     * first {@code Activity.onCreate} opens it again, and the launch's
     * segment still runs from the runtime's start (the ring holds only
     * windows' records in a gated session).
     */
    public static void idle() {
        try {
            synchronized (LOCK) {
                Pending p = cur;
                if (p != null && p.startNanos == 0) {
                    closeWindow(p);
                }
            }
        } catch (Throwable t) {
            // never into the app
        }
    }

    /**
     * The platform: installs it (Android: {@code AndroidBeatline.start}) with
     * the process start ({@code System.nanoTime()} line, 0 when unknown) and
     * whether the process may have been started for an activity (false: a
     * service or broadcast started it, or it started in the background).
     * While the first activity is still to come and the process may be
     * launching, a gated session opens its launch window now (cold launch).
     * Main thread.
     */
    public static void install(Platform p, long processStartNanos, boolean foreground) {
        try {
            synchronized (LOCK) {
                platform = p;
                if (processStartNanos > 0 && processStartNanos <= System.nanoTime()) {
                    Launch.processStartNanos = processStartNanos;
                }
                if (!foreground) {
                    coldPossible = false;
                }
                if (coldPossible && cur == null) {
                    cur = new Pending(COLD, processStart(), ++tokens);
                    cur.startNanos = 0; // a cold candidate: started for real by the first Activity.onCreate
                    openWindow(cur);
                }
            }
        } catch (Throwable t) {
            // never into the app
        }
    }

    /**
     * The platform's verdict on the process start, when it comes after
     * {@link #install} (Android: the importance seen at the first main-thread
     * message): false drops the cold candidate (a service, a broadcast, a
     * start in the background) and closes its window. Main thread.
     */
    public static void foreground(boolean fg) {
        try {
            synchronized (LOCK) {
                if (fg) {
                    return;
                }
                coldPossible = false;
                Pending p = cur;
                if (p != null && p.startNanos == 0) {
                    cur = null; // the candidate never became a launch
                    closeWindow(p);
                }
            }
        } catch (Throwable t) {
            // never into the app
        }
    }

    /** The platform: an activity started (its {@code onStart} ran). */
    public static void activityStarted() {
        synchronized (LOCK) {
            started++;
        }
    }

    /** The platform: an activity stopped; the last one: the app went to the background. */
    public static void activityStopped() {
        try {
            Done d = null;
            synchronized (LOCK) {
                if (started > 0) {
                    started--;
                }
                if (started == 0) {
                    abandon();
                    d = done;
                    done = null;
                }
            }
            if (d != null) {
                send(d);
            }
        } catch (Throwable t) {
            // never into the app
        }
    }

    /**
     * The platform: activity {@code name} resumed (its {@code onResume}
     * ran the framework's part). Names the launch's activity, and asks for
     * the first frame when no hook did (an activity that declares no
     * {@code onResume}).
     */
    public static void activityResumed(String name) {
        try {
            Platform ask = null;
            int token = 0;
            synchronized (LOCK) {
                Pending p = cur;
                if (p == null || p.startNanos == 0) {
                    return;
                }
                p.activity = name;
                if (!p.frameAsked) {
                    p.resumed = true;
                    p.frameAsked = true;
                    ask = platform;
                    token = p.token;
                }
            }
            if (ask != null) {
                ask.awaitFrame(token);
            }
        } catch (Throwable t) {
            // never into the app
        }
    }

    /**
     * The platform: an activity paused. Before the launch's first frame: a
     * finishing activity (a splash handing over to the next one) lets the
     * launch go on with the next activity; otherwise the app went to the
     * background and it is not a launch (not sent).
     */
    public static void activityPaused(boolean finishing) {
        try {
            synchronized (LOCK) {
                Pending p = cur;
                if (p == null || !p.resumed) {
                    return;
                }
                if (finishing) {
                    p.resumed = false;
                    p.frameAsked = false;
                } else {
                    abandon();
                }
            }
        } catch (Throwable t) {
            // never into the app
        }
    }

    /** The launch in progress is not a launch (lock held). */
    private static void abandon() {
        Pending p = cur;
        if (p == null) {
            return;
        }
        cur = null;
        closeWindow(p);
        if (p.startNanos != 0) {
            abandoned++;
        }
    }

    /** The platform: the frame asked for with {@code token} was drawn. Main thread. */
    public static void frame(int token) {
        try {
            long now = System.nanoTime();
            Done d = null;
            synchronized (LOCK) {
                Pending p = cur;
                if (p == null || p.token != token || !p.resumed || p.startNanos == 0) {
                    return; // an older launch's frame, or paused meanwhile
                }
                cur = null;
                long pEnd = closeWindow(p);
                Done prev = done;
                done = new Done(p, now, pEnd);
                completed++;
                if (done.fullyDrawnNanos != 0) {
                    d = done;
                    done = null;
                }
                if (prev != null) {
                    send(prev);
                }
            }
            if (d != null) {
                send(d);
            }
        } catch (Throwable t) {
            // never into the app
        }
    }

    /**
     * {@code Beatline.reportFullyDrawn()}: the app drew its full content
     * (TTFD). The first report after a launch counts: before the first
     * frame it is taken as the first frame (as Android does), after it the
     * launch is sent at once.
     */
    static void fullyDrawn() {
        long now = System.nanoTime();
        Done d = null;
        synchronized (LOCK) {
            if (cur != null && cur.startNanos != 0 && cur.fullyDrawnNanos == 0) {
                cur.fullyDrawnNanos = now;
            } else if (done != null && done.fullyDrawnNanos == 0) {
                done.fullyDrawnNanos = now;
                d = done;
                done = null;
            }
        }
        if (d != null) {
            send(d);
        }
    }

    /** A launch past its first frame still waiting for a TTFD report, taken (a dump sends it now); or null. */
    static Done takeDone() {
        synchronized (LOCK) {
            Done d = done;
            done = null;
            return d;
        }
    }

    private static void send(Done d) {
        Session s = d.session != null ? d.session : Beatline.session();
        if (s != null) {
            s.launch(d);
        }
    }

    /** Tests: forget everything, as a new process. */
    static void reset() {
        synchronized (LOCK) {
            main = null;
            firstNanos = System.nanoTime();
            processStartNanos = 0;
            platform = null;
            coldPossible = true;
            started = 0;
            java.util.Arrays.fill(app, 0L);
            java.util.Arrays.fill(depth, 0);
            cur = null;
            done = null;
            completed = 0;
            abandoned = 0;
        }
    }
}
