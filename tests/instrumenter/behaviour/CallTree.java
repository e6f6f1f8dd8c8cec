// CallTree — turns a beatlinetest.Rec dump and the instrumenter's method-ID
// file into the call trees the behaviour test compares with its golden files.
//
//   java CallTree DUMP METHOD_IDS
//   java CallTree --names METHOD_IDS      (prints every id's name, one a line)
//
// DUMP: lines "THREAD<TAB>i|o<TAB>methodId" (Rec.java). METHOD_IDS: the
// method-ID file (schema/method-id-file.md: "id,access,class name desc").
// Output, per thread (sorted by name):
//
//   == thread main
//   Control.main(String[])
//     Control.fact(int)
//       Control.fact(int)
//
// one line per call, indented two spaces per depth, naming the method as
// SimpleClass.name(param types) — class names without their package, arrays
// as T[], no return type. An exit must close the innermost open call with the
// same methodId; otherwise a line "!! exit of X while in Y" is printed and the
// thread's remaining events are skipped. Calls still open at the end are
// listed as "!! never exited: X". An id missing from METHOD_IDS prints as
// "?id". Exit status 0 (the comparison with the golden file decides).
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.ArrayDeque;
import java.util.Deque;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

public final class CallTree {
    private static String simple(String cls) {
        String c = cls.replace('.', '/');
        return c.substring(c.lastIndexOf('/') + 1);
    }

    private static String params(String desc) {
        StringBuilder sb = new StringBuilder();
        int i = desc.indexOf('(') + 1, end = desc.indexOf(')');
        while (i < end) {
            int dims = 0;
            while (desc.charAt(i) == '[') { dims++; i++; }
            String t;
            char c = desc.charAt(i);
            if (c == 'L') {
                int semi = desc.indexOf(';', i);
                t = simple(desc.substring(i + 1, semi));
                i = semi + 1;
            } else {
                switch (c) {
                    case 'B': t = "byte"; break;
                    case 'C': t = "char"; break;
                    case 'D': t = "double"; break;
                    case 'F': t = "float"; break;
                    case 'I': t = "int"; break;
                    case 'J': t = "long"; break;
                    case 'S': t = "short"; break;
                    case 'Z': t = "boolean"; break;
                    default: t = "?" + c;
                }
                i++;
            }
            if (sb.length() > 0) sb.append(',');
            sb.append(t);
            for (int d = 0; d < dims; d++) sb.append("[]");
        }
        return "(" + sb + ")";
    }

    public static void main(String[] args) throws Exception {
        if (args.length != 2) {
            System.err.println("usage: CallTree DUMP METHOD_IDS | --names METHOD_IDS");
            System.exit(2);
        }
        Map<Integer, String> names = new HashMap<>();
        for (String line : Files.readAllLines(Paths.get(args[1]), StandardCharsets.UTF_8)) {
            line = line.trim();
            if (line.isEmpty() || line.startsWith("#")) continue;
            String[] f = line.split(",", 3);
            String[] w = f[2].split("[ \t]+");
            names.put(Integer.valueOf(f[0]), simple(w[0]) + "." + w[1] + params(w.length > 2 ? w[2] : "()"));
        }
        StringBuilder out = new StringBuilder();
        if (args[0].equals("--names")) {
            for (String n : new java.util.TreeSet<>(names.values())) out.append(n).append('\n');
            System.out.print(out);
            return;
        }
        String thread = null;
        Deque<Integer> stack = new ArrayDeque<>();
        boolean broken = false;
        List<String> lines = Files.readAllLines(Paths.get(args[0]), StandardCharsets.UTF_8);
        lines.add("\u0000end\ti\t0");
        for (String line : lines) {
            String[] f = line.split("\t");
            if (f[0].equals("!!")) { out.append("!! ").append(f[1]).append('\n'); continue; }
            if (!f[0].equals(thread)) {
                for (Integer open : stack) out.append("!! never exited: ").append(name(names, open)).append('\n');
                stack.clear();
                broken = false;
                thread = f[0];
                if (thread.equals("\u0000end")) break;
                out.append("== thread ").append(thread).append('\n');
            }
            if (broken) continue;
            int id = Integer.parseInt(f[2]);
            if (f[1].equals("i")) {
                for (int d = 0; d < stack.size(); d++) out.append("  ");
                out.append(name(names, id)).append('\n');
                stack.push(id);
            } else if (stack.isEmpty() || stack.peek() != id) {
                out.append("!! exit of ").append(name(names, id)).append(" while in ")
                   .append(stack.isEmpty() ? "nothing" : name(names, stack.peek())).append('\n');
                broken = true;
            } else {
                stack.pop();
            }
        }
        System.out.print(out);
    }

    private static String name(Map<Integer, String> names, int id) {
        String n = names.get(id);
        return n != null ? n : "?" + id;
    }
}
