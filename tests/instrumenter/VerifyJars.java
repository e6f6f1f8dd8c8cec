// VerifyJars — checks every class of an instrumented jar against the original
// (the instrumenter verification test, issue 4; driven by verify_jars_test.sh).
//
//   java -Xverify:all -cp ASM_JARS:DIR VerifyJars --runtime-class internal/Name \
//        --support CP ORIG.jar INSTR.jar METHOD_IDS
//
//   CP          class path (':'-separated) of the jar's dependencies plus the
//               stub runtime; shared by both loaders below.
//   ORIG.jar    the jar as shipped; INSTR.jar what the instrumenter made of
//               it with --no-skip-trivial; METHOD_IDS the method-ID file it
//               wrote (schema/method-id-file.md).
//
// Every class entry of ORIG.jar (outside META-INF/, module-info excluded) is
// checked four ways; each check prints one line per failure, naming the
// class (and method) and the message:
//
//  1. presence: INSTR.jar has the same class entries.
//  2. JVM: Class.forName(name, true, loader) — load, verify (this JVM runs
//     with -Xverify:all), link and initialize — in a loader over INSTR.jar and
//     in a separate loader over ORIG.jar, both with parent = a loader over CP.
//     A class whose instrumented version throws where the original does not,
//     or throws a different Throwable class, is a failure. A class whose
//     original fails the same way (optional dependency absent from Debian,
//     ...) is listed as "fails in both" and not counted.
//  3. ASM: CheckClassAdapter.verify (Debian libasm-java: SimpleVerifier
//     data-flow analysis of each method, assignability resolved through the
//     instrumented loader). Must print nothing. If it reports an error for
//     the original class too — SimpleVerifier resolving a type that no Debian
//     jar provides, or its type model being weaker than the JVM's — the
//     instrumented error messages (instruction indexes removed) must all
//     appear in the original's report; such classes are listed, not counted.
//  4. probes: every method with code in the original has exactly one line in
//     METHOD_IDS (ids unique, 0..8388607); in the instrumented class it calls
//     RUNTIME.i(I)V once with that id as a constant, every RUNTIME probe in it
//     pushes that id, every return instruction is directly preceded by
//     RUNTIME.o(I)V, and the last exception-table entry is a catch-all whose
//     range covers every return and whose handler calls o(id) before its
//     athrow. (A tool that changed nothing would
//     pass checks 2 and 3; this one makes the test fail for it.)
//
// Exit status: 0 when every count of failures is 0, 1 otherwise, 2 on usage
// errors or unreadable input. Deterministic: classes are visited in sorted
// order.
import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Enumeration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.zip.ZipEntry;
import java.util.zip.ZipFile;

import org.objectweb.asm.ClassReader;
import org.objectweb.asm.Opcodes;
import org.objectweb.asm.tree.AbstractInsnNode;
import org.objectweb.asm.tree.ClassNode;
import org.objectweb.asm.tree.IntInsnNode;
import org.objectweb.asm.tree.LdcInsnNode;
import org.objectweb.asm.tree.MethodInsnNode;
import org.objectweb.asm.tree.MethodNode;
import org.objectweb.asm.tree.TryCatchBlockNode;
import org.objectweb.asm.util.CheckClassAdapter;

public final class VerifyJars {
    private static final int MAX_ID = 8388607;
    private static String runtime = "io/beatline/runtime/Beatline";

    private final List<String> failures = new ArrayList<>();
    private final List<String> notes = new ArrayList<>();
    private boolean hasClinit;
    private int nPresence, nJvm, nAsm, nProbe, nJvmBoth, nAsmBoth, nMethods;

    public static void main(String[] args) throws Exception {
        String support = "";
        List<String> pos = new ArrayList<>();
        for (int i = 0; i < args.length; i++) {
            if (args[i].equals("--runtime-class") && i + 1 < args.length) runtime = args[++i];
            else if (args[i].equals("--support") && i + 1 < args.length) support = args[++i];
            else pos.add(args[i]);
        }
        if (pos.size() != 3) {
            System.err.println("usage: VerifyJars [--runtime-class N] [--support CP] ORIG.jar INSTR.jar METHOD_IDS");
            System.exit(2);
        }
        System.exit(new VerifyJars().run(support, pos.get(0), pos.get(1), pos.get(2)));
    }

    private static Map<String, byte[]> readClasses(String jar) throws IOException {
        Map<String, byte[]> m = new TreeMap<>();
        try (ZipFile z = new ZipFile(jar)) {
            Enumeration<? extends ZipEntry> en = z.entries();
            while (en.hasMoreElements()) {
                ZipEntry e = en.nextElement();
                String n = e.getName();
                if (e.isDirectory() || !n.endsWith(".class") || n.startsWith("META-INF/")
                    || n.endsWith("module-info.class"))
                    continue;
                try (InputStream in = z.getInputStream(e)) {
                    m.put(n.substring(0, n.length() - 6), in.readAllBytes());
                }
            }
        }
        return m;
    }

    /** "a/b/C name desc" (slashes) -> id, from the method-ID file. */
    private Map<String, Integer> readIds(String file) throws IOException {
        Map<String, Integer> ids = new HashMap<>();
        Map<Integer, String> byId = new HashMap<>();
        int lineNo = 0;
        for (String raw : Files.readAllLines(Paths.get(file), StandardCharsets.UTF_8)) {
            lineNo++;
            String line = raw.trim();
            if (line.isEmpty() || line.startsWith("#")) continue;
            String[] f = line.split(",", 3);
            String[] w = f.length == 3 ? f[2].split("[ \t]+") : new String[0];
            if (f.length != 3 || w.length < 2 || w.length > 3) {
                fail("method-ids " + file + ":" + lineNo + ": malformed line: " + raw);
                continue;
            }
            int id;
            try {
                id = Integer.parseInt(f[0]);
                Integer.parseInt(f[1]);
            } catch (NumberFormatException e) {
                fail("method-ids " + file + ":" + lineNo + ": bad number: " + raw);
                continue;
            }
            if (id < 0 || id > MAX_ID) fail("method-ids " + file + ":" + lineNo + ": id out of range: " + raw);
            String key = w[0].replace('.', '/') + " " + w[1] + " " + (w.length == 3 ? w[2].replace('.', '/') : "");
            if (byId.put(id, key) != null) fail("method-ids " + file + ":" + lineNo + ": duplicate id " + id);
            if (ids.put(key, id) != null) fail("method-ids " + file + ":" + lineNo + ": method listed twice: " + key);
        }
        return ids;
    }

    private void fail(String msg) {
        failures.add(msg);
    }

    private static URL[] urls(String cp) throws IOException {
        List<URL> u = new ArrayList<>();
        for (String p : cp.split(File.pathSeparator))
            if (!p.isEmpty()) u.add(new File(p).toURI().toURL());
        return u.toArray(new URL[0]);
    }

    private static Throwable load(String binaryName, ClassLoader loader) {
        try {
            Class.forName(binaryName, true, loader);
            return null;
        } catch (Throwable t) {
            return t;
        }
    }

    private static String describe(Throwable t) {
        StringBuilder sb = new StringBuilder(String.valueOf(t));
        for (Throwable c = t.getCause(); c != null && c != c.getCause(); c = c.getCause())
            sb.append(" / caused by ").append(c);
        return sb.toString();
    }

    private static final Pattern ANALYZER = Pattern.compile(
        "^org\\.objectweb\\.asm\\.tree\\.analysis\\.AnalyzerException: (.*)$", Pattern.MULTILINE);

    /** CheckClassAdapter.verify's report; "" when the class passes. */
    private static String asmVerify(byte[] bytes, ClassLoader loader) {
        StringWriter sw = new StringWriter();
        try (PrintWriter pw = new PrintWriter(sw)) {
            CheckClassAdapter.verify(new ClassReader(bytes), loader, false, pw);
        } catch (Throwable t) {
            return "exception from CheckClassAdapter.verify: " + describe(t);
        }
        return sw.toString();
    }

    /** The analyzer's messages without instruction indexes (they move when probes are added). */
    private static List<String> asmMessages(String report) {
        List<String> out = new ArrayList<>();
        Matcher m = ANALYZER.matcher(report);
        while (m.find()) out.add(m.group(1).replaceAll("Error at instruction \\d+", "Error at instruction N"));
        if (out.isEmpty() && !report.isEmpty()) out.add(report.split("\n", 2)[0]);
        Collections.sort(out);
        return out;
    }

    private int run(String support, String origJar, String instrJar, String idFile) throws Exception {
        long t0 = System.nanoTime();
        Map<String, byte[]> orig = readClasses(origJar), instr = readClasses(instrJar);
        Map<String, Integer> ids = readIds(idFile);
        String jarName = new File(origJar).getName();

        ClassLoader parent = new URLClassLoader(urls(support), ClassLoader.getPlatformClassLoader());
        URLClassLoader origLoader = new URLClassLoader(urls(origJar), parent);
        URLClassLoader instrLoader = new URLClassLoader(urls(instrJar), parent);

        for (String name : instr.keySet())
            if (!orig.containsKey(name)) { nPresence++; fail("presence " + name + ": class not in the original jar"); }
        for (Map.Entry<String, byte[]> e : orig.entrySet()) {
            String name = e.getKey();
            byte[] ib = instr.get(name);
            if (ib == null) {
                nPresence++;
                fail("presence " + name + ": missing from the instrumented jar");
                continue;
            }
            // 2. JVM: load, verify, initialize.
            String bin = name.replace('/', '.');
            Throwable te = load(bin, instrLoader);
            if (te != null) {
                Throwable oe = load(bin, origLoader);
                if (oe == null) {
                    nJvm++;
                    fail("jvm " + bin + ": " + describe(te));
                } else if (oe.getClass() != te.getClass()) {
                    nJvm++;
                    fail("jvm " + bin + ": " + describe(te) + " (the original fails differently: " + describe(oe) + ")");
                } else {
                    nJvmBoth++;
                    notes.add("jvm " + bin + ": fails in both: " + describe(oe));
                }
            } else {
                load(bin, origLoader); // keep both loaders' initialization order alike
            }
            // 3. ASM analyzer.
            String ir = asmVerify(ib, instrLoader);
            if (!ir.isEmpty()) {
                String or = asmVerify(e.getValue(), origLoader);
                List<String> im = asmMessages(ir), om = asmMessages(or);
                List<String> extra = new ArrayList<>(im);
                for (String s : om) extra.remove(s);
                if (or.isEmpty() || !extra.isEmpty()) {
                    nAsm++;
                    fail("asm " + bin + ": " + String.join(" | ", or.isEmpty() ? im : extra));
                } else {
                    nAsmBoth++;
                    notes.add("asm " + bin + ": original fails the same way: " + String.join(" | ", om));
                }
            }
            // 4. Probes and method ids.
            checkProbes(name, e.getValue(), ib, ids);
        }
        long enters = -1, exits = -1;
        try {
            Class<?> stub = Class.forName(runtime.replace('/', '.'), false, parent);
            enters = ((java.util.concurrent.atomic.AtomicLong) stub.getField("ENTERS").get(null)).get();
            exits = ((java.util.concurrent.atomic.AtomicLong) stub.getField("EXITS").get(null)).get();
        } catch (ReflectiveOperationException | ClassCastException ex) {
            fail("stub runtime " + runtime + " not readable: " + ex);
        }
        // A class initializer is a method with code, so it runs probes.
        if (enters == 0 && hasClinit) fail("no probe ran while the classes were initialized (enters = 0)");

        for (String n : notes) System.out.println("  note: " + n);
        for (String f : failures) System.out.println("  FAILURE: " + f);
        System.out.printf("%s: %d classes, %d methods with code; failures: presence %d, jvm %d, asm %d,"
                + " probes %d (not counted: jvm fails in both %d, asm fails in both %d);"
                + " probe calls during initialization: %d enters, %d exits; %.1f s%n",
            jarName, orig.size(), nMethods, nPresence, nJvm, nAsm, nProbe, nJvmBoth, nAsmBoth,
            enters, exits, (System.nanoTime() - t0) / 1e9);
        return failures.isEmpty() ? 0 : 1;
    }

    private static Integer pushedInt(AbstractInsnNode n) {
        if (n == null) return null;
        int op = n.getOpcode();
        if (op >= Opcodes.ICONST_M1 && op <= Opcodes.ICONST_5) return op - Opcodes.ICONST_0;
        if (op == Opcodes.BIPUSH || op == Opcodes.SIPUSH) return ((IntInsnNode) n).operand;
        if (op == Opcodes.LDC && ((LdcInsnNode) n).cst instanceof Integer) return (Integer) ((LdcInsnNode) n).cst;
        return null;
    }

    private static AbstractInsnNode prevReal(AbstractInsnNode n) {
        for (n = n.getPrevious(); n != null && n.getOpcode() < 0; n = n.getPrevious()) {}
        return n;
    }

    private static AbstractInsnNode nextReal(AbstractInsnNode n) {
        for (; n != null && n.getOpcode() < 0; n = n.getNext()) {}
        return n;
    }

    private boolean isProbe(AbstractInsnNode n, String which) {
        if (n == null || n.getOpcode() != Opcodes.INVOKESTATIC) return false;
        MethodInsnNode m = (MethodInsnNode) n;
        return m.owner.equals(runtime) && m.desc.equals("(I)V") && (which == null || m.name.equals(which));
    }

    private void probeFail(String where, String msg) {
        nProbe++;
        fail("probes " + where + ": " + msg);
    }

    private void checkProbes(String name, byte[] ob, byte[] ib, Map<String, Integer> ids) {
        ClassNode oc = new ClassNode(), ic = new ClassNode();
        new ClassReader(ob).accept(oc, ClassReader.SKIP_FRAMES);
        new ClassReader(ib).accept(ic, ClassReader.SKIP_FRAMES);
        Map<String, MethodNode> im = new HashMap<>();
        for (MethodNode m : ic.methods) im.put(m.name + m.desc, m);
        methods:
        for (MethodNode om : oc.methods) {
            if ((om.access & (Opcodes.ACC_ABSTRACT | Opcodes.ACC_NATIVE)) != 0) continue;
            nMethods++;
            if (om.name.equals("<clinit>")) hasClinit = true;
            String where = name.replace('/', '.') + "." + om.name + om.desc;
            Integer id = ids.get(name + " " + om.name + " " + om.desc);
            MethodNode mn = im.get(om.name + om.desc);
            if (id == null) { probeFail(where, "no line in the method-ID file"); continue; }
            if (mn == null) { probeFail(where, "method missing from the instrumented class"); continue; }
            int enters = 0, returns = 0;
            for (AbstractInsnNode n = mn.instructions.getFirst(); n != null; n = n.getNext()) {
                if (isProbe(n, null)) {
                    Integer v = pushedInt(prevReal(n));
                    if (v == null || v.intValue() != id) {
                        probeFail(where, ((MethodInsnNode) n).name + "() probe with id " + v + ", expected " + id);
                        continue methods;
                    }
                    if (isProbe(n, "i")) enters++;
                }
                int op = n.getOpcode();
                if (op >= Opcodes.IRETURN && op <= Opcodes.RETURN) {
                    returns++;
                    if (!isProbe(prevReal(n), "o")) {
                        probeFail(where, "a return not preceded by o(" + id + ")");
                        continue methods;
                    }
                }
            }
            if (enters != 1) { probeFail(where, enters + " calls of i(" + id + "), expected 1"); continue; }
            // The catch-all is the last exception-table entry, so the method's
            // own handlers take precedence; it covers every return.
            boolean handler = false;
            TryCatchBlockNode last = mn.tryCatchBlocks.isEmpty() ? null
                : mn.tryCatchBlocks.get(mn.tryCatchBlocks.size() - 1);
            if (last != null && last.type == null) {
                for (AbstractInsnNode n = nextReal(last.handler); n != null && n.getOpcode() != Opcodes.ATHROW;
                     n = nextReal(n.getNext())) {
                    if (isProbe(n, "o")) { handler = true; break; }
                    if (n.getOpcode() == Opcodes.GOTO || n.getOpcode() >= Opcodes.IRETURN && n.getOpcode() <= Opcodes.RETURN) break;
                }
                int from = mn.instructions.indexOf(last.start), to = mn.instructions.indexOf(last.end);
                for (AbstractInsnNode n = mn.instructions.getFirst(); handler && n != null; n = n.getNext()) {
                    int op = n.getOpcode(), at = mn.instructions.indexOf(n);
                    if (op >= Opcodes.IRETURN && op <= Opcodes.RETURN && (at < from || at >= to)) {
                        probeFail(where, "a return outside the range of the catch-all handler");
                        continue methods;
                    }
                }
            }
            if (!handler) probeFail(where, "the last exception-table entry is not a catch-all calling o(" + id + ") before athrow");
        }
    }
}
