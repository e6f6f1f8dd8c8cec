// AsmMatrixInstrumenter — an ASM-based method-trace instrumenter built the
// way Tencent Matrix's trace plugin builds its own (MethodCollector +
// MethodTracer): ClassReader -> ClassVisitor -> AdviceAdapter whose
// onMethodEnter/onMethodExit insert `ldc id; invokestatic RUNTIME.i(I)V` /
// `... o(I)V`, ClassWriter with COMPUTE_MAXS, no exception handler. Used as
// the anchor of bench/instrument-vs-asm.sh, and (with --mode full) as the
// reference instrumenter the Java-side tests of beatline-instrument were
// developed against (tests/instrumenter/).
//
// Compiled at run time with javac against Debian's libasm-java
// (/usr/share/java/asm.jar, asm-tree.jar, asm-commons.jar); never committed
// as a class file.
//
// Command line (the one of beatline-instrument, so scripts can swap tools):
//
//   java -cp ASM_JARS:DIR AsmMatrixInstrumenter [options] INPUT... -o OUTPUT --method-ids FILE
//
//   INPUT     a jar (then OUTPUT is a jar) or a directory of classes (then
//             OUTPUT is a directory); several inputs of one kind are merged.
//   --runtime-class internal/Name   class with static i(I)V and o(I)V
//             (default io/beatline/runtime/Beatline)
//   --no-skip-trivial   also instrument methods that call nothing
//   -j N      worker threads (default 2); Matrix runs its passes on a pool
//   --classpath PATH    classes for frame computation (--mode full only)
//   --mode matrix       (default) Matrix: exit probe before every return and
//                        athrow, COMPUTE_MAXS, no handler
//          full         Beatline's probe semantics: exit probe before every
//                        return, plus a catch-all handler covering the body
//                        (after super()/this() in constructors) that calls
//                        o(id) and rethrows; COMPUTE_FRAMES
//          broken-no-exit   like full but without the exit probe before
//                        returns (a deliberately broken tool for the tests)
//          broken-maxs  like matrix but with the original max_stack kept
//                        (code that fails verification)
//          broken-handler-first  like full but with the catch-all first in
//                        the exception table, so it shadows the method's own
//                        handlers (verifies, but changes behaviour)
//
// Methods (pass 1, Matrix's MethodCollector): every method with code gets the
// next methodId from 1, in input-entry order then method order, unless it is
// trivial (no invoke instruction: empty methods, getters, setters and other
// methods that call nothing; Matrix's isEmptyMethod/isGetSetMethod/
// isSingleMethod) and --no-skip-trivial is not given. The method-ID file has
// Matrix's line format (schema/method-id-file.md): `id,access,cls name desc`
// with '.' for '/' in the class name and descriptor.
//
// Pass 2 (Matrix's MethodTracer) rewrites each class on the pool; outputs are
// written in input order, so the output is deterministic for any -j.
// Exit status: 0 on success, 1 on an unreadable input or class (message on
// stderr naming the entry), 2 on a usage error.
import java.io.ByteArrayOutputStream;
import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.PrintWriter;
import java.io.BufferedWriter;
import java.io.OutputStreamWriter;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Enumeration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import java.util.zip.ZipEntry;
import java.util.zip.ZipFile;
import java.util.zip.ZipOutputStream;

import org.objectweb.asm.ClassReader;
import org.objectweb.asm.ClassVisitor;
import org.objectweb.asm.ClassWriter;
import org.objectweb.asm.Label;
import org.objectweb.asm.MethodVisitor;
import org.objectweb.asm.Opcodes;
import org.objectweb.asm.commons.AdviceAdapter;
import org.objectweb.asm.tree.AbstractInsnNode;
import org.objectweb.asm.tree.ClassNode;
import org.objectweb.asm.tree.MethodNode;

public final class AsmMatrixInstrumenter {
    private enum Mode { MATRIX, FULL, BROKEN_NO_EXIT, BROKEN_MAXS, BROKEN_HANDLER_FIRST }

    /** One input entry: a class (bytes, later rewritten) or a file copied as is. */
    private static final class Entry {
        final String name;
        final byte[] bytes;
        byte[] out;
        String className;
        List<String[]> methods; // per method in class order: {name, desc, access, id or null}
        Entry(String name, byte[] bytes) { this.name = name; this.bytes = bytes; }
        boolean isClass() {
            return name.endsWith(".class") && !name.startsWith("META-INF/")
                && !name.endsWith("module-info.class");
        }
    }

    private static String runtimeClass = "io/beatline/runtime/Beatline";
    private static boolean skipTrivial = true;
    private static Mode mode = Mode.MATRIX;
    private static ClassLoader frameLoader;

    public static void main(String[] args) throws Exception {
        List<String> inputs = new ArrayList<>();
        String output = null, idFile = null, classpath = "";
        int threads = 2;
        for (int i = 0; i < args.length; i++) {
            String a = args[i];
            boolean hasNext = i + 1 < args.length;
            if (a.equals("-o") && hasNext) output = args[++i];
            else if (a.equals("--method-ids") && hasNext) idFile = args[++i];
            else if (a.equals("--runtime-class") && hasNext) runtimeClass = args[++i];
            else if (a.equals("--classpath") && hasNext) classpath = args[++i];
            else if (a.equals("-j") && hasNext) threads = Integer.parseInt(args[++i]);
            else if (a.equals("--no-skip-trivial")) skipTrivial = false;
            else if (a.equals("--mode") && hasNext) {
                String m = args[++i];
                switch (m) {
                    case "matrix": mode = Mode.MATRIX; break;
                    case "full": mode = Mode.FULL; break;
                    case "broken-no-exit": mode = Mode.BROKEN_NO_EXIT; break;
                    case "broken-maxs": mode = Mode.BROKEN_MAXS; break;
                    case "broken-handler-first": mode = Mode.BROKEN_HANDLER_FIRST; break;
                    default: usage("unknown mode " + m);
                }
            } else if (a.startsWith("-")) usage("unknown option " + a);
            else inputs.add(a);
        }
        if (inputs.isEmpty() || output == null || idFile == null || threads < 1)
            usage("need INPUT..., -o OUTPUT and --method-ids FILE");
        boolean dirMode = new File(inputs.get(0)).isDirectory();

        List<Entry> entries = new ArrayList<>();
        List<URL> urls = new ArrayList<>();
        for (String in : inputs) {
            File f = new File(in);
            if (f.isDirectory() != dirMode) usage("mixing jar and directory inputs");
            urls.add(f.toURI().toURL());
            if (dirMode) readDir(f.toPath(), entries);
            else readJar(f, entries);
        }
        for (String p : classpath.split(File.pathSeparator))
            if (!p.isEmpty()) urls.add(new File(p).toURI().toURL());
        frameLoader = new URLClassLoader(urls.toArray(new URL[0]),
                                         ClassLoader.getPlatformClassLoader());

        ExecutorService pool = Executors.newFixedThreadPool(threads);
        try {
            // Pass 1: collect methods (parallel), then number them in order.
            runAll(pool, entries, AsmMatrixInstrumenter::collect);
            int next = 1;
            StringBuilder ids = new StringBuilder();
            for (Entry e : entries) {
                if (e.methods == null) continue;
                for (String[] m : e.methods) {
                    if (m[3] == null) continue;
                    m[3] = Integer.toString(next);
                    ids.append(next).append(',').append(m[2]).append(',')
                       .append(e.className.replace('/', '.')).append(' ').append(m[0])
                       .append(' ').append(m[1].replace('/', '.')).append('\n');
                    next++;
                }
            }
            // Pass 2: rewrite (parallel).
            runAll(pool, entries, AsmMatrixInstrumenter::trace);
            Files.write(Paths.get(idFile), ids.toString().getBytes(StandardCharsets.UTF_8));
        } finally {
            pool.shutdown();
        }
        if (dirMode) writeDir(Paths.get(output), entries);
        else writeJar(new File(output), entries);
    }

    private static void usage(String why) {
        System.err.println("AsmMatrixInstrumenter: " + why);
        System.err.println("usage: AsmMatrixInstrumenter [--mode matrix|full|broken-no-exit|broken-maxs|broken-handler-first]"
            + " [--runtime-class N] [--no-skip-trivial] [-j N] [--classpath P]"
            + " INPUT... -o OUTPUT --method-ids FILE");
        System.exit(2);
    }

    private interface Job { void run(Entry e) throws Exception; }

    private static void runAll(ExecutorService pool, List<Entry> entries, Job job) throws Exception {
        List<Future<?>> fs = new ArrayList<>();
        List<Entry> classes = new ArrayList<>();
        for (Entry e : entries) {
            if (!e.isClass()) continue;
            classes.add(e);
            fs.add(pool.submit(() -> { job.run(e); return null; }));
        }
        for (int i = 0; i < fs.size(); i++) {
            try {
                fs.get(i).get();
            } catch (java.util.concurrent.ExecutionException ex) {
                System.err.println("AsmMatrixInstrumenter: " + classes.get(i).name + ": " + ex.getCause());
                System.exit(1);
            }
        }
    }

    private static boolean trivial(MethodNode mn) {
        for (AbstractInsnNode in = mn.instructions.getFirst(); in != null; in = in.getNext()) {
            int t = in.getType();
            if (t == AbstractInsnNode.METHOD_INSN || t == AbstractInsnNode.INVOKE_DYNAMIC_INSN)
                return false;
        }
        return true;
    }

    private static void collect(Entry e) {
        ClassNode cn = new ClassNode();
        new ClassReader(e.bytes).accept(cn, 0);
        e.className = cn.name;
        List<String[]> ms = new ArrayList<>();
        for (MethodNode mn : cn.methods) {
            boolean hasCode = (mn.access & (Opcodes.ACC_ABSTRACT | Opcodes.ACC_NATIVE)) == 0;
            boolean take = hasCode && !(skipTrivial && trivial(mn));
            ms.add(new String[] {mn.name, mn.desc, Integer.toString(mn.access), take ? "" : null});
        }
        e.methods = ms;
    }

    private static void trace(Entry e) {
        ClassReader cr = new ClassReader(e.bytes);
        boolean full = mode == Mode.FULL || mode == Mode.BROKEN_NO_EXIT || mode == Mode.BROKEN_HANDLER_FIRST;
        int flags = mode == Mode.BROKEN_MAXS ? 0
                  : mode == Mode.MATRIX ? ClassWriter.COMPUTE_MAXS : ClassWriter.COMPUTE_FRAMES;
        ClassWriter cw = new ClassWriter(cr, flags) {
            @Override protected ClassLoader getClassLoader() { return frameLoader; }
        };
        Map<String, Integer> ids = new HashMap<>();
        for (String[] m : e.methods)
            if (m[3] != null) ids.put(m[0] + m[1], Integer.valueOf(m[3]));
        // EXPAND_FRAMES: AdviceAdapter needs expanded frames when frames are kept.
        int readFlags = full ? ClassReader.SKIP_FRAMES
                                                                         : ClassReader.EXPAND_FRAMES;
        cr.accept(new ClassVisitor(Opcodes.ASM9, cw) {
            @Override
            public MethodVisitor visitMethod(int access, String name, String desc, String sig,
                                             String[] exc) {
                MethodVisitor mv = super.visitMethod(access, name, desc, sig, exc);
                Integer id = ids.get(name + desc);
                if (id == null) return mv;
                return new Probes(mv, access, name, desc, id);
            }
        }, readFlags);
        e.out = cw.toByteArray();
    }

    private static final class Probes extends AdviceAdapter {
        private final int id;
        private final Label start = new Label(), end = new Label(), handler = new Label();
        private boolean entered;

        Probes(MethodVisitor mv, int access, String name, String desc, int id) {
            super(Opcodes.ASM9, mv, access, name, desc);
            this.id = id;
        }

        private void call(String m) {
            push(id);
            mv.visitMethodInsn(INVOKESTATIC, runtimeClass, m, "(I)V", false);
        }

        @Override protected void onMethodEnter() {
            call("i");
            if (mode == Mode.BROKEN_HANDLER_FIRST) {
                mv.visitTryCatchBlock(start, end, handler, null);
                mv.visitLabel(start);
                entered = true;
            } else if (mode == Mode.FULL || mode == Mode.BROKEN_NO_EXIT) {
                // The catch-all is registered in visitMaxs, after every
                // original try/catch block (visitCode comes before them), so
                // that it comes last in the exception table.
                mv.visitLabel(start);
                entered = true;
            }
        }

        @Override protected void onMethodExit(int opcode) {
            boolean matrixLike = mode == Mode.MATRIX || mode == Mode.BROKEN_MAXS;
            boolean fullExit = mode == Mode.FULL || mode == Mode.BROKEN_HANDLER_FIRST;
            if (matrixLike || (fullExit && opcode != ATHROW)) call("o");
        }

        @Override public void visitMaxs(int maxStack, int maxLocals) {
            if (entered) {
                if (mode != Mode.BROKEN_HANDLER_FIRST) mv.visitTryCatchBlock(start, end, handler, null);
                mv.visitLabel(end);
                mv.visitLabel(handler);
                call("o");
                mv.visitInsn(ATHROW);
            }
            super.visitMaxs(maxStack, maxLocals);
        }
    }

    private static byte[] readAll(InputStream in) throws IOException {
        return in.readAllBytes();
    }

    private static void readJar(File f, List<Entry> out) throws IOException {
        try (ZipFile z = new ZipFile(f)) {
            Enumeration<? extends ZipEntry> en = z.entries();
            while (en.hasMoreElements()) {
                ZipEntry ze = en.nextElement();
                if (ze.isDirectory()) continue;
                try (InputStream in = z.getInputStream(ze)) {
                    out.add(new Entry(ze.getName(), readAll(in)));
                }
            }
        }
    }

    private static void readDir(Path root, List<Entry> out) throws IOException {
        List<Path> files;
        try (Stream<Path> s = Files.walk(root)) {
            files = s.filter(Files::isRegularFile).sorted().collect(Collectors.toList());
        }
        for (Path p : files)
            out.add(new Entry(root.relativize(p).toString().replace(File.separatorChar, '/'),
                              Files.readAllBytes(p)));
    }

    private static void writeJar(File f, List<Entry> entries) throws IOException {
        try (OutputStream fo = Files.newOutputStream(f.toPath());
             ZipOutputStream zo = new ZipOutputStream(new java.io.BufferedOutputStream(fo, 1 << 16))) {
            java.util.Set<String> seen = new java.util.HashSet<>();
            for (Entry e : entries) {
                if (!seen.add(e.name)) continue;
                zo.putNextEntry(new ZipEntry(e.name));
                zo.write(e.out != null ? e.out : e.bytes);
                zo.closeEntry();
            }
        }
    }

    private static void writeDir(Path root, List<Entry> entries) throws IOException {
        for (Entry e : entries) {
            Path p = root.resolve(e.name);
            Files.createDirectories(p.getParent());
            Files.write(p, e.out != null ? e.out : e.bytes);
        }
    }
}
