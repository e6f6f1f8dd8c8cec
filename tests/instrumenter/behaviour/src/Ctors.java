// Behaviour test program: constructor chains with this(...) and super(...),
// arguments computed before them, exceptions thrown in constructors before and
// after super(...), static initializers (the main class's and a lazily
// initialized holder's), a non-static inner class reading a private field of
// its outer class (an access$000 method with --release 8, a nestmate access
// with JDK 17's default target), a local class, and an interface with default
// and static methods and a lambda. Expected call trees:
// ../expected/Ctors.tree (JDK 17 default) and ../expected/Ctors.release8.tree.
import java.util.ArrayList;
import java.util.List;

public class Ctors {
    static class Base {
        final String tag;

        Base(String tag) {
            this.tag = tag;
            log("Base(" + tag + ")");
        }

        Base() {
            this("default");
        }
    }

    static class Derived extends Base {
        final int n;

        Derived(int n) {
            super("d" + n);
            this.n = n;
        }

        Derived() {
            this(check(7));
        }

        Derived(String s, boolean fail) {
            super(s);
            if (fail) throw new IllegalArgumentException("thrown after super");
            this.n = 0;
        }
    }

    static class Bad extends Base {
        Bad() {
            super(boom());
        }
    }

    static class Holder {
        static final List<String> NAMES = make();

        static List<String> make() {
            List<String> l = new ArrayList<>();
            l.add("held");
            return l;
        }
    }

    class Inner {
        int get() {
            return secret * 2;
        }
    }

    interface Greeter {
        String greet(String n);

        default String greetBoth(String a, String b) {
            return greet(a) + " and " + greet(b);
        }

        static Greeter polite() {
            return n -> "dear " + n;
        }
    }

    static int counter = init("counter");

    static {
        log("static block");
    }

    private int secret = 21;

    static int init(String s) {
        log("init " + s);
        return 1;
    }

    static void log(String s) {
        System.out.println(s);
    }

    static int check(int x) {
        return x;
    }

    static String boom() {
        throw new IllegalStateException("thrown before super");
    }

    public static void main(String[] args) {
        log("tag " + new Derived(3).tag);
        log("n " + new Derived().n);
        log("tag " + new Base().tag);
        try {
            new Derived("x", true);
        } catch (IllegalArgumentException e) {
            log(e.getMessage());
        }
        try {
            new Bad();
        } catch (IllegalStateException e) {
            log(e.getMessage());
        }
        Ctors c = new Ctors();
        Ctors.Inner in = c.new Inner();
        log("inner " + in.get());
        class Local {
            int value() {
                return counter + 4;
            }
        }
        log("local " + new Local().value());
        log(Holder.NAMES.get(0));
        log(Greeter.polite().greetBoth("A", "B"));
    }
}
