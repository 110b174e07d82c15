// A synthetic PTT recording with known numbers, shared by the ptt/irq report
// tests and the capture fuzzer's PTT seed.
#pragma once

#include "model/profile.h"
#include "tests/layer_names.h"

namespace arcprof::testing {

// Two CPUs over 2 s in four 0.5 s rows each; three threads in two processes;
// instructions and cycles unavailable (no PMU), page-faults counted.
//   cpu 0: busy 400 ms, idle 550 ms, hardirq 30 ms, softirq 20 ms per 1 s
//   cpu 1: busy 100 ms, idle 880 ms, hardirq 10 ms, softirq 10 ms per 1 s
inline Profile PttSampleProfile() {
  Profile p;
  p.meta.start_monotonic_ns = 10'000'000'000;
  p.meta.end_monotonic_ns = 12'000'000'000;
  p.meta.host = "test";
  PttData& d = p.ptt;
  d.recorded = true;
  d.events = {{"instructions", false, "not available on this machine"},
              {"cycles", false, "not available on this machine"},
              {"page-faults", true, ""}};
  d.threads = {
      {100, 100, "server", 600'000'000, 30'000'000, 10'000'000, 50, 400, {0, 0, 1200}},
      {100, 101, "worker", 300'000'000, 5'000'000, 20'000'000, 900, 120, {0, 0, 40}},
      {200, 200, "batch", 100'000'000, 0, 0, 3, 0, {0, 0, 7}},
  };
  for (uint64_t i = 0; i < 4; ++i) {
    const uint64_t start = p.meta.start_monotonic_ns + i * 500'000'000;
    d.intervals.push_back({0, start, start + 500'000'000, 200'000'000, 275'000'000, 15'000'000,
                           10'000'000, 1000, 300});
    d.intervals.push_back({1, start, start + 500'000'000, 50'000'000, 440'000'000, 5'000'000,
                           5'000'000, 400, 100});
  }
  d.irq_vectors = {
      {0, IrqKind::kSysVec, 0, "LOC", 3000, 45'000'000},
      {1, IrqKind::kSysVec, 0, "LOC", 1500, 15'000'000},
      {0, IrqKind::kSoftIrq, 3, "NET_RX", 1000, 30'000'000},
      {1, IrqKind::kSoftIrq, 3, "NET_RX", 200, 5'000'000},
      {1, IrqKind::kSoftIrq, 9, "RCU", 100, 1'000'000},
      {0, IrqKind::kHardIrq, 11, "irq 11 (virtio0)", 10, 500'000},
  };
  return p;
}

}  // namespace arcprof::testing
