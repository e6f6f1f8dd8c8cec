package io.beatline.runtime;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertNull;
import static org.junit.Assert.assertTrue;

import java.io.File;
import java.io.FileOutputStream;
import java.io.OutputStream;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.charset.StandardCharsets;

import javax.tools.JavaCompiler;
import javax.tools.ToolProvider;

import org.junit.Test;

/**
 * The build name generated into the app (schema/build-id.md: class
 * io.beatline.build.BeatlineBuild, field BUILD) is the configuration's
 * build, over a configured one (which is reported), and absent it the
 * configured build stays.
 */
public class GeneratedBuildTest {
    /** A loader that sees a BeatlineBuild with BUILD = build, compiled here (javac of this JDK). */
    private static ClassLoader withGenerated(String build) throws Exception {
        File dir = TestSupport.tempDir("genbuild");
        File src = new File(dir, "io/beatline/build/BeatlineBuild.java");
        assertTrue(src.getParentFile().mkdirs() || src.getParentFile().isDirectory());
        String java = "package io.beatline.build;\npublic final class BeatlineBuild {\n"
                + "  public static final String BUILD = \"" + build + "\";\n"
                + "  public static final String BUILD_ID = \"3f2a9c1b-04de-4c1e-9a2b-0123456789ab\";\n"
                + "  public static final String VERSION_NAME = \"7.1\";\n}\n";
        try (OutputStream o = new FileOutputStream(src)) {
            o.write(java.getBytes(StandardCharsets.UTF_8));
        }
        JavaCompiler javac = ToolProvider.getSystemJavaCompiler();
        assertTrue("a JDK's compiler", javac != null);
        assertEquals(0, javac.run(null, null, null, "-d", dir.getPath(), src.getPath()));
        return new URLClassLoader(new URL[] { dir.toURI().toURL() }, GeneratedBuildTest.class.getClassLoader());
    }

    private static BeatlineConfig config(String build, ClassLoader l) {
        Thread t = Thread.currentThread();
        ClassLoader old = t.getContextClassLoader();
        t.setContextClassLoader(l);
        try {
            BeatlineConfig.Builder b = new BeatlineConfig.Builder().server("http://127.0.0.1:9").app("a")
                    .ingestKey("k");
            if (build != null) {
                b.build(build);
            }
            return b.build();
        } finally {
            t.setContextClassLoader(old);
        }
    }

    @Test
    public void generatedClassNamesTheBuild() throws Exception {
        ClassLoader l = withGenerated("7.1+3f2a9c1b04de");
        assertEquals("7.1+3f2a9c1b04de", GeneratedBuild.name(l));
        BeatlineConfig c = config(null, l);
        assertEquals("7.1+3f2a9c1b04de", c.build);
        assertNull("nothing configured: nothing to report", c.buildNote);
        c = config("7.1", l);
        assertEquals("the generated build wins over a configured one", "7.1+3f2a9c1b04de", c.build);
        assertTrue(c.buildNote, c.buildNote.contains("7.1+3f2a9c1b04de") && c.buildNote.contains("build 7.1 "));
    }

    @Test
    public void withoutTheClassTheConfiguredBuildStays() {
        ClassLoader l = GeneratedBuildTest.class.getClassLoader();
        assertNull(GeneratedBuild.name(l));
        BeatlineConfig c = config("2.0", l);
        assertEquals("2.0", c.build);
        assertNull(c.buildNote);
        assertEquals("unknown", config(null, l).build);
    }
}
