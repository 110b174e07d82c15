// Turns raw samples into symbolized stacks folded into the profile's per-thread
// call trees. Symbols are resolved as samples are drained, so the capture holds
// names even for processes that exited long before the recording ended.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/frame.h"
#include "reports/profile.h"
#include "symbolize/symbolizer.h"
#include "symbolize/unwinder.h"

namespace arcprof {

enum class CallGraphMode { kFramePointer, kDwarf, kHybrid };

class SampleProcessor {
 public:
  // With an unwinder, user stacks are unwound from the copied stack (dwarf,
  // hybrid) or repaired at the leaf (fp); without one, frame pointers only.
  SampleProcessor(Symbolizer& symbolizer, Profile& profile,
                  CallGraphMode mode = CallGraphMode::kFramePointer,
                  Unwinder* unwinder = nullptr);

  // One ring buffer record: a sample_event header followed by its frames.
  // Returns false for a malformed record (counted, not fatal).
  bool Process(const void* data, size_t size);

  // Fills thread names and command lines from what the symbolizer knows and
  // stores the counters (samples, unknown frames by reason) in the profile.
  void Finish();

  uint64_t samples() const { return samples_; }
  uint64_t malformed() const { return malformed_; }

 private:
  uint32_t InternFrame(const SymbolizedFrame& frame);
  uint32_t InternInlined(const SymbolizedFrame& jit_frame, std::string_view method);
  // Fills user_pcs_ (leaf first) from the BPF frame-pointer walk and, when
  // present, the registers and stack copy.
  void UserStack(uint32_t pid, uint32_t tid, uint64_t t_ns, const uint64_t* fp_pcs, size_t fp_len,
                 const uint8_t* regs_block, size_t regs_block_len);

  struct FrameKey {
    const char* module;
    const char* symbol;
    uint64_t address;
    uint16_t kind_reason;
    bool operator==(const FrameKey&) const = default;
  };
  struct FrameKeyHash {
    size_t operator()(const FrameKey& k) const;
  };

  Symbolizer& symbolizer_;
  Profile& profile_;
  CallGraphMode mode_;
  Unwinder* unwinder_;
  std::vector<uint64_t> user_pcs_;
  // Stacks seen before, by a hash of (pid, tid, pcs): the leaf node they fold
  // into. Only stacks whose every frame is named native or kernel code are
  // kept (JIT code is time-versioned), and only while the process's address
  // space is unchanged. A CPU-bound thread repeats a handful of stacks.
  struct StackSlot {
    uint64_t hash = 0;
    uint64_t version = 0;  // Symbolizer::ProcessVersion at insertion; 0 = empty
    uint32_t thread = 0;
    uint32_t leaf = 0;
    uint32_t frames = 0;
  };
  std::vector<StackSlot> stack_cache_;
  uint64_t stack_cache_hits_ = 0;
  std::array<uint64_t, 6> unwind_stops_{};  // by UnwindStop
  uint64_t leaf_repairs_ = 0;
  uint64_t processing_ns_ = 0;  // all of Process()
  uint64_t unwind_ns_ = 0;      // dwarf/hybrid unwinding only
  uint64_t unwound_ = 0;
  uint64_t spliced_ = 0;
  std::unordered_map<FrameKey, uint32_t, FrameKeyHash> frame_ids_;
  std::unordered_map<uint32_t, std::string> last_comm_;  // by thread index
  std::vector<uint32_t> stack_;
  std::array<uint64_t, kUnknownReasonCount> unknown_frames_{};
  uint64_t samples_ = 0;
  uint64_t frames_ = 0;
  uint64_t malformed_ = 0;
  uint64_t kernel_samples_ = 0;
  uint64_t truncated_kernel_ = 0;
  uint64_t truncated_user_ = 0;
};

}  // namespace arcprof
