package launchapp;

import android.app.Activity;
import android.content.Intent;
import android.os.Bundle;

/** A trampoline splash: hands over to {@link MainActivity} in its onCreate and finishes. */
public class SplashActivity extends Activity {
    @Override
    protected void onCreate(Bundle b) {
        super.onCreate(b);
        Work.spin(1);
        startActivity(new Intent(this, MainActivity.class));
        finish();
    }
}
