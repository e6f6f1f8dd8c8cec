import java.io.*;
import java.net.*;
import java.nio.file.*;
import java.util.*;
import java.util.stream.*;
import org.objectweb.asm.ClassReader;
import org.objectweb.asm.util.CheckClassAdapter;

/**
 * Checks instrumented classes: ASM's CheckClassAdapter.verify (data-flow
 * analysis with SimpleVerifier) on every class, then loading and
 * initialising every class in a loader that sees the instrumented directory
 * first, then the given class path (run with java -Xverify:all).
 *
 *   java -Xverify:all -cp asm*.jar:. VerifyDir DIR CLASSPATH [--no-init]
 *
 * Prints one line per failure and a summary; exit 1 when any class fails
 * ASM's check or throws VerifyError/ClassFormatError/LinkageError other than
 * a missing dependency.
 */
public class VerifyDir {
    public static void main(String[] args) throws Exception {
        Path dir = Paths.get(args[0]);
        List<URL> urls = new ArrayList<>();
        urls.add(dir.toUri().toURL());
        if (args.length > 1)
            for (String p : args[1].split(":"))
                if (!p.isEmpty()) urls.add(Paths.get(p).toUri().toURL());
        boolean init = !(args.length > 2 && args[2].equals("--no-init"));
        URLClassLoader loader = new URLClassLoader(urls.toArray(new URL[0]), null);
        List<Path> files;
        try (Stream<Path> s = Files.walk(dir)) {
            files = s.filter(p -> p.toString().endsWith(".class")).sorted().collect(Collectors.toList());
        }
        int asmFail = 0, jvmFail = 0, missing = 0, ok = 0;
        for (Path f : files) {
            String rel = dir.relativize(f).toString();
            String name = rel.substring(0, rel.length() - 6).replace('/', '.');
            if (name.startsWith("io.beatline.runtime.") || name.endsWith("module-info")) continue;
            byte[] b = Files.readAllBytes(f);
            StringWriter sw = new StringWriter();
            try {
                CheckClassAdapter.verify(new ClassReader(b), loader, false, new PrintWriter(sw));
            } catch (Throwable t) {
                sw.write("exception: " + t);
            }
            if (sw.toString().length() > 0) {
                String out = sw.toString();
                if (out.contains("ClassNotFoundException") || out.contains("TypeNotPresent")) {
                    missing++;
                } else {
                    asmFail++;
                    if (asmFail <= 10)
                        System.out.println("ASM " + name + ": " + out.substring(0, Math.min(out.length(), 3000)));
                }
            }
            try {
                Class.forName(name, init, loader);
                ok++;
            } catch (VerifyError | ClassFormatError | IncompatibleClassChangeError e) {
                jvmFail++;
                System.out.println("JVM " + name + ": " + e);
            } catch (NoClassDefFoundError | ExceptionInInitializerError e) {
                missing++;
            } catch (LinkageError e) {
                jvmFail++;
                System.out.println("JVM " + name + ": " + e);
            } catch (Throwable e) {
                missing++;
            }
        }
        System.out.println("checked " + files.size() + " classes: loaded " + ok + ", asm failures " + asmFail
                + ", jvm failures " + jvmFail + ", missing deps/init errors " + missing);
        System.exit(asmFail + jvmFail > 0 ? 1 : 0);
    }
}
