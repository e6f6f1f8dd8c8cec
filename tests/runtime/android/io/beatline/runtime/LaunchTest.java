package io.beatline.runtime;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertNotNull;
import static org.junit.Assert.assertNull;
import static org.junit.Assert.assertTrue;
import static org.robolectric.Shadows.shadowOf;

import android.app.ActivityManager;
import android.app.Application;
import android.content.Context;
import android.content.Intent;
import android.os.Looper;
import android.os.Process;
import io.beatline.runtime.android.AndroidStart;
import java.io.File;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import launchapp.LaunchApp;
import launchapp.LaunchAppTriggered;
import launchapp.MainActivity;
import launchapp.OtherActivity;
import launchapp.SplashActivity;
import launchapp.SyncService;
import org.junit.After;
import org.junit.Test;
import org.junit.runner.RunWith;
import org.robolectric.Robolectric;
import org.robolectric.RuntimeEnvironment;
import org.robolectric.android.controller.ActivityController;
import org.robolectric.annotation.Config;

/**
 * Issue 15: launches under Robolectric 4.11.1 (SDK 34, PAUSED looper: the
 * test's thread is the main thread). The framework's own lifecycle drives
 * the test app of tests/runtime/android-launch (instrumented by the real
 * beatline-instrument: probes and launch hooks): Robolectric creates the
 * Application ({@code Instrumentation.newApplication}, attachBaseContext,
 * onCreate: the app starts the runtime in between, where the AAR's provider
 * would), {@code ActivityController} runs the activities' lifecycles, and
 * frames come from Robolectric's {@code Choreographer} (vsync messages on
 * the main looper's clock). Each case checks the {@code launch} events the
 * runtime spools: kind, phases present/absent and ordered, TTID/TTFD, the
 * window's records; and that non-launches send none.
 */
@RunWith(BeatlineRobolectricRunner.class)
@Config(sdk = 34, manifest = Config.NONE, application = LaunchApp.class)
public class LaunchTest {
    @After
    public void tearDown() {
        Beatline.shutdown(0);
        Launch.reset(); // the next test's Application is a new process
    }

    private static Application app() {
        return RuntimeEnvironment.getApplication();
    }

    /** Runs the main looper's messages due within the next 100 ms (vsync frames, posted messages). */
    private static void frames() {
        shadowOf(Looper.getMainLooper()).idleFor(Duration.ofMillis(100));
        shadowOf(Looper.getMainLooper()).idle();
    }

    /** Dumps now on this thread (synchronous: full mode spools the rings, triggered the queued windows). */
    private static void dump() {
        Session s = Beatline.session();
        assertNotNull("the runtime runs", s);
        s.dumpToSpool();
    }

    private static List<BatchReader> spooled() throws Exception {
        File dir = AndroidStart.spoolDir(app(), null);
        return dir.isDirectory() ? BatchReader.spool(dir) : Collections.<BatchReader>emptyList();
    }

    /** A launch event with the batch it rides in. */
    static final class Ev {
        final BatchReader batch;
        final Map<String, Object> json;

        Ev(BatchReader b, String line) {
            batch = b;
            json = Json.obj(Json.parse(line));
        }

        long num(String k) {
            return ((Number) json.get(k)).longValue();
        }

        Map<String, Object> phases() {
            return Json.obj(json.get("phases"));
        }

        long[] phase(String name) {
            Object o = phases().get(name);
            if (o == null) {
                return null;
            }
            List<Object> l = Json.arr(o);
            return new long[] {((Number) l.get(0)).longValue(), ((Number) l.get(1)).longValue()};
        }

        BatchReader.Seg seg() {
            return batch.segs.get((int) num("thread"));
        }
    }

    private static List<Ev> launches() throws Exception {
        List<Ev> out = new ArrayList<Ev>();
        for (BatchReader b : spooled()) {
            for (String e : b.events) {
                if (e.contains("\"type\":\"launch\"")) {
                    out.add(new Ev(b, e));
                }
            }
        }
        return out;
    }

    private static Map<String, Integer> ids;

    /** methodId of "class name desc" in the test app's method-ID file. */
    static int id(String method) throws Exception {
        if (ids == null) {
            Map<String, Integer> m = new HashMap<String, Integer>();
            for (String l : Files.readAllLines(new File(System.getProperty("beatline.test.launchIds")).toPath(),
                    StandardCharsets.UTF_8)) {
                if (l.startsWith("#") || l.isEmpty()) {
                    continue;
                }
                String[] f = l.split(",", 3);
                m.put(f[2], Integer.parseInt(f[0]));
            }
            ids = m;
        }
        Integer i = ids.get(method);
        assertNotNull("in the method-ID file: " + method, i);
        return i;
    }

    static final String[] ORDER = {"application_attach_base_context", "application_on_create", "activity_on_create",
        "activity_on_start", "activity_on_resume"};

    /**
     * The contract's rules: phases (those expected, and no others) with
     * begin ≤ end, in lifecycle order, within [start, first frame]; TTFD ≥
     * start; the thread a main segment of the batch.
     */
    static void checkShape(Ev e, String kind, String... phases) {
        assertEquals(e.json.toString(), kind, e.json.get("kind"));
        assertEquals("launch", e.json.get("type"));
        assertTrue(e.seg().main());
        String dev = (String) e.json.get("device");
        assertTrue(dev != null && !dev.isEmpty() && dev.length() <= 64);
        long start = e.num("start_us");
        long frame = e.num("first_frame_us");
        assertTrue("first frame after start", frame >= start);
        assertEquals(e.json.toString(), phases.length, e.phases().size());
        long last = start;
        for (String name : ORDER) {
            long[] p = e.phase(name);
            boolean want = java.util.Arrays.asList(phases).contains(name);
            assertEquals(name + " present: " + e.json, want, p != null);
            if (p == null) {
                continue;
            }
            assertTrue(name + " begins after the previous phase / start: " + e.json, p[0] >= last);
            assertTrue(name + " begin <= end", p[0] <= p[1]);
            assertTrue(name + " ends by the first frame", p[1] <= frame);
            last = p[1];
        }
        if (e.json.containsKey("fully_drawn_us")) {
            assertTrue(e.num("fully_drawn_us") >= frame);
        }
    }

    /** The window's records hold an enter of {@code method} within [start, first frame]. */
    static void windowHolds(Ev e, String method) throws Exception {
        int want = id(method);
        long start = e.num("start_us");
        long frame = e.num("first_frame_us");
        for (long r : e.seg().records) {
            int rid = (int) (r >>> 40) & 0x7FFFFF;
            long t = r & ((1L << 40) - 1);
            if (r >= 0 && rid == want && t >= start && t <= frame) {
                return;
            }
        }
        throw new AssertionError("no enter of " + method + " in the launch window " + e.json);
    }

    /**
     * The phase covers the outermost call of {@code method}: begin ≤ its
     * enter record, end ≥ its exit record (hooks wrap the probes; exact µs
     * clock: full mode only).
     */
    static void phaseCovers(Ev e, String phase, String method) throws Exception {
        int want = id(method);
        long[] p = e.phase(phase);
        long enter = -1;
        long exit = -1;
        for (long r : e.seg().records) {
            int rid = (int) (r >>> 40) & 0x7FFFFF;
            long t = r & ((1L << 40) - 1);
            if (rid == want && r >= 0 && enter < 0 && t >= p[0] - 1000000) {
                enter = t;
            } else if (rid == want && r < 0 && enter >= 0 && exit < 0) {
                exit = t;
            }
        }
        assertTrue(method + " entered and exited in the window", enter >= 0 && exit >= 0);
        assertTrue(phase + " begins by " + method + "'s enter: " + e.json + " enter " + enter, p[0] <= enter);
        assertTrue(phase + " ends after " + method + "'s exit: " + e.json + " exit " + exit, p[1] >= exit);
    }

    /** The window holds no enter of {@code method} (it ran outside the launch). */
    static void windowLacks(Ev e, String method) throws Exception {
        int want = id(method);
        long start = e.num("start_us");
        long frame = e.num("first_frame_us");
        for (long r : e.seg().records) {
            int rid = (int) (r >>> 40) & 0x7FFFFF;
            long t = r & ((1L << 40) - 1);
            assertFalse(method + " in the launch window", r >= 0 && rid == want && t >= start && t <= frame);
        }
    }

    static final String MAIN_CREATE = "launchapp.MainActivity onCreate (Landroid/os/Bundle;)V";
    static final String APP_CREATE = "launchapp.LaunchApp onCreate ()V";

    private static ActivityController<MainActivity> launchMain() {
        return Robolectric.buildActivity(MainActivity.class).create().start().resume().visible();
    }

    private static void coldStart(String mode) throws Exception {
        assertEquals(mode, Beatline.stats().uploadMode);
        ActivityController<MainActivity> c = Robolectric.buildActivity(MainActivity.class).create().start().resume();
        assertEquals("no launch before the first frame", 0, Launch.completed);
        c.visible();
        frames();
        assertEquals("the first frame completes the launch", 1, Launch.completed);
        if (mode.equals("triggered")) {
            assertFalse("the launch window closed at the first frame", Beatline.recording());
        }
        Beatline.reportFullyDrawn();
        dump();
        List<Ev> ls = launches();
        assertEquals(1, ls.size());
        Ev e = ls.get(0);
        checkShape(e, "cold", ORDER);
        assertEquals(MainActivity.class.getName(), e.json.get("activity"));
        assertTrue("TTFD reported", e.json.containsKey("fully_drawn_us"));
        windowHolds(e, MAIN_CREATE);
        windowHolds(e, APP_CREATE);
        windowHolds(e, "launchapp.BaseActivity onCreate (Landroid/os/Bundle;)V");
        if (mode.equals("full")) {
            // MainActivity's hooks are outside BaseActivity's (nested): the phases are the outer calls
            phaseCovers(e, "activity_on_create", MAIN_CREATE);
            phaseCovers(e, "activity_on_resume", "launchapp.MainActivity onResume ()V");
            phaseCovers(e, "application_on_create", APP_CREATE);
        }
        c.pause().stop().destroy();
    }

    @Test
    public void coldStartFullMode() throws Exception {
        coldStart("full");
    }

    @Test
    @Config(application = LaunchAppTriggered.class)
    public void coldStartTriggeredMode() throws Exception {
        coldStart("triggered");
        // triggered: the launch is a batch of its own, its window the main thread's segment 0
        for (BatchReader b : spooled()) {
            if (!b.events.isEmpty()) {
                assertEquals(1, b.segs.size());
            }
        }
    }

    @Test
    public void warmStart() throws Exception {
        ActivityController<MainActivity> c = launchMain();
        frames();
        // back pressed: the activity is destroyed, the process lives on
        c.pause().stop().destroy();
        frames();
        dump();
        int before = launches().size();
        assertEquals("the cold launch", 1, before);
        ActivityController<MainActivity> c2 = launchMain();
        frames();
        dump();
        List<Ev> ls = launches();
        assertEquals(2, ls.size());
        Ev warm = ls.get(1).json.get("kind").equals("warm") ? ls.get(1) : ls.get(0);
        checkShape(warm, "warm", "activity_on_create", "activity_on_start", "activity_on_resume");
        assertEquals("warm: starts at Activity.onCreate", warm.num("start_us"),
                warm.phase("activity_on_create")[0]);
        assertFalse("no TTFD reported", warm.json.containsKey("fully_drawn_us"));
        windowHolds(warm, MAIN_CREATE);
        windowLacks(warm, APP_CREATE);
        c2.pause().stop().destroy();
    }

    @Test
    @Config(application = LaunchAppTriggered.class)
    public void hotStart() throws Exception {
        ActivityController<MainActivity> c = launchMain();
        frames();
        c.pause().stop(); // home: in the background, not destroyed
        frames();
        c.restart().resume(); // brought to front: onRestart, onStart, onResume
        frames();
        dump();
        List<Ev> ls = launches();
        assertEquals(2, ls.size());
        Ev hot = ls.get(0).json.get("kind").equals("hot") ? ls.get(0) : ls.get(1);
        checkShape(hot, "hot", "activity_on_start", "activity_on_resume");
        windowHolds(hot, "launchapp.MainActivity onRestart ()V");
        windowLacks(hot, MAIN_CREATE);
        c.pause().stop().destroy();
    }

    @Test
    public void splashHandsOverToMain() throws Exception {
        ActivityController<SplashActivity> s = Robolectric.buildActivity(SplashActivity.class).create();
        assertTrue(s.get().isFinishing());
        Intent next = shadowOf(s.get()).getNextStartedActivity();
        assertEquals(MainActivity.class.getName(), next.getComponent().getClassName());
        ActivityController<MainActivity> c = Robolectric.buildActivity(MainActivity.class, next).create().start()
                .resume().visible();
        s.destroy();
        frames();
        dump();
        List<Ev> ls = launches();
        assertEquals("one launch through the splash", 1, ls.size());
        Ev e = ls.get(0);
        checkShape(e, "cold", ORDER);
        assertEquals("the launched activity is the one drawn", MainActivity.class.getName(), e.json.get("activity"));
        windowHolds(e, "launchapp.SplashActivity onCreate (Landroid/os/Bundle;)V");
        windowHolds(e, MAIN_CREATE);
        // navigation later (Main opens Other while in front): not a launch
        ActivityController<OtherActivity> o = Robolectric.buildActivity(OtherActivity.class).create().start()
                .resume().visible();
        c.pause();
        frames();
        c.stop();
        dump();
        assertEquals("navigation is not a launch", 1, launches().size());
        o.pause().stop().destroy();
        c.destroy();
    }

    @Test
    @Config(application = LaunchAppTriggered.class)
    public void serviceOnlyStartIsNotALaunch() throws Exception {
        assertTrue("the cold candidate's window is open until the first message", Beatline.recording());
        // the process was started for the service: its importance is not FOREGROUND
        ActivityManager am = (ActivityManager) app().getSystemService(Context.ACTIVITY_SERVICE);
        ActivityManager.RunningAppProcessInfo pi = new ActivityManager.RunningAppProcessInfo(
                app().getPackageName(), Process.myPid(), null);
        pi.importance = ActivityManager.RunningAppProcessInfo.IMPORTANCE_SERVICE;
        shadowOf(am).setProcesses(Collections.singletonList(pi));
        Robolectric.buildService(SyncService.class).create().startCommand(0, 1);
        frames();
        assertFalse("the window closed: nothing recorded for a service", Beatline.recording());
        dump();
        assertEquals("no launch", 0, launches().size());
        assertEquals(0, Launch.completed);
        // the user opens the app later, the process still alive: warm, not cold
        pi.importance = ActivityManager.RunningAppProcessInfo.IMPORTANCE_FOREGROUND;
        ActivityController<MainActivity> c = launchMain();
        frames();
        dump();
        List<Ev> ls = launches();
        assertEquals(1, ls.size());
        checkShape(ls.get(0), "warm", "activity_on_create", "activity_on_start", "activity_on_resume");
        c.pause().stop().destroy();
    }

    @Test
    public void backgroundedBeforeTheFirstFrameIsNotALaunch() throws Exception {
        ActivityController<MainActivity> c = Robolectric.buildActivity(MainActivity.class).create().start().resume();
        assertEquals("no frame yet", 0, Launch.completed);
        c.pause().stop(); // home pressed before anything was drawn
        frames(); // the frame asked for at onResume comes: not a launch any more
        dump();
        assertEquals("no launch sent", 0, launches().size());
        assertEquals(0, Launch.completed);
        assertEquals("recognised as a non-launch", 1, Launch.abandoned);
        // brought to front again: that is a launch (hot)
        c.restart().resume();
        frames();
        dump();
        List<Ev> ls = launches();
        assertEquals(1, ls.size());
        checkShape(ls.get(0), "hot", "activity_on_start", "activity_on_resume");
        assertNull(ls.get(0).json.get("fully_drawn_us"));
        c.pause().stop().destroy();
    }
}
