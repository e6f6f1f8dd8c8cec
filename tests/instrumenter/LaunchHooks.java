// LaunchHooks — checks the launch hooks beatline-instrument put into a
// folder of classes (issue 15; driven by tests/cli/instrument_launch_test.sh).
//
//   java -Xverify:all -cp ASM_JARS:DIR LaunchHooks CP ORIG_DIR INSTR_DIR EXPECT
//
//   CP         class path (':'-separated) of the classes' dependencies
//              (android-all, the library jar of the super classes, a stub runtime)
//   ORIG_DIR   the classes as javac wrote them; INSTR_DIR the instrumenter's output
//   EXPECT     lines "internal/ClassName method descriptor hook" (hook 0: the
//              method must not call io/beatline/runtime/Launch at all)
//
// For each class named in EXPECT:
//  1. JVM: Class.forName(name, true, loader) over INSTR_DIR (parent: a
//     loader over CP) under -Xverify:all: a VerifyError or ClassFormatError
//     fails; another Throwable (android-all's static initialisers on a plain
//     JVM) must be thrown the same way by the original class.
//  2. ASM: CheckClassAdapter.verify (SimpleVerifier data flow, types resolved
//     through that loader) prints nothing.
//  3. hooks, per EXPECT line with hook N > 0: Launch.enter(I)V is called
//     exactly once, with N pushed right before it, and it is the method's
//     first call (the hooks wrap the probes Beatline.i/o); every return is
//     directly preceded by N; Launch.exit(I)V; the last exception-table
//     entry is a catch-all covering every return whose handler is
//     N; Launch.exit(I)V; athrow. Hook 0: no call to Launch.
// One line per failure; exit status 1 when any, 0 otherwise, 2 on usage errors.
import java.io.File;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.List;
import org.objectweb.asm.ClassReader;
import org.objectweb.asm.Opcodes;
import org.objectweb.asm.tree.AbstractInsnNode;
import org.objectweb.asm.tree.ClassNode;
import org.objectweb.asm.tree.InsnNode;
import org.objectweb.asm.tree.IntInsnNode;
import org.objectweb.asm.tree.LdcInsnNode;
import org.objectweb.asm.tree.MethodInsnNode;
import org.objectweb.asm.tree.MethodNode;
import org.objectweb.asm.tree.TryCatchBlockNode;
import org.objectweb.asm.util.CheckClassAdapter;

public class LaunchHooks {
    static final String LAUNCH = "io/beatline/runtime/Launch";
    static int fails;

    static void fail(String m) {
        System.out.println("FAIL " + m);
        fails++;
    }

    static URL[] urls(String cp) throws Exception {
        List<URL> l = new ArrayList<>();
        for (String p : cp.split(":")) {
            if (!p.isEmpty()) {
                l.add(new File(p).toURI().toURL());
            }
        }
        return l.toArray(new URL[0]);
    }

    static Throwable load(String name, ClassLoader l) {
        try {
            Class.forName(name.replace('/', '.'), true, l);
            return null;
        } catch (Throwable t) {
            return t;
        }
    }

    /** The int a push instruction pushes, or null. */
    static Integer pushed(AbstractInsnNode n) {
        if (n == null) {
            return null;
        }
        int op = n.getOpcode();
        if (op >= Opcodes.ICONST_M1 && op <= Opcodes.ICONST_5) {
            return op - Opcodes.ICONST_0;
        }
        if (op == Opcodes.BIPUSH || op == Opcodes.SIPUSH) {
            return ((IntInsnNode) n).operand;
        }
        if (op == Opcodes.LDC && ((LdcInsnNode) n).cst instanceof Integer) {
            return (Integer) ((LdcInsnNode) n).cst;
        }
        return null;
    }

    static AbstractInsnNode prev(AbstractInsnNode n) {
        AbstractInsnNode p = n.getPrevious();
        while (p != null && p.getOpcode() < 0) {
            p = p.getPrevious();
        }
        return p;
    }

    static AbstractInsnNode next(AbstractInsnNode n) {
        AbstractInsnNode p = n.getNext();
        while (p != null && p.getOpcode() < 0) {
            p = p.getNext();
        }
        return p;
    }

    static boolean isLaunch(AbstractInsnNode n, String name) {
        return n instanceof MethodInsnNode && ((MethodInsnNode) n).owner.equals(LAUNCH)
                && ((MethodInsnNode) n).name.equals(name) && ((MethodInsnNode) n).desc.equals("(I)V");
    }

    static void checkMethod(String cls, MethodNode m, int hook) {
        String where = cls + "." + m.name + m.desc;
        List<AbstractInsnNode> enters = new ArrayList<>();
        AbstractInsnNode firstCall = null;
        int launchCalls = 0;
        List<AbstractInsnNode> returns = new ArrayList<>();
        for (AbstractInsnNode n : m.instructions) {
            if (n instanceof MethodInsnNode) {
                if (firstCall == null) {
                    firstCall = n;
                }
                if (((MethodInsnNode) n).owner.equals(LAUNCH)) {
                    launchCalls++;
                }
                if (isLaunch(n, "enter")) {
                    enters.add(n);
                }
            }
            if (n.getOpcode() >= Opcodes.IRETURN && n.getOpcode() <= Opcodes.RETURN) {
                returns.add(n);
            }
        }
        if (hook == 0) {
            if (launchCalls != 0) {
                fail(where + ": calls Launch but should not");
            }
            return;
        }
        if (enters.size() != 1) {
            fail(where + ": " + enters.size() + " calls of Launch.enter, want 1");
            return;
        }
        Integer h = pushed(prev(enters.get(0)));
        if (h == null || h != hook) {
            fail(where + ": Launch.enter(" + h + "), want " + hook);
        }
        if (firstCall != enters.get(0)) {
            fail(where + ": Launch.enter is not the first call");
        }
        for (AbstractInsnNode r : returns) {
            AbstractInsnNode p = prev(r);
            if (!isLaunch(p, "exit") || pushed(prev(p)) == null || pushed(prev(p)) != hook) {
                fail(where + ": a return not preceded by Launch.exit(" + hook + ")");
            }
        }
        if (m.tryCatchBlocks.isEmpty()) {
            fail(where + ": no catch-all handler");
            return;
        }
        TryCatchBlockNode last = m.tryCatchBlocks.get(m.tryCatchBlocks.size() - 1);
        AbstractInsnNode hp = next(last.handler);
        AbstractInsnNode hc = next(hp);
        AbstractInsnNode ht = hc == null ? null : next(hc);
        if (last.type != null || pushed(hp) == null || pushed(hp) != hook || !isLaunch(hc, "exit")
                || ht == null || ht.getOpcode() != Opcodes.ATHROW) {
            fail(where + ": the last handler is not a catch-all calling Launch.exit(" + hook + ") then athrow");
        }
        int s = m.instructions.indexOf(last.start);
        int e = m.instructions.indexOf(last.end);
        for (AbstractInsnNode r : returns) {
            int i = m.instructions.indexOf(r);
            if (i < s || i >= e) {
                fail(where + ": a return outside the catch-all range");
            }
        }
    }

    public static void main(String[] a) throws Exception {
        if (a.length != 4) {
            System.err.println("usage: LaunchHooks CP ORIG_DIR INSTR_DIR EXPECT");
            System.exit(2);
        }
        URLClassLoader deps = new URLClassLoader(urls(a[0]), ClassLoader.getPlatformClassLoader());
        URLClassLoader orig = new URLClassLoader(new URL[] {new File(a[1]).toURI().toURL()}, deps);
        URLClassLoader instr = new URLClassLoader(new URL[] {new File(a[2]).toURI().toURL()}, deps);
        List<String> lines = Files.readAllLines(new File(a[3]).toPath());
        List<String> seen = new ArrayList<>();
        int methods = 0;
        for (String line : lines) {
            String[] f = line.trim().split("\\s+");
            if (f.length != 4) {
                continue;
            }
            String cls = f[0];
            byte[] bytes = Files.readAllBytes(new File(a[2], cls + ".class").toPath());
            if (!seen.contains(cls)) {
                seen.add(cls);
                Throwable ti = load(cls, instr);
                if (ti instanceof VerifyError || ti instanceof ClassFormatError) {
                    fail(cls + ": JVM: " + ti);
                } else if (ti != null) {
                    Throwable to = load(cls, orig);
                    if (to == null || to.getClass() != ti.getClass()) {
                        fail(cls + ": JVM: instrumented throws " + ti + ", original " + to);
                    }
                }
                StringWriter sw = new StringWriter();
                CheckClassAdapter.verify(new ClassReader(bytes), instr, false, new PrintWriter(sw));
                if (!sw.toString().isEmpty()) {
                    fail(cls + ": ASM: " + sw);
                }
            }
            ClassNode cn = new ClassNode();
            new ClassReader(bytes).accept(cn, 0);
            MethodNode found = null;
            for (MethodNode m : cn.methods) {
                if (m.name.equals(f[1]) && m.desc.equals(f[2])) {
                    found = m;
                }
            }
            if (found == null) {
                fail(cls + "." + f[1] + f[2] + ": no such method");
                continue;
            }
            checkMethod(cls, found, Integer.parseInt(f[3]));
            methods++;
        }
        System.out.println("LaunchHooks: " + seen.size() + " classes, " + methods + " methods, " + fails + " failures");
        System.exit(fails == 0 ? 0 : 1);
    }
}
