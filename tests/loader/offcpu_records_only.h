// The off-CPU source's record handling without its BPF program, for tests
// that feed the sample processor synthetic off-CPU records.
#pragma once

#include <string_view>

#include "loader/offcpu_source.h"
#include "loader/value_source.h"
#include "model/profile.h"

namespace arcprof {

class OffCpuRecordsOnly final : public ValueSource {
 public:
  std::string_view name() const override { return "offcpu-records"; }
  Result<void> Start(RecordContext&) override { return {}; }
  Result<void> CloseWindow(RecordContext&, model::Profile&, bool) override { return {}; }
  void OnRecord(const StackSample& record, StackSink& sink) override { KeepOffCpuStack(record, sink); }
};

}  // namespace arcprof
