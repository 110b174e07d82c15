// CPU-bound Java for the unwinding tests: JIT-compiled methods calling each
// other, run with -XX:+PreserveFramePointer. Usage: java BusyLoop SECONDS
public class BusyLoop {
  static long sink;

  static long inner(long x) {
    for (int i = 0; i < 1000; i++) x = x * 6364136223846793005L + i;
    return x;
  }

  static long outer(long x) {
    for (int i = 0; i < 100; i++) x = inner(x);
    return x;
  }

  public static void main(String[] args) {
    long end = System.nanoTime() + (long) (Double.parseDouble(args[0]) * 1e9);
    long x = 1;
    while (System.nanoTime() < end) x = outer(x);
    sink = x;
  }
}
