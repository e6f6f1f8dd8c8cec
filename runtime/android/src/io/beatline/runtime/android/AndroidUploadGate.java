package io.beatline.runtime.android;

import android.content.Context;
import android.content.Intent;
import android.content.IntentFilter;
import android.net.ConnectivityManager;
import android.os.BatteryManager;
import android.os.Build;
import io.beatline.runtime.UploadGate;

/**
 * Android's {@link UploadGate} (issue 14), asked on the runtime's upload
 * thread before each upload pass:
 *
 * <ul>
 * <li>{@code unmeteredOnly} (meta-data {@code io.beatline.unmeteredOnly},
 *     default false): no upload on a metered network
 *     ({@code ConnectivityManager.isActiveNetworkMetered});</li>
 * <li>{@code respectDataSaver} ({@code io.beatline.respectDataSaver},
 *     default true): no upload on a metered network while Data Saver
 *     restricts this app ({@code getRestrictBackgroundStatus() ==
 *     RESTRICT_BACKGROUND_STATUS_ENABLED}, API 24+);</li>
 * <li>{@code pauseOnLowBattery} ({@code io.beatline.pauseOnLowBattery},
 *     default true): no upload while the battery is low and not charging
 *     (the sticky {@code ACTION_BATTERY_CHANGED}: {@code EXTRA_BATTERY_LOW}
 *     on API 28+, else at most 15 %).</li>
 * </ul>
 *
 * Reading the network state needs {@code ACCESS_NETWORK_STATE} (in the
 * AAR's manifest); without it the network checks are skipped.
 */
public final class AndroidUploadGate implements UploadGate {
    private final Context context;
    private final boolean unmeteredOnly;
    private final boolean respectDataSaver;
    private final boolean pauseOnLowBattery;

    public AndroidUploadGate(Context context, boolean unmeteredOnly, boolean respectDataSaver,
            boolean pauseOnLowBattery) {
        this.context = context.getApplicationContext() != null ? context.getApplicationContext() : context;
        this.unmeteredOnly = unmeteredOnly;
        this.respectDataSaver = respectDataSaver;
        this.pauseOnLowBattery = pauseOnLowBattery;
    }

    @Override
    public String blocked() {
        try {
            ConnectivityManager cm = (ConnectivityManager) context.getSystemService(Context.CONNECTIVITY_SERVICE);
            if (cm != null && (unmeteredOnly || respectDataSaver)) {
                boolean metered = cm.isActiveNetworkMetered();
                if (unmeteredOnly && metered) {
                    return "metered network (io.beatline.unmeteredOnly)";
                }
                if (respectDataSaver && metered && Build.VERSION.SDK_INT >= 24
                        && cm.getRestrictBackgroundStatus() == ConnectivityManager.RESTRICT_BACKGROUND_STATUS_ENABLED) {
                    return "Data Saver is on and the network is metered";
                }
            }
        } catch (SecurityException e) {
            // no ACCESS_NETWORK_STATE: the network is not checked
        }
        if (pauseOnLowBattery && batteryLow()) {
            return "battery low";
        }
        return null;
    }

    private boolean batteryLow() {
        Intent b = context.registerReceiver(null, new IntentFilter(Intent.ACTION_BATTERY_CHANGED));
        if (b == null) {
            return false;
        }
        if (b.getIntExtra(BatteryManager.EXTRA_PLUGGED, 0) != 0) {
            return false;
        }
        if (Build.VERSION.SDK_INT >= 28 && b.hasExtra(BatteryManager.EXTRA_BATTERY_LOW)) {
            return b.getBooleanExtra(BatteryManager.EXTRA_BATTERY_LOW, false);
        }
        int level = b.getIntExtra(BatteryManager.EXTRA_LEVEL, -1);
        int scale = b.getIntExtra(BatteryManager.EXTRA_SCALE, -1);
        return level >= 0 && scale > 0 && level * 100 <= 15 * scale;
    }
}
