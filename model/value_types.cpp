#include "model/value_types.h"

namespace arcprof::model {

std::string_view PprofTypeName(std::string_view name) {
  for (const ValueTypeName& t : {kOffCpuNs, kAllocBytes, kAllocCount, kInuseBytes, kInuseCount}) {
    if (t.name == name) return t.pprof_name();
  }
  return name;
}

}  // namespace arcprof::model
