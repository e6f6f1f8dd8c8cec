// Behaviour test program: lambdas (capturing and not), method references
// (static, bound, constructor), an anonymous class, and an interface with a
// default and a static method. Expected call tree: ../expected/Lambdas.tree
import java.util.function.IntSupplier;
import java.util.function.IntUnaryOperator;
import java.util.function.Supplier;

public class Lambdas {
    interface Shape {
        double area();

        String name();

        default String describe() {
            return name() + " of area " + area();
        }

        static Shape unit() {
            return new Square(1);
        }
    }

    static final class Square implements Shape {
        private final double side;

        Square(double side) {
            this.side = side;
        }

        @Override
        public double area() {
            return side * side;
        }

        @Override
        public String name() {
            return "square";
        }
    }

    int base = 10;

    int addBase(int x) {
        return x + base;
    }

    static int twice(int x) {
        return 2 * x;
    }

    static int apply(IntUnaryOperator f, int x) {
        return f.applyAsInt(x);
    }

    public static void main(String[] args) {
        Lambdas l = new Lambdas();
        IntUnaryOperator inc = x -> x + 1;
        System.out.println(apply(inc, 1));
        System.out.println(apply(Lambdas::twice, 5));
        System.out.println(apply(l::addBase, 5));
        int k = 3;
        IntSupplier captured = () -> k * l.base;
        System.out.println(captured.getAsInt());
        Supplier<Square> ctor = () -> new Square(3);
        System.out.println(ctor.get().describe());
        Runnable r = new Runnable() {
            @Override
            public void run() {
                System.out.println("anonymous run, twice(4) = " + twice(4));
            }
        };
        r.run();
        System.out.println(Shape.unit().describe());
    }
}
