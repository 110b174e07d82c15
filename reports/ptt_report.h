// `arcprof report --view ptt`: one row per thread with its CPU time (interrupts
// excluded), interrupt time, dispatches, interrupts and the counters chosen
// with `record --ptt-events` (instructions, cycles, CPI where the machine
// counts them). Performance Inspector's Per-Thread Time report.
#pragma once

#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"
#include "model/profile.h"
#include "reports/views.h"
#include "model/thread_filter.h"

namespace arcprof::reports {

struct PttReportOptions {
  // cpu (default), irq, dispatches, interrupts, pid, tid, name, cpi, or the
  // name of a --ptt-events counter. Numbers sort descending, names ascending.
  std::string sort = "cpu";
  model::ThreadFilter filter;
};

struct PttReportRow {
  uint32_t pid = 0;
  uint32_t tid = 0;
  std::string comm;
  std::string process_comm;
  double cpu_ms = 0;        // interrupts excluded
  double interrupt_ms = 0;  // hardirq + softirq
  double hardirq_ms = 0;
  double softirq_ms = 0;
  uint64_t dispatches = 0;
  uint64_t interrupts = 0;
  std::vector<std::optional<uint64_t>> events;  // parallel to PttReport::events; nullopt: unavailable
  std::optional<double> cpi;  // cycles / instructions when both were counted
};

struct PttReport {
  double duration_s = 0;
  size_t cpus = 0;
  std::vector<model::PttEvent> events;
  std::vector<PttReportRow> rows;
  PttReportRow total;  // pid/tid 0, comm "TOTAL"
  std::string sort;
};

// Errors (exit code 1): a capture without PTT, an unknown sort key.
Result<PttReport> BuildPttReport(const model::Profile& profile, const PttReportOptions& options);
void WritePttText(const PttReport& report, std::ostream& out);
void WritePttJson(const PttReport& report, std::ostream& out);

// The ReportView of `--view ptt` (uses --sort, --pid/--tid/--comm, --format).
int RunPttView(const model::Profile& profile, const ReportRequest& request, std::ostream& out,
               std::ostream& err);

}  // namespace arcprof::reports
