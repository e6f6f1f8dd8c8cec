// Behaviour test program: exceptions thrown and caught at several depths,
// try/finally, catch-and-wrap, exceptions from the JDK and from the JVM
// (division by zero, array index), checked exceptions, try-with-resources
// with a suppressed exception. Expected call tree: ../expected/Exceptions.tree
public class Exceptions {
    static final class Res implements AutoCloseable {
        private final String name;
        private final boolean failClose;

        Res(String name, boolean failClose) {
            this.name = name;
            this.failClose = failClose;
            note("open " + name);
        }

        void use(boolean fail) {
            if (fail) throw new IllegalStateException("use of " + name + " failed");
            note("used " + name);
        }

        @Override
        public void close() {
            note("close " + name);
            if (failClose) throw new IllegalArgumentException("close of " + name + " failed");
        }
    }

    static void note(String s) {
        System.out.println(s);
    }

    static int depth3(int x) {
        if (x > 2) throw new IllegalStateException("too big " + x);
        return x * 10;
    }

    static int depth2(int x) {
        return depth3(x) + 1;
    }

    static int depth1(int x) {
        try {
            return depth2(x);
        } finally {
            note("finally in depth1 x=" + x);
        }
    }

    static int catchHere(int x) {
        try {
            return depth1(x);
        } catch (IllegalStateException e) {
            note("caught at depth 0: " + e.getMessage());
            return -1;
        }
    }

    static int nested(int x) {
        try {
            try {
                return depth2(x);
            } catch (IllegalStateException e) {
                throw new RuntimeException("wrapped", e);
            } finally {
                note("inner finally");
            }
        } catch (RuntimeException e) {
            note("outer caught " + e.getMessage() + ", cause " + e.getCause().getMessage());
            return -2;
        }
    }

    static void checked() throws Exception {
        throw new Exception("checked");
    }

    static int parse(String s) {
        return Integer.parseInt(s);
    }

    static int divide(int a, int b) {
        return a / b;
    }

    static int at(int[] a, int i) {
        return a[i];
    }

    public static void main(String[] args) {
        note("catchHere(1) = " + catchHere(1));
        note("catchHere(5) = " + catchHere(5));
        note("nested(1) = " + nested(1));
        note("nested(7) = " + nested(7));
        try {
            checked();
        } catch (Exception e) {
            note("caught " + e.getMessage());
        }
        try {
            parse("12x");
        } catch (NumberFormatException e) {
            note("not a number");
        }
        try {
            divide(1, 0);
        } catch (ArithmeticException e) {
            note("division: " + e.getMessage());
        }
        try {
            at(new int[2], 2);
        } catch (ArrayIndexOutOfBoundsException e) {
            note("index out of bounds");
        }
        try (Res a = new Res("a", false); Res b = new Res("b", true)) {
            b.use(true);
        } catch (IllegalStateException e) {
            note("twr caught " + e.getMessage() + ", suppressed " + e.getSuppressed().length
                 + ": " + e.getSuppressed()[0].getMessage());
        }
        try (Res c = new Res("c", false)) {
            c.use(false);
        }
    }
}
