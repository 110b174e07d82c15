// A JVM for the churn soak: spins in one method for a few seconds, then exits
// (the test restarts it, so arcprof sees JVMs come and go).
public class ChurnSpin {
    static long sink;

    static long churnSpin(long n) {
        long acc = n;
        for (long i = 0; i < 2_000_000; i++) acc = acc * 6364136223846793005L + 1442695040888963407L;
        return acc;
    }

    public static void main(String[] args) {
        long end = System.nanoTime() + (long) (Double.parseDouble(args.length > 0 ? args[0] : "5") * 1e9);
        while (System.nanoTime() < end) sink += churnSpin(sink);
    }
}
