// Class redefinition under a profiler: RedefHot.alpha runs three times as
// often as RedefHot.beta (the same work each), and every PERIOD ms the main
// thread redefines RedefHot with its own bytes (RedefineClasses) or
// retransforms it (RetransformClasses), alternately. Each time HotSpot gives
// alpha and beta new Method*s. Started as `java -jar redef.jar SECONDS
// PERIOD_MS`: the jar's Launcher-Agent-Class hands us the Instrumentation.
import java.io.InputStream;
import java.lang.instrument.ClassDefinition;
import java.lang.instrument.Instrumentation;

public class Redef {
  static volatile Instrumentation inst;
  static volatile long sink;

  public static void agentmain(String args, Instrumentation i) { inst = i; }

  public static void main(String[] args) throws Exception {
    final long end = System.nanoTime() + (long) (Double.parseDouble(args[0]) * 1e9);
    final long period = Long.parseLong(args[1]) * 1_000_000L;
    byte[] bytes;
    try (InputStream in = Redef.class.getResourceAsStream("RedefHot.class")) {
      bytes = in.readAllBytes();
    }
    System.err.println("redef: running");
    long next = System.nanoTime() + period;
    int count = 0;
    long x = 0;
    while (System.nanoTime() < end) {
      for (int i = 0; i < 4; i++) x += i == 3 ? RedefHot.beta(x) : RedefHot.alpha(x);
      if (System.nanoTime() >= next) {
        if (count % 2 == 0) inst.redefineClasses(new ClassDefinition(RedefHot.class, bytes));
        else inst.retransformClasses(RedefHot.class);
        ++count;
        next += period;
      }
    }
    sink += x;
    System.err.println("redef: redefined " + count);
  }
}

class RedefHot {
  static long alpha(long x) {
    for (int i = 0; i < 20_000; i++) x = x * 6364136223846793005L + (x >>> 7) + i;
    return x;
  }

  static long beta(long x) {
    for (int i = 0; i < 20_000; i++) x = x * 6364136223846793005L + (x >>> 9) + i;
    return x;
  }
}
