// libFuzzer target for the start/end event-trace input of the arcflow reports.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "tests/reports/arcflow_fuzz/check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  arcprof::Result<arcprof::reports::ArcflowProfile> model = arcprof::reports::ParseArcflowEventTrace(text);
  if (model.ok()) arcprof::ExerciseModel(*model);
  return 0;
}
