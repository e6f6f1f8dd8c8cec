package io.beatline.runtime.android;

import android.os.Build;
import io.beatline.runtime.DeviceInfo;

/**
 * {@link DeviceInfo} from {@link Build} (issue 14): read once per start, on
 * the thread that starts the runtime (no disk, no IPC: static fields).
 *
 * <ul>
 * <li>{@code device_model}: {@code "<MANUFACTURER> <MODEL> (<first supported ABI>)"},
 *     e.g. {@code "Google Pixel 7 (arm64-v8a)"};</li>
 * <li>{@code os_version}: {@code Build.VERSION.RELEASE}, e.g. {@code "14"};</li>
 * <li>{@code sdk_level}: {@code Build.VERSION.SDK_INT}.</li>
 * </ul>
 */
public final class AndroidDeviceInfo implements DeviceInfo {
    @Override
    public String model() {
        String abi = Build.SUPPORTED_ABIS != null && Build.SUPPORTED_ABIS.length > 0 ? Build.SUPPORTED_ABIS[0] : "";
        String m = (nz(Build.MANUFACTURER) + " " + nz(Build.MODEL)).trim();
        return abi.isEmpty() ? m : m + " (" + abi + ")";
    }

    @Override
    public String osVersion() {
        return nz(Build.VERSION.RELEASE);
    }

    @Override
    public int sdkLevel() {
        return Build.VERSION.SDK_INT;
    }

    private static String nz(String s) {
        return s == null ? "" : s;
    }
}
