package io.beatline.runtime;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertTrue;
import static org.junit.Assume.assumeTrue;
import static org.robolectric.Shadows.shadowOf;

import android.os.Looper;
import java.time.Duration;
import launchapp.LaunchApp;
import launchapp.MainActivity;
import launchapp.OtherActivity;
import org.junit.After;
import org.junit.Test;
import org.junit.runner.RunWith;
import org.robolectric.Robolectric;
import org.robolectric.android.controller.ActivityController;
import org.robolectric.annotation.Config;

/**
 * Issue 15, end to end (driven by tests/integration/launch_e2e_test.sh, which
 * sets beatline.test.launchServer and the app, key and build, and puts the
 * ProGuard-obfuscated, instrumented test app first on the class path): a
 * cold launch of the app (Application + MainActivity, then OtherActivity
 * opened from it: navigation, not a launch), its upload to the real server
 * on loopback. Skipped when no server is given (ctest runs LaunchTest).
 */
@RunWith(BeatlineRobolectricRunner.class)
@Config(sdk = 34, manifest = Config.NONE, application = LaunchApp.class)
public class LaunchE2ETest {
    @After
    public void tearDown() {
        Beatline.shutdown(0);
        Launch.reset();
    }

    private static void frames() {
        shadowOf(Looper.getMainLooper()).idleFor(Duration.ofMillis(100));
        shadowOf(Looper.getMainLooper()).idle();
    }

    @Test
    public void coldLaunchUploadsToTheServer() throws Exception {
        assumeTrue(System.getProperty("beatline.test.launchServer") != null);
        ActivityController<MainActivity> c = Robolectric.buildActivity(MainActivity.class).create().start().resume()
                .visible();
        frames();
        Beatline.reportFullyDrawn();
        ActivityController<OtherActivity> o = Robolectric.buildActivity(OtherActivity.class).create().start().resume()
                .visible();
        c.pause();
        frames();
        c.stop();
        assertEquals("one launch", 1, Launch.completed);
        // upload on another thread (on the main thread flushAndWait only hands over)
        final boolean[] empty = new boolean[1];
        Thread t = new Thread(new Runnable() {
            @Override
            public void run() {
                empty[0] = Beatline.flushAndWait(60000);
            }
        }, "e2e-upload");
        t.start();
        t.join(90000);
        Beatline.Stats st = Beatline.stats();
        System.out.println("e2e: uploaded=" + st.batchesUploaded + " refused=" + st.batchesRefused + " launches="
                + st.launchesSpooled + " dropped=" + st.launchesDropped);
        assertTrue("everything uploaded (2xx)", empty[0]);
        assertTrue(st.batchesUploaded >= 1);
        assertEquals(0, st.batchesRefused);
        assertEquals("the launch event went out", 1, st.launchesSpooled);
        o.pause().stop().destroy();
        c.destroy();
    }
}
