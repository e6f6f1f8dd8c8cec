package launchapp;

import android.app.Activity;
import android.os.Bundle;

/**
 * A library-style base activity (as AppCompatActivity is) that declares
 * onCreate and onResume too: its hooks run nested inside MainActivity's,
 * and the launch's phases are the outermost calls.
 */
public class BaseActivity extends Activity {
    @Override
    protected void onCreate(Bundle b) {
        super.onCreate(b);
        Work.spin(1);
    }

    @Override
    protected void onResume() {
        super.onResume();
        Work.spin(1);
    }
}
