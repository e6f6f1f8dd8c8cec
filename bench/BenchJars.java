// Helper for bench/make-big-mapping.sh (compiled there at run time with javac).
//
//   java BenchJars jrt OUT.jar MAJOR MODULE...
//       Copies the classes of the given modules of the running JDK (read
//       through the jrt:/ file system) into OUT.jar, lowering every class-file
//       major version above MAJOR to MAJOR (bytes 6-7 of the class file), so
//       that tools that only read older class files (ProGuard 6.2.2 reads up to
//       Java 13) accept them as -libraryjars. module-info.class is skipped.
//
//   java BenchJars select MAXMAJOR JAR...
//       Prints "CLASSES<TAB>GROUP<TAB>JAR", one a line, for the JARs that can
//       be used together as ProGuard -injars: each must be a readable zip whose
//       classes (outside META-INF/) are well-formed class files of major
//       version <= MAXMAJOR, none of which was already provided by an earlier
//       accepted jar (ProGuard refuses to write duplicate entries). Jars that
//       share a Java package, directly or through other jars, get the same
//       GROUP number. Rejected jars are reported on stderr with the reason.
//
//   java BenchJars merge OUT.jar JAR...
//       Writes OUT.jar with the entries of all JARs (the first one wins on a
//       duplicate name; manifests are not copied).
import java.io.BufferedOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.net.URI;
import java.nio.file.FileSystem;
import java.nio.file.FileSystems;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Enumeration;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.jar.JarEntry;
import java.util.jar.JarOutputStream;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import java.util.zip.ZipEntry;
import java.util.zip.ZipFile;

public final class BenchJars {
    private BenchJars() {}

    public static void main(String[] args) throws Exception {
        if (args.length >= 3 && args[0].equals("jrt")) {
            jrt(Paths.get(args[1]), Integer.parseInt(args[2]), slice(args, 3));
        } else if (args.length >= 2 && args[0].equals("select")) {
            select(Integer.parseInt(args[1]), slice(args, 2));
        } else if (args.length >= 2 && args[0].equals("merge")) {
            merge(Paths.get(args[1]), slice(args, 2));
        } else {
            System.err.println("usage: BenchJars jrt OUT.jar MAJOR MODULE...\n"
                + "       BenchJars select MAXMAJOR JAR...\n"
                + "       BenchJars merge OUT.jar JAR...");
            System.exit(2);
        }
    }

    private static List<String> slice(String[] a, int from) {
        List<String> l = new ArrayList<>();
        for (int i = from; i < a.length; i++) l.add(a[i]);
        return l;
    }

    private static boolean isClassMagic(byte[] b) {
        return (b[0] & 0xff) == 0xca && (b[1] & 0xff) == 0xfe
            && (b[2] & 0xff) == 0xba && (b[3] & 0xff) == 0xbe;
    }

    private static void jrt(Path out, int major, List<String> modules) throws IOException {
        FileSystem fs = FileSystems.getFileSystem(URI.create("jrt:/"));
        int classes = 0;
        int lowered = 0;
        try (JarOutputStream jar = new JarOutputStream(
                new BufferedOutputStream(Files.newOutputStream(out), 1 << 16))) {
            for (String module : modules) {
                Path root = fs.getPath("/modules", module);
                if (!Files.isDirectory(root)) {
                    throw new IOException("no module " + module + " in this JDK");
                }
                List<Path> files;
                try (Stream<Path> s = Files.walk(root)) {
                    files = s.filter(p -> p.toString().endsWith(".class"))
                             .sorted()
                             .collect(Collectors.toList());
                }
                for (Path p : files) {
                    String name = root.relativize(p).toString();
                    if (name.equals("module-info.class")) continue;
                    byte[] b = Files.readAllBytes(p);
                    if (b.length < 8 || !isClassMagic(b)) {
                        throw new IOException("not a class file: " + p);
                    }
                    int v = ((b[6] & 0xff) << 8) | (b[7] & 0xff);
                    if (v > major) {
                        b[6] = (byte) (major >>> 8);
                        b[7] = (byte) major;
                        lowered++;
                    }
                    JarEntry e = new JarEntry(name);
                    e.setTime(0L); // reproducible jar
                    jar.putNextEntry(e);
                    jar.write(b);
                    jar.closeEntry();
                    classes++;
                }
            }
        }
        System.err.println("BenchJars: " + out + ": " + classes + " classes of "
            + modules.size() + " modules, " + lowered + " lowered to major " + major);
    }

    private static void select(int maxMajor, List<String> jars) {
        Map<String, String> owner = new HashMap<>();   // class entry -> jar
        Map<String, Integer> pkgJar = new HashMap<>();  // package -> accepted jar index
        List<String> accepted = new ArrayList<>();
        List<Integer> counts = new ArrayList<>();
        List<Integer> parent = new ArrayList<>();       // union-find over accepted jars
        for (String jar : jars) {
            List<String> names = new ArrayList<>();
            String why = null;
            try (ZipFile z = new ZipFile(jar)) {
                Enumeration<? extends ZipEntry> en = z.entries();
                while (en.hasMoreElements() && why == null) {
                    ZipEntry e = en.nextElement();
                    String n = e.getName();
                    if (e.isDirectory() || !n.endsWith(".class") || n.startsWith("META-INF/")
                            || n.equals("module-info.class")) {
                        continue;
                    }
                    byte[] h = new byte[8];
                    int got = 0;
                    try (InputStream in = z.getInputStream(e)) {
                        while (got < 8) {
                            int r = in.read(h, got, 8 - got);
                            if (r < 0) break;
                            got += r;
                        }
                    }
                    if (got < 8 || !isClassMagic(h)) {
                        why = "malformed class file " + n;
                        break;
                    }
                    int v = ((h[6] & 0xff) << 8) | (h[7] & 0xff);
                    if (v > maxMajor) {
                        why = n + " has class-file version " + v + " > " + maxMajor;
                        break;
                    }
                    String prev = owner.get(n);
                    if (prev != null) {
                        why = "duplicates classes of " + prev + " (" + n + ")";
                        break;
                    }
                    names.add(n);
                }
            } catch (IOException | RuntimeException ex) {
                why = "unreadable: " + ex;
            }
            if (why == null && names.isEmpty()) why = "no classes";
            if (why != null) {
                System.err.println("skip " + jar + ": " + why);
                continue;
            }
            int me = accepted.size();
            accepted.add(jar);
            counts.add(names.size());
            parent.add(me);
            for (String n : names) {
                owner.put(n, jar);
                int slash = n.lastIndexOf('/');
                String pkg = slash < 0 ? "" : n.substring(0, slash);
                Integer other = pkgJar.putIfAbsent(pkg, me);
                if (other != null) union(parent, other, me);
            }
        }
        for (int i = 0; i < accepted.size(); i++) {
            System.out.println(counts.get(i) + "\t" + find(parent, i) + "\t" + accepted.get(i));
        }
        System.err.println("BenchJars: " + owner.size() + " classes selected");
    }

    private static int find(List<Integer> parent, int i) {
        while (parent.get(i) != i) {
            parent.set(i, parent.get(parent.get(i)));
            i = parent.get(i);
        }
        return i;
    }

    private static void union(List<Integer> parent, int a, int b) {
        int ra = find(parent, a);
        int rb = find(parent, b);
        if (ra != rb) parent.set(Math.max(ra, rb), Math.min(ra, rb));
    }

    private static void merge(Path out, List<String> jars) throws IOException {
        Set<String> seen = new HashSet<>();
        byte[] buf = new byte[1 << 16];
        try (JarOutputStream jar = new JarOutputStream(
                new BufferedOutputStream(Files.newOutputStream(out), 1 << 16))) {
            for (String in : jars) {
                try (ZipFile z = new ZipFile(in)) {
                    Enumeration<? extends ZipEntry> en = z.entries();
                    while (en.hasMoreElements()) {
                        ZipEntry e = en.nextElement();
                        String n = e.getName();
                        if (e.isDirectory() || n.equals("META-INF/MANIFEST.MF") || !seen.add(n)) {
                            continue;
                        }
                        JarEntry o = new JarEntry(n);
                        o.setTime(0L);
                        jar.putNextEntry(o);
                        try (InputStream is = z.getInputStream(e)) {
                            int r;
                            while ((r = is.read(buf)) > 0) jar.write(buf, 0, r);
                        }
                        jar.closeEntry();
                    }
                }
            }
        }
        System.err.println("BenchJars: " + out + ": " + seen.size() + " entries from "
            + jars.size() + " jars");
    }
}
