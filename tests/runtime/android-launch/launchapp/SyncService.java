package launchapp;

import android.app.Service;
import android.content.Intent;
import android.os.IBinder;

/** A service that starts the process without an activity (not a launch). */
public class SyncService extends Service {
    static int commands;

    @Override
    public int onStartCommand(Intent i, int flags, int id) {
        commands++;
        Work.spin(2);
        return START_NOT_STICKY;
    }

    @Override
    public IBinder onBind(Intent i) {
        return null;
    }
}
