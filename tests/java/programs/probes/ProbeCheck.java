// Runs ProbeShapes (rewritten with probes, or as javac wrote it) and then
// prints what the probes counted, when there is a probe class.
public class ProbeCheck {
  public static void main(String[] args) throws Exception {
    ProbeShapes.run();
    try {
      Class.forName("arcprof.trace.Probe").getMethod("report").invoke(null);
    } catch (ClassNotFoundException e) {
      System.out.println("no probes");
    }
  }
}
