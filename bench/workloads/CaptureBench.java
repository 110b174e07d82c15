// A JDK 17 workload for bench/capture_size_bench.sh: collections, streams,
// lambdas, string building and regular expressions, so the JIT compiles many
// methods at several tiers. Runs until its main thread used `args[0]` seconds of
// CPU (not wall time: a loaded machine gives the same number of samples).
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Pattern;
import java.util.stream.Collectors;

public class CaptureBench {
  record Item(String name, int weight, double price) {}

  static List<Item> makeItems(int n, long seed) {
    List<Item> items = new ArrayList<>(n);
    long x = seed;
    for (int i = 0; i < n; i++) {
      x = x * 6364136223846793005L + 1442695040888963407L;
      items.add(new Item("item-" + Long.toHexString(x >>> 40), (int) ((x >>> 33) % 1000), (x >>> 11) % 10000 / 100.0));
    }
    return items;
  }

  static Map<Integer, Double> group(List<Item> items) {
    return items.stream().collect(Collectors.groupingBy(i -> i.weight() % 97, Collectors.summingDouble(Item::price)));
  }

  static int matches(List<Item> items, Pattern p) {
    int n = 0;
    for (Item i : items) if (p.matcher(i.name()).find()) n++;
    return n;
  }

  static String render(List<Item> items) {
    StringBuilder sb = new StringBuilder();
    for (Item i : items) sb.append(i.name()).append(':').append(i.weight()).append(',');
    return sb.toString();
  }

  public static void main(String[] args) {
    long seconds = args.length > 0 ? Long.parseLong(args[0]) : 10;
    ThreadMXBean threads = ManagementFactory.getThreadMXBean();
    long end = threads.getCurrentThreadCpuTime() + seconds * 1_000_000_000L;
    Pattern p = Pattern.compile("[a-f]{2}[0-9]+");
    long checksum = 0;
    for (long round = 0; threads.getCurrentThreadCpuTime() < end; round++) {
      List<Item> items = makeItems(20000, round);
      items.sort(Comparator.comparingInt(Item::weight).thenComparing(Item::name));
      Map<Integer, Double> g = group(items);
      checksum += g.size() + matches(items, p) + render(items).length();
      HashMap<String, Integer> counts = new HashMap<>();
      for (Item i : items) counts.merge(i.name().substring(0, 6), 1, Integer::sum);
      checksum += counts.size();
    }
    System.out.println(checksum);
  }
}
