// A known call chain for unwinding checks: `main` stays interpreted (a few
// hundred iterations of its loop, each a long call), `drive` is compiled and
// calls `alpha` three times for every `beta` (the same work each: a 75/25
// split; both call the same `work`). A second thread "deep" runs d1 -> d2 ->
// ... -> d7 -> work, where d2, d4, d6 are compiled frames of their own (the
// test passes dontinline for them and for drive/alpha/beta/work) and d3, d5,
// d7 are inlined into their callers.
public class Split {
  static volatile long sink;

  static long work(long x) {
    for (int i = 0; i < 20_000; i++) x = x * 6364136223846793005L + (x >>> 7) + i;
    return x;
  }
  static long alpha(long x) { return work(x + 1); }
  static long beta(long x) { return work(x + 2); }

  static long drive(long seed) {
    long x = seed;
    for (int i = 0; i < 400; i++) x += (i & 3) == 3 ? beta(x) : alpha(x);
    return x;
  }

  static long d1(long x) { return d2(x) + 1; }
  static long d2(long x) { return d3(x) ^ 2; }
  static long d3(long x) { return d4(x) + 3; }
  static long d4(long x) { return d5(x) ^ 4; }
  static long d5(long x) { return d6(x) + 5; }
  static long d6(long x) { return d7(x) ^ 6; }
  static long d7(long x) { return work(x); }

  public static void main(String[] args) throws Exception {
    final double seconds = Double.parseDouble(args[0]);
    final long end = System.nanoTime() + (long) (seconds * 1e9);
    Thread deep = new Thread(() -> {
      long x = 0;
      while (System.nanoTime() < end) {
        for (int i = 0; i < 100; i++) x += d1(x);
      }
      sink += x;
    }, "deep");
    deep.setDaemon(true);
    deep.start();
    System.err.println("split: running");
    long x = 0;
    while (System.nanoTime() < end) x += drive(x);
    sink += x;
  }
}
