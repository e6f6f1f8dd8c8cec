// AsmCoreBench — the anchor of bench/probe-core-bench.sh: the same in-memory
// work as bench_probe.c done with ASM the way Matrix's trace plugin does it
// (ClassReader -> AdviceAdapter inserting `push id; invokestatic i/o` at
// entry and before every return/athrow -> ClassWriter with COMPUTE_MAXS, no
// catch-all handler, frames expanded and re-emitted by ASM). Every class of
// the jar is read into memory once; each round rewrites all of them on one
// thread; JIT warm-up rounds are not counted. Prints best and median round.
//
//   java -cp asm.jar:asm-tree.jar:asm-commons.jar:DIR AsmCoreBench JAR [ROUNDS]
import java.io.*;
import java.util.*;
import java.util.zip.*;
import org.objectweb.asm.*;
import org.objectweb.asm.commons.AdviceAdapter;

public class AsmCoreBench {
    static final String RT = "io/beatline/runtime/Beatline";
    static int next;

    static byte[] instrument(byte[] b) {
        ClassReader cr = new ClassReader(b);
        ClassWriter cw = new ClassWriter(ClassWriter.COMPUTE_MAXS);
        cr.accept(new ClassVisitor(Opcodes.ASM9, cw) {
            @Override
            public MethodVisitor visitMethod(int acc, String name, String desc, String sig, String[] ex) {
                MethodVisitor mv = super.visitMethod(acc, name, desc, sig, ex);
                if ((acc & (Opcodes.ACC_ABSTRACT | Opcodes.ACC_NATIVE)) != 0) return mv;
                final int id = (next++) & 0x7fffff;
                // probes go straight to the next visitor (mv), outside AdviceAdapter's
                // constructor stack tracking, as Matrix's MethodTracer does
                return new AdviceAdapter(Opcodes.ASM9, mv, acc, name, desc) {
                    void probe(String m) {
                        if (id <= 5) mv.visitInsn(ICONST_0 + id);
                        else if (id <= 127) mv.visitIntInsn(BIPUSH, id);
                        else if (id <= 32767) mv.visitIntInsn(SIPUSH, id);
                        else mv.visitLdcInsn(id);
                        mv.visitMethodInsn(INVOKESTATIC, RT, m, "(I)V", false);
                    }
                    @Override protected void onMethodEnter() { probe("i"); }
                    @Override protected void onMethodExit(int op) { probe("o"); }
                };
            }
        }, ClassReader.EXPAND_FRAMES);
        return cw.toByteArray();
    }

    public static void main(String[] a) throws IOException {
        int rounds = a.length > 1 ? Integer.parseInt(a[1]) : 10;
        List<byte[]> cls = new ArrayList<>();
        long bytes = 0;
        try (ZipFile z = new ZipFile(a[0])) {
            for (Enumeration<? extends ZipEntry> e = z.entries(); e.hasMoreElements();) {
                ZipEntry en = e.nextElement();
                if (!en.getName().endsWith(".class") || en.getName().startsWith("META-INF/")) continue;
                byte[] b = z.getInputStream(en).readAllBytes();
                cls.add(b);
                bytes += b.length;
            }
        }
        for (int w = 0; w < 5; w++) for (byte[] b : cls) instrument(b); // JIT warm-up
        double[] t = new double[rounds];
        long out = 0;
        for (int r = 0; r < rounds; r++) {
            next = 1;
            out = 0;
            long t0 = System.nanoTime();
            for (byte[] b : cls) out += instrument(b).length;
            t[r] = (System.nanoTime() - t0) / 1e9;
        }
        Arrays.sort(t);
        System.out.printf("ASM (Matrix-style) : %d classes, %.2f MB in, %.2f MB out; best %.1f ms (%.0f MB/s, %.0f classes/s), median %.1f ms, %d rounds after 5 warm-up%n",
                cls.size(), bytes / 1e6, out / 1e6, t[0] * 1e3, bytes / 1e6 / t[0], cls.size() / t[0],
                t[rounds / 2] * 1e3, rounds);
    }
}
