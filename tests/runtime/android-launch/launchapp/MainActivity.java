package launchapp;

import android.os.Bundle;

/** The main screen: declares every hooked lifecycle method. */
public class MainActivity extends BaseActivity {
    int starts;

    @Override
    protected void onCreate(Bundle b) {
        super.onCreate(b);
        Work.inflate();
    }

    @Override
    protected void onRestart() {
        super.onRestart();
        Work.spin(1);
    }

    @Override
    protected void onStart() {
        super.onStart();
        starts++;
        Work.spin(2);
    }

    @Override
    protected void onResume() {
        super.onResume();
        Work.spin(2);
    }
}
