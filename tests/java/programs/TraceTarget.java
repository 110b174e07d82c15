import java.io.BufferedReader;
import java.io.InputStreamReader;

// The program of the Java trace tests (tests/java/java_trace_test.cpp) and
// of bench/java_trace_bench.sh. TraceTarget.root(i) calls leafA and leafB
// once each, leafA doing three times leafB's work; middle -> thrower, which
// throws when i is a multiple of 4, caught in root; and spin, a method of a
// few instructions. Commands on stdin, one answer line each on stdout:
//   warm            root(1) once (no exception)
//   go N            root(0) .. root(N-1)
//   bench N         N calls of spin outside root: "bench NS_PER_CALL"
//   outside N       N calls of spinOutside, never under root: "outside NS_PER_CALL"
//   hot N           hotRoot(N): N calls of spin under the root hotRoot: "hot NS_PER_CALL"
// With the argument "loop" it calls root and outside() forever instead.
public class TraceTarget {
  static long sink;

  static long work(long n) {
    long x = 0;
    for (long i = 0; i < n; i++) x += (i * 31) ^ (x >>> 3);
    return x;
  }

  static void leafA() { sink += work(30000); }

  static void leafB() { sink += work(10000); }

  static void thrower(int i) {
    if ((i & 3) == 0) throw new IllegalStateException("call " + i);
    sink++;
  }

  static void middle(int i) { thrower(i); }

  static int spin(int x) { return (x * 7) ^ (x >>> 2); }

  static int spinOutside(int x) { return (x * 7) ^ (x >>> 2); }

  static void root(int i) {
    leafA();
    leafB();
    sink += spin(i);
    try {
      middle(i);
    } catch (IllegalStateException e) {
      sink--;
    }
  }

  static void outside() { sink += work(40000); }

  static int hotRoot(int n) {
    int x = 1;
    for (int i = 0; i < n; i++) x = spin(x + i);
    return x;
  }

  static double timeSpin(int n, boolean outside) {
    int x = 1;
    final long t0 = System.nanoTime();
    if (outside) {
      for (int i = 0; i < n; i++) x = spinOutside(x + i);
    } else {
      for (int i = 0; i < n; i++) x = spin(x + i);
    }
    final long t = System.nanoTime() - t0;
    sink += x;
    return (double) t / n;
  }

  public static void main(String[] args) throws Exception {
    if (args.length > 0 && args[0].equals("loop")) {
      for (int i = 0; ; i++) {
        root(i);
        outside();
      }
    }
    BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
    for (String line; (line = in.readLine()) != null; ) {
      String[] w = line.trim().split(" ");
      if (w[0].equals("warm")) {
        root(1);
        System.out.println("ok");
      } else if (w[0].equals("go")) {
        final int n = Integer.parseInt(w[1]);
        for (int i = 0; i < n; i++) root(i);
        System.out.println("ok");
      } else if (w[0].equals("hot")) {
        final int n = Integer.parseInt(w[1]);
        final long t0 = System.nanoTime();
        sink += hotRoot(n);
        System.out.println("hot " + (double) (System.nanoTime() - t0) / n);
      } else if (w[0].equals("bench") || w[0].equals("outside")) {
        System.out.println(w[0] + " " + timeSpin(Integer.parseInt(w[1]), w[0].equals("outside")));
      } else {
        System.out.println("unknown " + line);
      }
      System.out.flush();
    }
  }
}
