package io.beatline.runtime.android;

import android.app.ActivityManager;
import android.app.Application;
import android.content.Context;
import android.content.pm.ApplicationInfo;
import android.content.pm.PackageManager;
import android.os.Build;
import android.os.Bundle;
import io.beatline.runtime.AndroidBeatline;
import io.beatline.runtime.BeatlineConfig;
import java.io.File;
import java.util.List;

/**
 * Starting the runtime in an Android app (issue 14): what
 * {@link BeatlineInitProvider} does before {@code Application.onCreate}, or an
 * app that removed the provider does itself with {@link #builder}.
 *
 * <p><b>Manifest meta-data</b> (inside {@code <application>}):
 * <table>
 * <caption>settings</caption>
 * <tr><td>{@code io.beatline.server}</td><td>server base URL, {@code https://…} (required)</td></tr>
 * <tr><td>{@code io.beatline.app}</td><td>app name on the server (required)</td></tr>
 * <tr><td>{@code io.beatline.ingestKey}</td><td>ingest key (required)</td></tr>
 * <tr><td>{@code io.beatline.uploadMode}</td><td>{@code triggered} (default) or {@code full}</td></tr>
 * <tr><td>{@code io.beatline.sampleRate}</td><td>triggered: fraction 0..1 of sessions in full (default 0.01)</td></tr>
 * <tr><td>{@code io.beatline.build}</td><td>the build id (default: see {@link #buildId})</td></tr>
 * <tr><td>{@code io.beatline.processes}</td><td>{@code main} (default) or {@code all}</td></tr>
 * <tr><td>{@code io.beatline.unmeteredOnly}</td><td>upload only on unmetered networks (default false)</td></tr>
 * <tr><td>{@code io.beatline.respectDataSaver}</td><td>no upload on metered networks under Data Saver (default true)</td></tr>
 * <tr><td>{@code io.beatline.pauseOnLowBattery}</td><td>no upload on low battery (default true)</td></tr>
 * <tr><td>{@code io.beatline.uploadMinBatches}</td><td>upload when the spool holds this many batches, or at the
 *     next background (default 20)</td></tr>
 * <tr><td>{@code io.beatline.flushIntervalMillis}</td><td>full mode: ms between regular dumps while records
 *     are written (default 30000)</td></tr>
 * <tr><td>{@code io.beatline.debug}</td><td>debug lines in logcat (default false)</td></tr>
 * <tr><td>{@code io.beatline.enabled}</td><td>false: the provider does not start the runtime (default true)</td></tr>
 * </table>
 */
public final class AndroidStart {
    /** Meta-data key prefix. */
    public static final String META = "io.beatline.";
    /** The string resource a build step generates with the per-build id (see {@link #buildId}). */
    public static final String BUILD_ID_RESOURCE = "beatline_build_id";

    private AndroidStart() {
    }

    /**
     * Reads the manifest meta-data and starts the runtime when this is the
     * main process (or {@code io.beatline.processes} is {@code all}). Main
     * thread: no disk, no network (package-manager IPC only; the spool is
     * opened on the runtime's thread). Never throws.
     *
     * @return whether the runtime started
     */
    public static boolean start(Context context) {
        AndroidLog log = new AndroidLog(false);
        try {
            Bundle meta = metaData(context);
            if (meta == null) {
                meta = new Bundle();
            }
            log = new AndroidLog(bool(meta, "debug", false));
            if (!bool(meta, "enabled", true)) {
                log.debug("io.beatline.enabled is false: not started");
                return false;
            }
            String process = processName(context);
            String mainProcess = context.getApplicationInfo().processName;
            boolean main = process == null || mainProcess == null || process.equals(mainProcess);
            boolean all = "all".equals(str(meta, "processes", "main"));
            if (!main && !all) {
                log.debug("process " + process + " is not the main process: not started (io.beatline.processes=all)");
                return false;
            }
            BeatlineConfig.Builder b = builder(context, main ? null : process, bool(meta, "debug", false))
                    .server(str(meta, "server", null)).app(str(meta, "app", null))
                    .ingestKey(str(meta, "ingestKey", null)).build(buildId(context, meta))
                    .uploadMode(str(meta, "uploadMode", "triggered"))
                    .uploadMinBatches((int) num(meta, "uploadMinBatches", 20))
                    .uploadGate(new AndroidUploadGate(context, bool(meta, "unmeteredOnly", false),
                            bool(meta, "respectDataSaver", true), bool(meta, "pauseOnLowBattery", true)));
            if (meta.containsKey(META + "flushIntervalMillis")) {
                b.flushIntervalMillis((long) num(meta, "flushIntervalMillis", 30000));
            }
            if (meta.containsKey(META + "sampleRate")) {
                b.sampleRate(num(meta, "sampleRate", 0.01));
            }
            BeatlineConfig cfg;
            try {
                cfg = b.build();
            } catch (IllegalArgumentException e) {
                log.warn("not started: manifest meta-data io.beatline.*: " + e.getMessage());
                return false;
            }
            return AndroidBeatline.start(cfg);
        } catch (Throwable t) {
            log.warn("not started: " + t);
            return false;
        }
    }

    /**
     * {@link AndroidBeatline#builder()} (phone behaviour, memory budget)
     * with this app's platform pieces: {@link AndroidDeviceInfo},
     * {@link AndroidLog}, {@link AndroidLifecycle}, the spool directory
     * (computed, not created: the runtime's thread creates it) and the
     * process tag. The caller sets server, app, ingest key and build.
     *
     * @param process the process name for the batch header and the spool
     *        folder; null in the main process
     */
    public static BeatlineConfig.Builder builder(Context context, String process, boolean debug) {
        Application app = (Application) context.getApplicationContext();
        return AndroidBeatline.builder().device(new AndroidDeviceInfo()).log(new AndroidLog(debug))
                .lifecycle(new AndroidLifecycle(app)).spoolDir(spoolDir(context, process)).process(process);
    }

    /**
     * {@code <dataDir>/files/beatline} in the main process,
     * {@code <dataDir>/files/beatline-p-<process, file-safe>} in another one
     * (each process spools separately). Computed without touching the disk.
     */
    public static File spoolDir(Context context, String process) {
        ApplicationInfo ai = context.getApplicationInfo();
        File data = ai.dataDir != null ? new File(ai.dataDir) : new File("/data/data/" + context.getPackageName());
        String name = process == null ? "beatline" : "beatline-p-" + process.replaceAll("[^A-Za-z0-9._-]", "_");
        return new File(new File(data, "files"), name);
    }

    /**
     * The build id, first found of: the build name generated into the app by
     * {@code beatline-instrument --build-class} (schema/build-id.md; the
     * configuration uses it in any case); meta-data {@code io.beatline.build}; the
     * string resource {@code beatline_build_id} of the app's package (what a
     * build step generates, a per-build UUID); {@code versionName} (which a
     * rebuild with changed code keeps: a warning says so).
     */
    public static String buildId(Context context, Bundle meta) {
        String g = io.beatline.runtime.GeneratedBuild.name(context.getClassLoader());
        if (g != null) {
            return g;
        }
        String b = meta == null ? null : str(meta, "build", null);
        if (b != null && !b.isEmpty()) {
            return b;
        }
        try {
            int id = context.getResources().getIdentifier(BUILD_ID_RESOURCE, "string", context.getPackageName());
            if (id != 0) {
                String s = context.getResources().getString(id);
                if (s != null && !s.isEmpty()) {
                    return s;
                }
            }
        } catch (Throwable t) {
            // no such resource
        }
        String v = null;
        try {
            v = context.getPackageManager().getPackageInfo(context.getPackageName(), 0).versionName;
        } catch (Throwable t) {
            // unknown
        }
        new AndroidLog(false).warn("no build id (meta-data io.beatline.build or string resource "
                + BUILD_ID_RESOURCE + "): using versionName " + v + ", which a rebuild keeps");
        return v == null || v.isEmpty() ? "unknown" : v;
    }

    /** This process's name ({@code Application.getProcessName()} on API 28+, else ActivityManager); null: unknown. */
    public static String processName(Context context) {
        if (Build.VERSION.SDK_INT >= 28) {
            return Application.getProcessName();
        }
        try {
            ActivityManager am = (ActivityManager) context.getSystemService(Context.ACTIVITY_SERVICE);
            List<ActivityManager.RunningAppProcessInfo> ps = am == null ? null : am.getRunningAppProcesses();
            if (ps != null) {
                int pid = android.os.Process.myPid();
                for (ActivityManager.RunningAppProcessInfo p : ps) {
                    if (p.pid == pid) {
                        return p.processName;
                    }
                }
            }
        } catch (Throwable t) {
            // unknown
        }
        return null;
    }

    private static Bundle metaData(Context context) throws PackageManager.NameNotFoundException {
        return context.getPackageManager().getApplicationInfo(context.getPackageName(),
                PackageManager.GET_META_DATA).metaData;
    }

    /** A meta-data value as text ({@code android:value="123"} arrives as an Integer). */
    @SuppressWarnings("deprecation") // Bundle.get(String): the value's type is the manifest's (Integer, Boolean, String)
    static String str(Bundle meta, String key, String dflt) {
        Object v = meta.get(META + key);
        return v == null ? dflt : String.valueOf(v).trim();
    }

    static boolean bool(Bundle meta, String key, boolean dflt) {
        String v = str(meta, key, null);
        return v == null ? dflt : "true".equalsIgnoreCase(v);
    }

    static double num(Bundle meta, String key, double dflt) {
        String v = str(meta, key, null);
        if (v == null) {
            return dflt;
        }
        try {
            return Double.parseDouble(v);
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException(META + key + " must be a number: " + v);
        }
    }
}
