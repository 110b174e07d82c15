// Ground truth for Java: heavy() does three times the work of light(), both
// called from main through a frame each, for the number of seconds given.
public class Burn {
  static volatile long sink;

  static long heavy(long n) {
    long x = 0;
    for (long i = 0; i < n; i++) x += i * 31 ^ (x >>> 3);
    return x;
  }

  static long light(long n) {
    long x = 1;
    for (long i = 0; i < n; i++) x += i * 17 ^ (x >>> 5);
    return x;
  }

  public static void main(String[] args) throws Exception {
    final long end = System.nanoTime() + (long) (Double.parseDouble(args[0]) * 1e9);
    System.err.println("burn: running");
    long loops = 0;
    while (System.nanoTime() < end) {
      sink += heavy(3_000_000);
      sink += light(1_000_000);
      ++loops;
    }
    // Throughput for bench/java_bench.sh.
    // Per CPU second of this thread, so that other load on the machine does not count.
    if (args.length > 1 && args[1].equals("count")) {
      long cpu = java.lang.management.ManagementFactory.getThreadMXBean().getCurrentThreadCpuTime();
      System.out.println("burn: loops " + loops + " per_cpu_s " + (loops * 1e9 / cpu));
    }
  }
}
