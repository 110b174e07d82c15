// `arcprof report --view irq`: AboveIdle-style CPU accounting from `record --ptt`.
// Per CPU and per interval (--interval, default 1s): busy, idle, hardirq and
// softirq shares of the wall time; then one row per interrupt source (device
// IRQ, x86 system vector, softirq vector) with count, total and average time.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "model/profile.h"
#include "reports/views.h"

namespace arcprof::reports {

// "1s", "250ms", "500us", "1.5s" -> nanoseconds; at least 1 ms. Errors have exit code 1.
Result<uint64_t> ParseInterval(std::string_view text);

struct IrqCpuRow {
  uint64_t interval_index = 0;  // 0-based; the interval starts at index * interval_ns
  int64_t cpu = -1;             // -1: all CPUs together
  uint64_t wall_ns = 0;
  uint64_t busy_ns = 0, idle_ns = 0, hardirq_ns = 0, softirq_ns = 0;
  uint64_t hardirqs = 0, softirqs = 0;

  double Percent(uint64_t part) const {
    return wall_ns == 0 ? 0.0 : 100.0 * static_cast<double>(part) / static_cast<double>(wall_ns);
  }
};

struct IrqSourceRow {
  model::IrqKind kind = model::IrqKind::kHardIrq;
  uint32_t vector = 0;
  std::string name;
  uint64_t count = 0;
  uint64_t ns = 0;
  std::vector<std::pair<uint32_t, uint64_t>> ns_by_cpu;  // (cpu, ns)
};

struct IrqReport {
  uint64_t interval_ns = 0;
  double duration_s = 0;
  std::vector<IrqCpuRow> intervals;  // by interval, then cpu; an "all" row after each interval's CPUs
  std::vector<IrqCpuRow> per_cpu;    // whole recording, then an "all" row
  std::vector<IrqSourceRow> sources; // by total time, descending
};

// Error (exit code 1) for a capture without PTT.
Result<IrqReport> BuildIrqReport(const model::Profile& profile, uint64_t interval_ns);
void WriteIrqText(const IrqReport& report, std::ostream& out);
void WriteIrqJson(const IrqReport& report, std::ostream& out);

// The ReportView of `--view irq` (uses --interval and --format).
int RunIrqView(const model::Profile& profile, const ReportRequest& request, std::ostream& out,
               std::ostream& err);

}  // namespace arcprof::reports
