// Address reuse: each phase runs in its own thread ("phase-N") and loads its
// own class HotN in a fresh class loader, runs HotN.spin until it is compiled
// and hot, then drops the loader so that the class is unloaded and its code
// freed for the next phase. Prints each phase's CLOCK_MONOTONIC window
// (System.nanoTime) as "phase N START END".
import java.lang.reflect.Method;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.file.Paths;

public class Churn {
  static volatile long sink;

  public static void main(String[] args) throws Exception {
    final URL dir = Paths.get(args[0]).toUri().toURL();
    final int phases = Integer.parseInt(args[1]);
    final double seconds = Double.parseDouble(args[2]);
    for (int p = 0; p < phases; p++) {
      final int phase = p;
      final long[] window = new long[2];
      Thread t = new Thread(() -> {
        try {
          URLClassLoader loader = new URLClassLoader(new URL[] {dir}, ClassLoader.getPlatformClassLoader());
          Method spin = Class.forName("Hot" + phase, true, loader).getMethod("spin", long.class);
          window[0] = System.nanoTime();
          final long end = window[0] + (long) (seconds * 1e9);
          while (System.nanoTime() < end) sink += (Long) spin.invoke(null, 200_000L);
          window[1] = System.nanoTime();
          loader.close();
        } catch (Exception e) {
          throw new RuntimeException(e);
        }
      }, "phase-" + phase);
      t.start();
      t.join();
      System.err.println("phase " + phase + " " + window[0] + " " + window[1]);
      for (int i = 0; i < 3; i++) System.gc();
    }
  }
}
