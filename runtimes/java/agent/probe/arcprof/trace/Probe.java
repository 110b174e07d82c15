package arcprof.trace;

// The class the probes of `arcprof trace` call (docs/java.md, "Tracing a
// Java subgraph"). The agent defines it in the bootstrap loader, so every
// class loader sees it, and registers the natives. calibTarget is probed by
// the agent itself (id 0): calibrate() times calls of it with and without
// probes, the cost the trace takes out of its times.
public final class Probe {
  private Probe() {}

  public static native void enter(int id);

  public static native void exit(int id);

  public static native void thrown(int id);

  private static int sink;

  private static void calibTarget() {}

  private static void calibBare() {
    sink++;
  }

  // Nanoseconds for n calls: of calibTarget (probed) or calibBare.
  static long calibrate(int n, boolean probed) {
    final long t0 = System.nanoTime();
    if (probed) {
      for (int i = 0; i < n; i++) calibTarget();
    } else {
      for (int i = 0; i < n; i++) calibBare();
    }
    return System.nanoTime() - t0;
  }
}
