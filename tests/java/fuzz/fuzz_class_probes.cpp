// libFuzzer target: the class-file rewriter of `arcprof trace`
// (runtimes/java/agent/class_probes.h) over any bytes a JVM could hand the
// agent. Every method is probed; what comes out must parse again.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <vector>

#include "runtimes/java/agent/class_probes.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace arcprof::classfile;
  const std::span<const uint8_t> bytes(data, size);
  std::vector<DeclaredMethod> methods;
  if (!ListMethods(bytes, &methods)) {
    if (!AddProbes(bytes, std::vector<MethodProbe>{{"run", "()V", 1}}).bytes.empty()) abort();
    return 0;
  }
  std::vector<MethodProbe> probes;
  int32_t id = 0;
  for (const DeclaredMethod& m : methods) {
    probes.push_back({m.name, m.descriptor, id++});
    std::vector<CalledMethod> calls;
    CalledBy(bytes, m.name, m.descriptor, &calls);
  }
  const ProbeResult r = AddProbes(bytes, probes);
  if (r.bytes.empty()) return 0;
  std::vector<DeclaredMethod> again;
  if (!ListMethods(r.bytes, &again) || again.size() != methods.size()) abort();
  AddProbes(r.bytes, probes);
  return 0;
}
