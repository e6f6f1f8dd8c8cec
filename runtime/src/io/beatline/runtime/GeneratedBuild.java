package io.beatline.runtime;

/**
 * The build name {@code beatline-instrument --build-class} generated into
 * the app: the field {@code BUILD} of {@code io.beatline.build.BeatlineBuild}
 * (schema/build-id.md: {@code VERSION+SHORT}, a per-build id that a rebuild
 * with changed code does not share). Read by reflection, without
 * initialising the class (it has only constant fields anyway).
 */
public final class GeneratedBuild {
    /** The generated class's binary name. */
    public static final String CLASS = "io.beatline.build.BeatlineBuild";

    private GeneratedBuild() {
    }

    /**
     * @param loader where the app's classes are (null: this class's loader)
     * @return the generated build name, or null when the app has no generated
     *         class (plain JVM apps) or it cannot be read (any reflection error)
     */
    public static String name(ClassLoader loader) {
        try {
            ClassLoader l = loader != null ? loader : GeneratedBuild.class.getClassLoader();
            Class<?> c = Class.forName(CLASS, false, l);
            Object v = c.getField("BUILD").get(null);
            return v instanceof String && !((String) v).isEmpty() ? (String) v : null;
        } catch (Throwable t) {
            return null;
        }
    }
}
