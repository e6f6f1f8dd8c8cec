// Writes the classes of some modules of the running JDK (java.base first of
// all) into one jar that ProGuard 6.2.2 can read as -libraryjars.
//
// ProGuard 6.2.2 only understands class files up to Java 13 (major 57).  The
// classes of a JDK 17 are major 61, so every class whose major version is
// above 55 gets its two major-version bytes (offsets 6 and 7) set to 55.
// Nothing else in the class file changes: ProGuard only reads library
// classes for their hierarchy and member signatures.
//
// Usage: java -cp DIR JrtLibraryJar OUT.jar MODULE...   (e.g. java.base)

import java.io.IOException;
import java.io.OutputStream;
import java.net.URI;
import java.nio.file.FileSystem;
import java.nio.file.FileSystems;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;
import java.util.TreeMap;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import java.util.zip.ZipEntry;
import java.util.zip.ZipOutputStream;

public final class JrtLibraryJar {
    private static final int TARGET_MAJOR = 55;

    private JrtLibraryJar() {
    }

    public static void main(String[] args) throws IOException {
        if (args.length < 2) {
            System.err.println("usage: JrtLibraryJar OUT.jar MODULE...");
            System.exit(2);
        }
        FileSystem jrt = FileSystems.getFileSystem(URI.create("jrt:/"));
        // Entry name -> class bytes, sorted so the jar is deterministic.
        TreeMap<String, byte[]> entries = new TreeMap<>();
        int lowered = 0;
        for (int m = 1; m < args.length; m++) {
            Path root = jrt.getPath("/modules", args[m]);
            if (!Files.isDirectory(root)) {
                throw new IOException("no such module in this JDK: " + args[m]);
            }
            List<Path> classes;
            try (Stream<Path> walk = Files.walk(root)) {
                classes = walk.filter(p -> p.toString().endsWith(".class"))
                        .filter(p -> !p.getFileName().toString().equals("module-info.class"))
                        .collect(Collectors.toCollection(ArrayList::new));
            }
            for (Path p : classes) {
                byte[] b = Files.readAllBytes(p);
                if (b.length < 8 || (b[0] & 0xff) != 0xca || (b[1] & 0xff) != 0xfe
                        || (b[2] & 0xff) != 0xba || (b[3] & 0xff) != 0xbe) {
                    throw new IOException("not a class file: " + p);
                }
                int major = ((b[6] & 0xff) << 8) | (b[7] & 0xff);
                if (major > TARGET_MAJOR) {
                    b[6] = (byte) (TARGET_MAJOR >>> 8);
                    b[7] = (byte) TARGET_MAJOR;
                    lowered++;
                }
                entries.put(root.relativize(p).toString(), b);
            }
        }
        try (OutputStream out = Files.newOutputStream(Paths.get(args[0]));
                ZipOutputStream zip = new ZipOutputStream(out)) {
            for (java.util.Map.Entry<String, byte[]> e : entries.entrySet()) {
                ZipEntry ze = new ZipEntry(e.getKey());
                ze.setTime(0L);
                zip.putNextEntry(ze);
                zip.write(e.getValue());
                zip.closeEntry();
            }
        }
        System.out.println("JrtLibraryJar: " + entries.size() + " classes, "
                + lowered + " with major version lowered to " + TARGET_MAJOR);
    }
}
