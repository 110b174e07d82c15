// Sampling events: names to perf_event_attr, and the CPUs to open them on.
#pragma once

#include <linux/perf_event.h>

#include <cstdint>
#include <string>
#include <vector>

#include "common/result.h"
#include "common/scoped_fd.h"

namespace arcprof {

struct EventSpec {
  std::string name;  // canonical name, as stored in captures
  uint32_t type = PERF_TYPE_SOFTWARE;
  uint64_t config = PERF_COUNT_SW_CPU_CLOCK;
  bool hardware = false;
};

// Known names: cpu-clock (default), task-clock, page-faults, minor-faults,
// major-faults, context-switches, cpu-migrations; hardware: cycles,
// instructions, cache-references, cache-misses, branches, branch-misses,
// ref-cycles. Unknown names give an error listing the known ones.
Result<EventSpec> ParseEvent(const std::string& name);

// Online CPUs from /sys/devices/system/cpu/online.
Result<std::vector<int>> OnlineCpus();

// perf_event_open for sampling at `frequency_hz` on `cpu` (all processes), or
// every `period` events when period is not 0 (perf's -c). Errors explain the
// cause: no PMU for hardware events, paranoid level, ...
Result<ScopedFd> OpenSamplingEvent(const EventSpec& event, uint64_t frequency_hz, int cpu,
                                   uint64_t period = 0);

// kernel.perf_event_max_sample_rate, or 0 when it cannot be read.
uint64_t MaxSampleRate();

// The attr of the side-band event: a dummy software event that carries mmap2
// (with build-ids), comm (with exec), fork and exit records, stamped with
// CLOCK_MONOTONIC like the samples, one wakeup per record.
perf_event_attr SidebandAttr();

}  // namespace arcprof
