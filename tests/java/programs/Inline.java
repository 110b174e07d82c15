// Inlining ground truth: C2 inlines step() into inner()'s loop, so nearly
// every sample's leaf is step() as an inlined frame under inner().
public class Inline {
  static volatile long sink;

  static long step(long x, long i) { return x + (i * 31 ^ (x >>> 3)); }

  static long inner(long n) {
    long x = 0;
    for (long i = 0; i < n; i++) x = step(x, i);
    return x;
  }

  public static void main(String[] args) {
    final long end = System.nanoTime() + (long) (Double.parseDouble(args[0]) * 1e9);
    while (System.nanoTime() < end) sink += inner(2_000_000);
  }
}
