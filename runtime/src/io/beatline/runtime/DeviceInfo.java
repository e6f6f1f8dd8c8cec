package io.beatline.runtime;

/**
 * The device fields of a batch header (schema/batch-format.md, "Header":
 * {@code device_model}, {@code os_version}, {@code sdk_level}). Read once
 * per {@link Beatline#start(BeatlineConfig)}.
 *
 * <p>JVM implementation: {@link JvmDeviceInfo}; Android (later issue):
 * {@code Build.MODEL}, {@code Build.VERSION.RELEASE},
 * {@code Build.VERSION.SDK_INT}.
 */
public interface DeviceInfo {
    /** @return the device model, e.g. {@code "Pixel 7"} */
    String model();

    /** @return the OS version, e.g. {@code "14"} */
    String osVersion();

    /** @return the Android API level, 0 when not Android */
    int sdkLevel();
}
