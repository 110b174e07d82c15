package arcprof.trace;

// The probe class of the class-file rewriter's tests, in Java: the agent
// defines its own with native methods (docs/java.md). Counts per method id.
public final class Probe {
  private static final int MAX = 4096;
  private static final long[] ENTERS = new long[MAX];
  private static final long[] EXITS = new long[MAX];
  private static final long[] THROWN = new long[MAX];

  public static synchronized void enter(int id) { ENTERS[id]++; }
  public static synchronized void exit(int id) { EXITS[id]++; }
  public static synchronized void thrown(int id) { THROWN[id]++; }

  // One line per method seen: "probe ID ENTERS EXITS THROWN".
  public static synchronized void report() {
    for (int i = 0; i < MAX; i++) {
      if (ENTERS[i] + EXITS[i] + THROWN[i] > 0) {
        System.out.println("probe " + i + " " + ENTERS[i] + " " + EXITS[i] + " " + THROWN[i]);
      }
    }
  }
}
