// Turns stack samples into symbolized stacks folded into per-thread call trees
// of the window in progress. Symbols are resolved as samples are drained, so a
// window holds names even for processes that exited long before it closed.
//
// Windows: TakeWindow() hands over the window's profile (frames, threads,
// trees, counters since the previous window) and starts an empty one. What
// outlives windows are the symbolizer's caches (mappings, symbol tables, CFI
// rules) and the unwinder's; they hold addresses and names, never an index
// into a window. The processor's own caches (frame interning, stack cache)
// map to indices of the open window and are invalidated by TakeWindow(), so a
// closed window's frames are not kept once no window references them.
#pragma once

#include <array>
#include <memory>
#include <span>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/frame.h"
#include "loader/stack_sample.h"
#include "loader/value_source.h"
#include "model/flat_index.h"
#include "model/profile.h"
#include "runtimes/runtime.h"
#include "symbolize/symbolizer.h"
#include "unwind/unwinder.h"

namespace arcprof {

enum class CallGraphMode { kFramePointer, kDwarf, kHybrid };

// The identity a capture keeps for a process the symbolizer knows
// (model/process_identity.h): its cgroup's container, pod and unit, the
// service name those and its environment give, its namespaced pid.
model::ProcessIdentity ProcessIdentityOf(const ProcessInfo& process);

class SampleProcessor : public StackSink {
 public:
  // With an unwinder, user stacks are unwound from the copied stack (dwarf,
  // hybrid) or repaired at the leaf (fp); without one, frame pointers only.
  SampleProcessor(Symbolizer& symbolizer, CallGraphMode mode = CallGraphMode::kFramePointer,
                  Unwinder* unwinder = nullptr);

  // One ring buffer record (DecodeStackSample). Returns false for a malformed
  // record (counted, not fatal).
  bool Process(const void* data, size_t size);
  // One decoded sample, folded into the open window.
  void Process(const StackSample& sample);

  // The interpreted runtimes whose frames samples may carry (runtimes/):
  // each replaces the native frames that run its frames (not owned; they
  // must outlive the processor's use).
  void SetRuntimes(std::span<const std::unique_ptr<runtimes::Runtime>> runtimes) { runtimes_ = runtimes; }

  // StackSink: the records of value sources (loader/value_source.h).
  SourceStack Stack(const StackSample& sample) override;
  void Keep(uint32_t source, uint64_t key, const SourceStack& stack, std::span<const LeafFrame> leaf) override;
  bool Add(uint32_t source, uint64_t key, std::span<const SourceValue> values) override;
  void Forget(uint32_t source, uint64_t key) override;
  bool Keeps(uint32_t source, uint64_t key) const override;
  std::vector<Kept> KeptKeys(uint32_t source) const override;
  void Route(uint32_t source, ValueSource* to) override;

  // Closes the open window: fills thread names and command lines from what
  // the symbolizer knows, stores the counters since the previous window
  // (samples, unknown frames by reason, ...) and returns the window's profile.
  // Its meta is left for the caller. The next sample opens a new window.
  model::Profile TakeWindow();
  // The open window (thread table and trees so far).
  const model::Profile& window() const { return window_; }
  // Folds threads of the open window into group records
  // (model::Profile::FoldThreads); the caches that index its threads start
  // over. Returns how many threads were folded.
  size_t FoldThreads(const std::function<std::optional<model::ThreadRecord>(const model::ThreadRecord&)>& group_of);
  // A pid reused by a new process (AddressSpaces::Incarnation): the record
  // of the earlier process's thread is folded into the record `retire`
  // returns for it before the new process's first sample opens its own, so
  // that a record never holds two programs. Without it, a record of (pid,
  // tid) takes every process that held them in the window.
  using Retire = std::function<model::ThreadRecord(const model::ThreadRecord&)>;
  void SetRetire(Retire retire) { retire_ = std::move(retire); }
  // About how many heap bytes the open window holds (threads, tree nodes
  // with their values and child index, frames and their names): what a
  // daemon compares with its window limit. Walks the window: call it
  // about once a second, not per sample.
  size_t WindowBytes() const;
  // The fixed stack cache's heap bytes (held across windows).
  size_t CacheBytes() const { return stack_cache_.capacity() * sizeof(StackSlot); }

  // Totals over every window of the session.
  uint64_t samples() const { return total_samples_ + samples_; }
  uint64_t malformed() const { return total_malformed_ + malformed_; }

 private:
  uint32_t InternFrame(const SymbolizedFrame& frame);
  uint32_t InternInlined(const SymbolizedFrame& jit_frame, std::string_view method);
  // Fills user_pcs_ (leaf first) from the BPF frame-pointer walk and, when
  // present, the registers and stack copy.
  void UserStack(const StackSample& sample);
  // A user stack deeper than the frames kept loses its middle to one marker.
  void ElideMiddle();
  static SymbolizedFrame ElidedFrame();
  // A thread's record takes the name it had at t_ns (the sample's or the
  // kept stack's time); a kept stack's name replaces a record's only when it
  // was seen later than the record's last rename (renamed_ns_).
  void Rename(model::ThreadRecord& t, std::string_view comm, uint64_t t_ns);
  // Fills root_pcs_ and root_user_index_: user_pcs_ (after UserStack) then
  // the first kstack_len kernel pcs of `e`, root first, each the address
  // its frame is named at.
  void RootPcs(const StackSample& e, size_t kstack_len);
  // Names root_pcs_ from index `from` on, root first, calling emit(frame,
  // pc) for each frame: the runtime's frames (SampleRuntime) in place of the
  // native frames that run them, interpreted Java frames by their method.
  // One path for samples (Process) and value sources' stacks (Stack).
  template <class Emit>
  void NameFrames(const StackSample& e, runtimes::Runtime* rt, size_t from, Emit&& emit);
  // Folds the window's record of (pid, tid) away when it is of an earlier
  // process than `born` (AddressSpaces::Incarnation; SetRetire). False when
  // `born` is earlier than the record's: the record is a later process's.
  bool RetireEarlierIncarnation(uint32_t pid, uint32_t tid, uint64_t born);

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
  std::span<const std::unique_ptr<runtimes::Runtime>> runtimes_;
  // The runtime frames of the sample being processed, cut into the groups
  // one native activation runs (leaf first: [begin, end) in its frames).
  runtimes::Runtime* SampleRuntime(const StackSample& e);
  std::vector<std::pair<uint32_t, uint32_t>> runtime_groups_;
  // A runtime placed by pc (Runtime::NativePc): for each entry of
  // root_pcs_, the runtime frame standing for it, -1 for none.
  std::vector<int32_t> runtime_by_pc_;
  std::vector<SymbolizedFrame> runtime_names_;  // one runtime frame with its inlined frames
  // A runtime placed by host frames (Runtime::IsHostFrame): each user entry
  // of root_pcs_ resolved once, to count the hosts and then to name it.
  struct ResolvedFrame {
    SymbolizedFrame frame;
    bool host = false;
  };
  std::vector<ResolvedFrame> resolved_;
  uint64_t runtime_samples_ = 0, runtime_unmatched_ = 0, runtime_unplaced_ = 0;
  std::array<uint64_t, 5> runtime_status_{};  // by ARCPROF_RUNTIME_* status
  model::Profile window_;
  Retire retire_;
  // The incarnation (AddressSpaces::Incarnation) of each (pid, tid) record
  // of the open window, while retire_ is set.
  std::unordered_map<uint64_t, uint64_t> incarnations_;
  uint64_t incarnations_retired_ = 0;
  uint64_t epoch_ = 1;  // window number: cache entries of other windows are stale
  CallGraphMode mode_;
  Unwinder* unwinder_;
  std::vector<uint64_t> user_pcs_;
  std::vector<uint64_t> user_methods_;  // parallel to user_pcs_: Method* of interpreted frames
  // Parallel to user_pcs_ when not empty (UnwindResult::activation): 1 for
  // a frame that resumes at its pc (a signal trampoline, the frame a signal
  // interrupted), looked up there instead of at the call before it.
  std::vector<uint8_t> user_activation_;
  bool Resumes(size_t i) const { return i < user_activation_.size() && user_activation_[i] != 0; }
  uint64_t interpreted_named_ = 0, interpreted_unnamed_ = 0;
  // Stacks seen before, by a hash of (pid, tid, pcs): the leaf node they fold
  // into. Only stacks whose every frame is named native or kernel code are
  // kept (JIT code is time-versioned), and only while the process's address
  // space is unchanged. A CPU-bound thread repeats a handful of stacks.
  struct StackSlot {
    uint64_t hash = 0;
    uint64_t version = 0;  // AddressSpaces::ProcessVersion at insertion; 0 = empty
    uint64_t epoch = 0;    // the window whose tree `leaf` indexes
    uint32_t thread = 0;
    uint32_t leaf = 0;
    uint32_t frames = 0;
  };
  std::vector<StackSlot> stack_cache_;
  uint64_t stack_cache_hits_ = 0;
  // The last stack of a thread (direct-mapped by pid and tid): its root-first
  // instruction addresses, as far as each names one plain frame (named native
  // or kernel code, no inlining), with that frame and its call-tree node.
  // The next sample of the thread takes the common prefix from here instead
  // of resolving, interning and looking up each frame again: consecutive
  // samples of a busy thread share most of their stack, not all of it.
  struct ThreadPath {
    uint32_t pid = 0;
    uint32_t tid = 0;
    uint64_t version = 0;  // AddressSpaces::ProcessVersion; 0 = empty
    uint64_t epoch = 0;    // the window whose frames and tree the ids index
    std::vector<uint64_t> pcs;
    std::vector<uint32_t> frames;
    std::vector<uint32_t> nodes;
  };
  std::vector<ThreadPath> paths_;
  uint64_t path_frames_reused_ = 0;
  std::vector<uint64_t> root_pcs_;      // this sample's, root first (return addresses - 1)
  std::vector<int32_t> root_user_index_;  // index in user_pcs_, -1 for kernel frames
  std::array<uint64_t, kUnwindStopCount> unwind_stops_{};  // by UnwindStop
  uint64_t leaf_repairs_ = 0;
  uint64_t processing_ns_ = 0;  // all of Process()
  uint64_t unwind_ns_ = 0;      // dwarf/hybrid unwinding only
  uint64_t unwound_ = 0;
  uint64_t spliced_ = 0;
  uint64_t stacks_elided_ = 0;  // deeper than the frames kept (ElideMiddle)
  uint64_t frames_elided_ = 0;
  // The window's frame ids by FrameKey: frame_keys_[i] is the key of entry
  // i, frame_key_ids_[i] its frame id, frame_index_ finds i (one probe in a
  // flat table instead of a node per frame; kept across windows, emptied).
  template <typename Intern>
  uint32_t FrameIdOf(const FrameKey& key, const Intern& intern);
  model::FlatIdIndex frame_index_;
  std::vector<FrameKey> frame_keys_;
  std::vector<uint32_t> frame_key_ids_;
  std::vector<uint32_t> stack_;
  std::array<uint64_t, kUnknownReasonCount> unknown_frames_{};
  uint64_t samples_ = 0;
  uint64_t frames_ = 0;
  uint64_t malformed_ = 0;
  uint64_t kernel_samples_ = 0;
  uint64_t truncated_kernel_ = 0;
  uint64_t truncated_user_ = 0;
  uint64_t total_samples_ = 0;
  uint64_t total_malformed_ = 0;
  // Stacks value sources keep, by (source, key), root first with their
  // leaf pseudo-frames. Frames by value: they outlive the window the record
  // arrived in.
  struct KeptStack {
    uint32_t pid = 0;
    uint32_t tid = 0;
    uint64_t born = 0;  // the pid's incarnation when kept
    uint64_t seen_ns = 0;  // the kept record's time: comm is the thread's name then
    std::string comm;
    std::string process_comm;
    std::vector<uint32_t> frames;  // ids in kept_frames_
  };
  struct SourceKey {
    uint32_t source = 0;
    uint64_t key = 0;
    bool operator==(const SourceKey&) const = default;
  };
  struct SourceKeyHash {
    size_t operator()(const SourceKey& k) const { return std::hash<uint64_t>()(k.key * 31 + k.source); }
  };
  // The kept stacks' frames, each distinct frame once with a count of the
  // stacks holding it (thousands of stacks share libc and kernel frames);
  // a frame no kept stack holds is freed.
  uint32_t KeepFrame(model::FrameRecord&& frame);
  void ReleaseFrames(const std::vector<uint32_t>& ids);
  std::vector<model::FrameRecord> kept_frames_;  // modules: ids in kept_modules_
  // Only its module table is used: the module paths of kept frames, each once
  // (a path is only as many bytes as the symbolizer holds for it anyway).
  model::FrameTable kept_modules_;
  std::vector<uint32_t> kept_refs_;
  std::vector<uint32_t> kept_free_;
  std::unordered_map<model::FrameRecord, uint32_t, model::FrameRecordHash> kept_ids_;
  std::unordered_map<SourceKey, KeptStack, SourceKeyHash> kept_stacks_;
  // (pid << 32 | tid) -> time of the window record's last rename.
  std::unordered_map<uint64_t, uint64_t> renamed_ns_;
  std::unordered_map<uint32_t, ValueSource*> routes_;
  uint64_t unrouted_records_ = 0;  // of a source no extension took
};

}  // namespace arcprof
