// Behaviour test program: tableswitch, lookupswitch, string switch (with a
// hash collision), loops with continue, while and do/while, recursion,
// synchronized methods and blocks (also left by an exception), and a second
// thread. Expected call tree: ../expected/Control.tree
public class Control {
    private int counter;

    static String table(int k) {
        switch (k) {
            case 0: return "zero";
            case 1: return "one";
            case 2: return "two";
            case 3: return "three";
            default: return "many";
        }
    }

    static String lookup(int k) {
        switch (k) {
            case -100: return "minus hundred";
            case 7: return "seven";
            case 1000: return "thousand";
            case 123456: return "big";
            default: return "other";
        }
    }

    // "Aa" and "BB" have the same hashCode.
    static int strSwitch(String s) {
        switch (s) {
            case "alpha": return 1;
            case "beta": return 2;
            case "Aa": return 3;
            case "BB": return 4;
            default: return 0;
        }
    }

    static int fact(int n) {
        return n <= 1 ? 1 : n * fact(n - 1);
    }

    static int fib(int n) {
        if (n < 2) return n;
        return fib(n - 1) + fib(n - 2);
    }

    static int sq(int x) {
        return x * x;
    }

    static int loops(int n) {
        int s = 0;
        for (int i = 0; i < n; i++) {
            if (i % 2 == 0) continue;
            s += sq(i);
        }
        int j = 0;
        while (j < 3) j++;
        do {
            s -= j;
        } while (s > 30);
        return s;
    }

    synchronized void inc() {
        counter++;
    }

    void incBlock() {
        synchronized (this) {
            counter += 2;
        }
    }

    static synchronized int syncStatic(int x) {
        if (x < 0) throw new IllegalArgumentException("negative");
        return x + 1;
    }

    int syncDivide(int x) {
        synchronized (this) {
            if (x == 0) throw new ArithmeticException("zero");
            return 100 / x;
        }
    }

    public static void main(String[] args) throws InterruptedException {
        StringBuilder sb = new StringBuilder();
        for (int k = -1; k <= 4; k++) sb.append(table(k)).append(' ');
        System.out.println(sb);
        System.out.println(lookup(-100) + " " + lookup(7) + " " + lookup(123456) + " " + lookup(8));
        System.out.println(strSwitch("beta") + " " + strSwitch("Aa") + " " + strSwitch("BB") + " " + strSwitch("x"));
        System.out.println("fact(4) = " + fact(4) + ", fib(4) = " + fib(4));
        System.out.println("loops(6) = " + loops(6));
        Control c = new Control();
        c.inc();
        c.incBlock();
        System.out.println("syncStatic(1) = " + syncStatic(1));
        try {
            syncStatic(-1);
        } catch (IllegalArgumentException e) {
            System.out.println("syncStatic(-1): " + e.getMessage());
        }
        System.out.println("syncDivide(4) = " + c.syncDivide(4));
        try {
            c.syncDivide(0);
        } catch (ArithmeticException e) {
            System.out.println("syncDivide(0): " + e.getMessage());
        }
        Thread t = new Thread(() -> {
            for (int i = 0; i < 3; i++) c.inc();
        }, "worker");
        t.start();
        t.join();
        System.out.println("counter = " + c.counter);
    }
}
