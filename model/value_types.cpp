#include "model/value_types.h"

namespace arcprof::model {
namespace {
// Every type above with something to say beyond its name and unit.
constexpr ValueTypeName kKnown[] = {kOffCpuNs, kAllocBytes, kAllocCount, kInuseBytes, kInuseCount};
}  // namespace

std::string_view PprofTypeName(std::string_view name) {
  for (const ValueTypeName& t : kKnown) {
    if (t.name == name) return t.pprof_name();
  }
  return name;
}

void DropValuesAsOfEnd(Profile& window) {
  for (const ValueTypeName& t : kKnown) {
    if (!t.as_of_end) continue;
    const auto type = window.ValueIndex(t.name);
    if (!type) continue;
    for (ThreadRecord& thread : window.threads) thread.tree.TransformValues(*type, [](uint32_t, uint64_t) { return 0; });
  }
}

}  // namespace arcprof::model
