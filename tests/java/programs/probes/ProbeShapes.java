import java.util.function.IntUnaryOperator;

// Code shapes the class-file rewriter must keep working (tests/java/
// class_probes_test.cpp): every method here gets probes, the program runs
// under the JVM's verifier and prints the same lines, and the probes' counts
// are the calls made. Counts the test checks are in the comments.
public class ProbeShapes {
  static int sink;

  // 10 calls, all returning.
  static int leaf(int x) { return x * 3 + 1; }

  // A loop back to offset 0 (do-while first): 1 call.
  static int loopAtStart(int n) {
    do {
      sink += leaf(n);
      n--;
    } while (n > 0);
    return n;
  }

  // tableswitch and lookupswitch whose padding moves with the probes.
  static int table(int k) {
    switch (k) {
      case 0: return 10;
      case 1: return 11;
      case 2: return 12;
      case 3: return 13;
      default: return -1;
    }
  }

  static int lookup(int k) {
    switch (k) {
      case -1000: return 1;
      case 7: return 2;
      case 100000: return 3;
      default:
        break;
    }
    return 0;
  }

  // Exceptions through probed frames: thrower ends by an exception 5 times,
  // middle 5 times, catcher catches them (5 calls, all returning).
  static void thrower(int i) {
    if (i >= 0) throw new IllegalStateException("x" + i);
  }

  static void middle(int i) {
    try {
      thrower(i);
    } finally {
      sink++;
    }
  }

  static int catcher(int i) {
    try {
      middle(i);
      return 0;
    } catch (IllegalStateException e) {
      return 1;
    }
  }

  // Uninitialized(offset) in the stack maps: a `new` before a branch.
  static String uninit(boolean b) {
    return new String(b ? "yes" : "no");
  }

  // Recursion: fib(10) is 177 calls.
  static int fib(int n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }

  // Two-slot returns (long, double) with the probe's int on top.
  static long wide(long a) { return a * 2; }

  static double wider(double a) { return a / 2; }

  static synchronized int locked(int a) { return a + 1; }

  static int block(Object lock, int a) {
    synchronized (lock) {
      if (a > 3) return a;
      return -a;
    }
  }

  // A lambda: its body is a synthetic method of this class.
  static int lambda(int x) {
    IntUnaryOperator f = v -> v + leaf(v);
    return f.applyAsInt(x);
  }

  // An exception that leaves a method that has no handler at all.
  static void bare() { throw new RuntimeException("bare"); }

  static int callsBare() {
    try {
      bare();
    } catch (RuntimeException e) {
      return 2;
    }
    return 0;
  }

  int field = 5;

  int instance(int a) { return field + a; }

  public static void run() {
    System.out.println("loop " + loopAtStart(10));
    int t = 0;
    for (int k = -1; k < 6; k++) t += table(k) + lookup(k) + lookup(k * 100000);
    System.out.println("switch " + t + " " + lookup(-1000) + " " + lookup(7));
    int caught = 0;
    for (int i = 0; i < 5; i++) caught += catcher(i);
    System.out.println("caught " + caught + " sink " + sink);
    System.out.println("uninit " + uninit(true) + uninit(false));
    System.out.println("fib " + fib(10));
    System.out.println("wide " + wide(21) + " " + wider(3.0));
    System.out.println("locked " + locked(1) + " " + block(new Object(), 5) + " " + block(new Object(), 1));
    System.out.println("lambda " + lambda(2));
    System.out.println("bare " + callsBare());
    System.out.println("instance " + new ProbeShapes().instance(3));
    System.out.println("big " + BigMethod.find(new int[] {5000, 5001, 2399}) + " " + BigMethod.find(new int[] {9999}));
  }
}
