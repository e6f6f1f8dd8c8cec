package launchapp;

import android.app.Activity;
import android.os.Bundle;

/** A second screen opened from {@link MainActivity}: navigation, not a launch. */
public class OtherActivity extends Activity {
    @Override
    protected void onCreate(Bundle b) {
        super.onCreate(b);
        Work.spin(1);
    }
}
