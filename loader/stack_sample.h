// The one decoder of the sampler's ring-buffer record (bpf/events.h
// sample_event): everything after it works on a plain StackSample, so the
// sample processor can be fed synthetic samples in tests without BPF.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

struct runtime_frame;

namespace arcprof {

struct StackSample {
  uint64_t timestamp_ns = 0;  // CLOCK_MONOTONIC
  uint32_t pid = 0;           // thread group id; 0 for the idle task
  uint32_t tid = 0;
  uint32_t cpu = 0;
  uint16_t flags = 0;         // ARCPROF_SAMPLE_* bits
  std::string_view comm;      // thread name, at most 16 bytes, no NUL
  // Leaf first. The user stack here is the BPF frame-pointer walk.
  std::span<const uint64_t> kernel_pcs;
  std::span<const uint64_t> user_pcs;
  // With ARCPROF_SAMPLE_HAS_REGS (dwarf/hybrid): the user registers in the
  // order of user_regs_block.regs and the copied stack from rsp upwards.
  std::span<const uint64_t> user_regs;
  std::span<const uint8_t> user_stack;

  // With ARCPROF_SAMPLE_HAS_RUNTIME: the interpreter frames read at sample
  // time (bpf/runtimes.h), leaf first, for the runtime `runtime`
  // (ARCPROF_RUNTIME_*), and how their walk ended (ARCPROF_RUNTIME_COMPLETE, ...).
  uint16_t runtime = 0;
  uint16_t runtime_status = 0;
  std::span<const runtime_frame> runtime_frames;

  // With ARCPROF_SAMPLE_SOURCE: not a sample but a value source's stack
  // (loader/value_source.h), with the source's words (bpf/events.h
  // source_info). source is 0 for a sample.
  uint32_t source = 0;
  uint64_t source_key = 0;
  int32_t source_arg = 0;
  uint64_t source_values[2] = {0, 0};

  bool has_regs() const { return !user_regs.empty(); }
};

// Decodes one record of `size` bytes. The spans point into `data` (which must
// be 8-byte aligned, as ring-buffer records are) and are valid while it is.
// Returns nothing for a malformed record: shorter than its header says, more
// frames than the BPF program can write, or a register block that does not fit.
std::optional<StackSample> DecodeStackSample(const void* data, size_t size);

}  // namespace arcprof
