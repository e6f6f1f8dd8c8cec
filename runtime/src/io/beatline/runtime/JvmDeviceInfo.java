package io.beatline.runtime;

/**
 * {@link DeviceInfo} of a plain JVM, from system properties:
 * <ul>
 * <li>model: {@code java.vm.name + " " + java.version}, e.g.
 *     {@code "OpenJDK 64-Bit Server VM 17.0.15"} (the "device" a JVM program
 *     runs on is its VM);</li>
 * <li>OS version: {@code os.name + " " + os.version + " " + os.arch}, e.g.
 *     {@code "Linux 6.1.0-31-amd64 amd64"};</li>
 * <li>SDK level: 0 (not Android).</li>
 * </ul>
 * A property that cannot be read (security manager) reads as {@code "?"}.
 */
public final class JvmDeviceInfo implements DeviceInfo {
    private static String prop(String k) {
        try {
            String v = System.getProperty(k);
            return v == null ? "?" : v;
        } catch (Throwable t) {
            return "?";
        }
    }

    /** {@inheritDoc} */
    @Override
    public String model() {
        return prop("java.vm.name") + " " + prop("java.version");
    }

    /** {@inheritDoc} */
    @Override
    public String osVersion() {
        return prop("os.name") + " " + prop("os.version") + " " + prop("os.arch");
    }

    /** @return 0 */
    @Override
    public int sdkLevel() {
        return 0;
    }
}
