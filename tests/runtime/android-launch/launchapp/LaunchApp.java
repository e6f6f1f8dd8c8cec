package launchapp;

import android.app.Application;
import android.content.Context;
import io.beatline.runtime.AndroidBeatline;
import io.beatline.runtime.android.AndroidDeviceInfo;
import io.beatline.runtime.android.AndroidLifecycle;
import io.beatline.runtime.android.AndroidStart;

/**
 * The test app's Application (issue 15, tests/runtime/android/.../LaunchTest):
 * instrumented with beatline-instrument (probes and launch hooks) before the
 * tests load it. It starts the runtime where the AAR's provider would, after
 * attachBaseContext and before onCreate (Robolectric's Config.NONE app has no
 * providers), in full upload mode; {@link LaunchAppTriggered} in triggered.
 * Server: system property beatline.test.launchServer (default: a closed
 * port; the batches then stay in the spool for the test to read).
 */
public class LaunchApp extends Application {
    static int created;

    protected String mode() {
        return "full";
    }

    @Override
    protected void attachBaseContext(Context base) {
        super.attachBaseContext(base);
        Work.spin(3);
        AndroidBeatline.start(AndroidBeatline.builder().lifecycle(new AndroidLifecycle(this))
                .device(new AndroidDeviceInfo()).spoolDir(AndroidStart.spoolDir(this, null))
                .server(System.getProperty("beatline.test.launchServer", "http://127.0.0.1:9"))
                .app(System.getProperty("beatline.test.launchApp", "launch"))
                .ingestKey(System.getProperty("beatline.test.launchKey", "blk_ing_test"))
                .build(System.getProperty("beatline.test.launchBuild", "launch-1"))
                .uploadMode(mode()).sampleRate(0).uploadMinBatches(1).build());
    }

    @Override
    public void onCreate() {
        super.onCreate();
        created++;
        Work.spin(5);
    }
}
