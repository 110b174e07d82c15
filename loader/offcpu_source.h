// `record --off-cpu`: off-CPU time as a value source (loader/value_source.h;
// docs/design.md "Off-CPU time"). Its program (bpf/offcpu.bpf.c) writes the
// stack of a thread going off CPU once per key into the sampler's ring and
// sums the time per key in BPF; the source keeps each key's stack under its
// reason pseudo-frame and adds the time since the previous read at every
// window close (model::kOffCpuNs).
#pragma once

#include <cstdint>
#include <memory>

#include "loader/record_extension.h"

namespace arcprof {

struct OffCpuSourceOptions {
  uint32_t max_keys = 65536;  // --off-cpu-max-stacks: distinct (thread, blocking place) keys
};

std::unique_ptr<RecordExtension> MakeOffCpuSource(OffCpuSourceOptions options);

// What the source does with one of its records and with time read from BPF,
// without BPF (tests feed synthetic records): keeps the record's stack under
// its reason pseudo-frame, and adds ns at a key's stack (false: no stack).
struct StackSample;
class StackSink;
void KeepOffCpuStack(const StackSample& record, StackSink& sink);
bool AddOffCpuTime(StackSink& sink, uint64_t key, uint64_t ns);

}  // namespace arcprof
