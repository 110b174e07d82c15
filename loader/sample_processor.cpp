#include "loader/sample_processor.h"
#include "common/clock.h"

#include <algorithm>
#include <cstring>
#include <ctime>

#include "events.h"
#include "runtimes.h"

namespace arcprof {
using namespace arcprof::model;
namespace {

// A walk in the copied stack (dwarf, hybrid) goes on while the copy lasts:
// every frame holds at least its return address there. The BPF
// frame-pointer stacks stop at ARCPROF_MAX_STACK (perf's 127, the kernel's
// limit for bpf_get_stack); the copy is ours to walk, and a compiler's
// template instantiation or GC marking recurses thousands of frames deep
// (g++ -O2 of a template-heavy file: 6.6% of cc1plus samples were cut at
// 127 frames, 1.5% at 512).
constexpr size_t kMaxWalkFrames = ARCPROF_MAX_STACK_COPY / 8;
// A user stack deeper than kKeptInnerFrames + kKeptOuterFrames keeps its
// innermost and outermost frames, with one marker frame, "[frames elided]",
// in place of the middle: where the time is spent and what it is spent
// for (main, the compiler pass) both stay, while the frames left out (the
// middle of a recursion) would each make a call-tree node of their own.
constexpr size_t kKeptInnerFrames = 256;
constexpr size_t kKeptOuterFrames = 256;
// The marker's place in user_pcs_: not a user address, never resolved.
constexpr uint64_t kElidedPc = ~uint64_t{0};

// The address a frame is stored under, on CPU and off CPU alike. A named
// frame: its symbol's start. An unnamed frame of a known file: the start of
// its function (.eh_frame_hdr), so every call site and instruction of one
// stripped function is one frame like a named function's, shown
// [libfoo.so+0xSTART], and a later symbol source (a debug file, debuginfod)
// names it from that start; without a function table, the instruction itself.
uint64_t StoredAddress(const SymbolizedFrame& f) {
  const bool unnamed_in_file = f.symbol.empty() && f.kind == FrameKind::kNative && !f.module.empty();
  if (!unnamed_in_file || f.address != 0) return f.address;
  return f.offset;
}

}  // namespace

size_t SampleProcessor::FrameKeyHash::operator()(const FrameKey& k) const {
  size_t h = reinterpret_cast<uintptr_t>(k.module);
  h = h * 0x9e3779b97f4a7c15ull ^ reinterpret_cast<uintptr_t>(k.symbol);
  h = h * 0x9e3779b97f4a7c15ull ^ k.address;
  return h * 0x9e3779b97f4a7c15ull ^ k.kind_reason;
}

SampleProcessor::SampleProcessor(Symbolizer& symbolizer, CallGraphMode mode, Unwinder* unwinder)
    : symbolizer_(symbolizer), mode_(mode), unwinder_(unwinder) {
  // Kernel frames, then user frames.
  stack_.reserve(ARCPROF_MAX_STACK + kKeptInnerFrames + 1 + kKeptOuterFrames);
  user_pcs_.reserve(kKeptInnerFrames + 1 + kKeptOuterFrames);  // what a stack keeps
  stack_cache_.resize(size_t{1} << 16);
  paths_.resize(256);
}

void SampleProcessor::UserStack(const StackSample& sample) {
  const uint64_t* fp_pcs = sample.user_pcs.data();
  const size_t fp_len = sample.user_pcs.size();
  user_pcs_.assign(sample.user_pcs.begin(), sample.user_pcs.end());
  user_methods_.clear();
  user_activation_.clear();
  if (!unwinder_ || !sample.has_regs()) return;
  UnwindInput input;
  input.pid = sample.pid;
  input.tid = sample.tid;
  input.t_ns = sample.timestamp_ns;
  input.regs = sample.user_regs.data();
  input.stack = sample.user_stack.data();
  input.stack_len = sample.user_stack.size();

  if (mode_ == CallGraphMode::kFramePointer) {
    // A leaf that has not pushed its frame yet makes the frame-pointer walk
    // skip its caller; the unwind tables know where the return address is.
    if (user_pcs_.empty()) return;
    auto caller = unwinder_->LeafCaller(input);
    if (caller && caller->pc != 0) {
      if (user_pcs_.size() < 2 || user_pcs_[1] != caller->pc) {
        user_pcs_.insert(user_pcs_.begin() + 1, caller->pc);
        ++leaf_repairs_;
      }
      // A handler's caller is the signal trampoline: named at its first byte.
      if (caller->activation) user_activation_ = {0, 1};
    }
    return;
  }

  const uint64_t t0 = MonotonicNs();
  UnwindResult r = unwinder_->Unwind(input, mode_ == CallGraphMode::kHybrid, kMaxWalkFrames);
  unwind_ns_ += MonotonicNs() - t0;
  ++unwound_;
  if (r.stop == UnwindStop::kStackCopyTooSmall && mode_ == CallGraphMode::kHybrid &&
      r.pcs.size() > 1) {
    // The copy ended before the stack did: the frame-pointer walk (taken on
    // live memory) continues from the last return address both walks share.
    for (size_t i = 0; i < fp_len; ++i) {
      if (fp_pcs[i] != r.pcs.back()) continue;
      for (size_t j = i + 1; j < fp_len && r.pcs.size() < kMaxWalkFrames; ++j) {
        r.pcs.push_back(fp_pcs[j]);
      }
      r.stop = UnwindStop::kComplete;
      ++spliced_;
      break;
    }
  }
  ++unwind_stops_[static_cast<size_t>(r.stop)];
  user_pcs_ = std::move(r.pcs);
  user_methods_ = std::move(r.methods);
  user_activation_ = std::move(r.activation);
  ElideMiddle();
}

void SampleProcessor::ElideMiddle() {
  const size_t n = user_pcs_.size();
  if (n <= kKeptInnerFrames + kKeptOuterFrames) return;
  const size_t last_elided = n - kKeptOuterFrames;  // one past
  user_pcs_[kKeptInnerFrames] = kElidedPc;
  user_pcs_.erase(user_pcs_.begin() + kKeptInnerFrames + 1, user_pcs_.begin() + last_elided);
  if (!user_methods_.empty()) {
    user_methods_.resize(n, 0);
    user_methods_[kKeptInnerFrames] = 0;
    user_methods_.erase(user_methods_.begin() + kKeptInnerFrames + 1, user_methods_.begin() + last_elided);
  }
  if (!user_activation_.empty()) {
    user_activation_.resize(n, 0);
    user_activation_[kKeptInnerFrames] = 0;
    user_activation_.erase(user_activation_.begin() + kKeptInnerFrames + 1,
                           user_activation_.begin() + last_elided);
  }
  ++stacks_elided_;
  frames_elided_ += last_elided - kKeptInnerFrames;
}

SymbolizedFrame SampleProcessor::ElidedFrame() {
  SymbolizedFrame f;
  f.symbol = kElidedFramesName;
  f.kind = FrameKind::kUnknown;
  f.reason = UnknownReason::kTruncated;
  return f;
}

template <typename Intern>
uint32_t SampleProcessor::FrameIdOf(const FrameKey& key, const Intern& intern) {
  const FrameKeyHash hash;
  bool inserted = false;
  const uint32_t entry = frame_index_.FindOrInsertHashed(
      model::FlatHash(hash(key)), static_cast<uint32_t>(frame_keys_.size()),
      [&](uint32_t i) { return frame_keys_[i] == key; },
      [&](uint32_t i) { return model::FlatHash(hash(frame_keys_[i])); }, inserted);
  if (!inserted) return frame_key_ids_[entry];
  const uint32_t id = intern();
  frame_keys_.push_back(key);
  frame_key_ids_.push_back(id);
  return id;
}

uint32_t SampleProcessor::InternFrame(const SymbolizedFrame& f) {
  const uint64_t address = StoredAddress(f);
  const FrameKey key{f.module.data(), f.symbol.data(), address,
                     static_cast<uint16_t>(static_cast<unsigned>(f.kind) << 8 |
                                           static_cast<unsigned>(f.reason))};
  return FrameIdOf(key, [&] {
    FrameRecord record;
    record.module = window_.frames.InternModule(f.module);
    record.symbol = std::string(f.symbol);
    record.address = address;
    record.kind = f.kind;
    record.reason = f.reason;
    return window_.frames.Intern(record);
  });
}

uint32_t SampleProcessor::InternInlined(const SymbolizedFrame& f, std::string_view method) {
  // Bit 15 keeps inlined frames apart from a compiled frame of the same name.
  const FrameKey key{f.module.data(), method.data(), 0,
                     static_cast<uint16_t>(0x8000u | static_cast<unsigned>(f.kind) << 8)};
  return FrameIdOf(key, [&] {
    FrameRecord record;
    record.module = window_.frames.InternModule(f.module);
    record.symbol = std::string(method);
    record.kind = f.kind;
    record.inlined = true;
    return window_.frames.Intern(record);
  });
}

runtimes::Runtime* SampleProcessor::SampleRuntime(const StackSample& e) {
  if (!(e.flags & ARCPROF_SAMPLE_HAS_RUNTIME)) return nullptr;
  runtimes::Runtime* rt = nullptr;
  for (const auto& r : runtimes_) {
    if (r->id() == e.runtime && e.runtime != ARCPROF_RUNTIME_NONE) rt = r.get();
  }
  if (rt == nullptr) return nullptr;
  // The runtimes.* counters count samples (a value source's stacks are
  // named the same way, uncounted).
  if (e.source == 0) {
    ++runtime_samples_;
    if (e.runtime_status < runtime_status_.size()) ++runtime_status_[e.runtime_status];
  }
  runtime_groups_.clear();
  // Frames placed by their pc form no groups.
  if (!e.runtime_frames.empty() && rt->NativePc(e.runtime_frames[0]) != 0) return rt;
  uint32_t begin = 0;
  const auto frames = e.runtime_frames;
  for (uint32_t i = 0; i < frames.size(); ++i) {
    if (frames[i].code == 0) {
      runtime_groups_.emplace_back(begin, i);  // a marker ends its activation's frames
      begin = i + 1;
    } else if (frames[i].instr & ARCPROF_RUNTIME_ENTRY_BIT) {
      runtime_groups_.emplace_back(begin, i + 1);  // so does an entry frame, after itself
      begin = i + 1;
    }
  }
  // Frames after the last marker: an activation whose entry frame the walk
  // did not reach (too deep, a read fault).
  if (begin < frames.size()) runtime_groups_.emplace_back(begin, static_cast<uint32_t>(frames.size()));
  return rt;
}

void SampleProcessor::RootPcs(const StackSample& e, size_t kstack_len) {
  // Root first: the user stack from its outermost frame, then the kernel stack.
  // Frames after the leaf are return addresses: look up ip-1 so that a call at
  // the very end of a function is attributed to that function; except frames
  // that resume at their pc (a signal trampoline, the frame a signal
  // interrupted): ip-1 is another instruction there, often of another
  // function (glibc's __restore_rt is preceded by a nop outside it).
  root_pcs_.clear();
  root_user_index_.clear();
  for (size_t i = user_pcs_.size(); i-- > 0;) {
    const uint64_t pc = user_pcs_[i];
    if (pc == 0) continue;
    root_pcs_.push_back(i > 0 && pc != kElidedPc && !Resumes(i) ? pc - 1 : pc);
    root_user_index_.push_back(static_cast<int32_t>(i));
  }
  const auto& k = e.kernel_pcs;
  for (size_t i = std::min(kstack_len, k.size()); i-- > 0;) {
    if (k[i] == 0) continue;
    root_pcs_.push_back(i > 0 ? k[i] - 1 : k[i]);
    root_user_index_.push_back(-1);
  }
}

template <class Emit>
void SampleProcessor::NameFrames(const StackSample& e, runtimes::Runtime* rt, size_t from, Emit&& emit) {
  // The runtime's activations, matched from the leaf: the innermost native
  // frame that runs interpreter frames runs the first group. Counting them
  // first keeps a walk that lost its outermost frames matched; the frames
  // resolved to count them are the ones named (resolved_).
  size_t hosts = 0, host_seen = 0;
  const bool by_pc = rt != nullptr && !e.runtime_frames.empty() && rt->NativePc(e.runtime_frames[0]) != 0;
  if (by_pc) {
    // Each frame in place of the native frame with its pc, matched from the
    // leaf in order; a frame the native walk did not see is left out.
    runtime_by_pc_.assign(root_pcs_.size(), -1);
    size_t j = 0, placed = 0;
    const auto frames = e.runtime_frames;
    for (size_t k = root_pcs_.size(); k-- > 0 && j < frames.size();) {
      const int32_t i = root_user_index_[k];
      if (i < 0 || root_pcs_[k] == kElidedPc) continue;
      const uint64_t pc = user_pcs_[static_cast<size_t>(i)];
      for (size_t m = j; m < frames.size() && m < j + 8; ++m) {
        if (rt->NativePc(frames[m]) != pc) continue;
        runtime_by_pc_[k] = static_cast<int32_t>(m);
        j = m + 1;
        ++placed;
        break;
      }
    }
    if (e.source == 0) runtime_unplaced_ += frames.size() - placed;
  } else if (rt != nullptr) {
    // Each user frame resolved once, here: counted, then named below.
    resolved_.resize(root_pcs_.size());
    for (size_t k = 0; k < root_pcs_.size(); ++k) {
      if (root_user_index_[k] < 0 || root_pcs_[k] == kElidedPc) continue;
      ResolvedFrame& r = resolved_[k];
      r.frame = symbolizer_.ResolveUser(e.pid, root_pcs_[k], e.timestamp_ns);
      r.host = rt->IsHostFrame(e.pid, r.frame.symbol);
      hosts += r.host;
    }
    if (hosts != runtime_groups_.size() && e.source == 0) ++runtime_unmatched_;
  }
  const bool by_host = rt != nullptr && !by_pc;
  for (size_t k = from; k < root_pcs_.size(); ++k) {
    const uint64_t ip = root_pcs_[k];
    const int32_t i = root_user_index_[k];
    if (i < 0) {
      emit(symbolizer_.ResolveKernel(ip), ip);
      continue;
    }
    if (ip == kElidedPc) {
      emit(ElidedFrame(), ip);
      continue;
    }
    if (by_pc && runtime_by_pc_[k] >= 0) {
      // The function this frame ran, in place of the code that ran it (the
      // interpreter's trampoline, a bytecode handler, JIT code).
      // With the functions inlined into it, each a frame of its own.
      rt->NameInlined(e.pid, e.runtime_frames[static_cast<size_t>(runtime_by_pc_[k])], runtime_names_);
      if (!runtime_names_.empty() && !runtime_names_[0].symbol.empty()) {
        for (const SymbolizedFrame& jf : runtime_names_) emit(jf, ip);
        continue;
      }
    }
    SymbolizedFrame f = by_host ? resolved_[k].frame : symbolizer_.ResolveUser(e.pid, ip, e.timestamp_ns);
    if (by_host && resolved_[k].host) {
      const size_t from_leaf = hosts - 1 - host_seen++;
      if (from_leaf < runtime_groups_.size()) {
        // This activation's frames in its place, outermost first.
        const auto [begin, end] = runtime_groups_[from_leaf];
        for (uint32_t j = end; j-- > begin;) emit(rt->Name(e.pid, e.runtime_frames[j]), ip);
        if (begin != end) continue;
      }
    }
    // An interpreted frame: named by the method its frame holds, as its
    // runtime's FrameStepper read it (HotSpot's Method*; the counters keep
    // the java.* names captures have always had).
    if (f.kind == FrameKind::kInterpreted && static_cast<size_t>(i) < user_methods_.size() &&
        user_methods_[static_cast<size_t>(i)] != 0) {
      if (auto name = symbolizer_.InterpretedMethodName(e.pid, user_methods_[static_cast<size_t>(i)], e.timestamp_ns)) {
        f.symbol = *name;
        ++interpreted_named_;
      } else {
        ++interpreted_unnamed_;
      }
    }
    emit(f, ip);
  }
}

bool SampleProcessor::Process(const void* data, size_t size) {
  auto sample = DecodeStackSample(data, size);
  if (!sample) {
    ++malformed_;
    return false;
  }
  Process(*sample);
  return true;
}

void SampleProcessor::Process(const StackSample& e) {
  const uint64_t start_ns = MonotonicNs();
  struct Timer {  // charges the whole sample, whatever path returns
    uint64_t start;
    uint64_t* total;
    ~Timer() { *total += MonotonicNs() - start; }
  } timer{start_ns, &processing_ns_};
  if (e.source != 0) {
    // A value source's stack: its source unwinds it (Stack) and says what to fold.
    auto route = routes_.find(e.source);
    if (route == routes_.end()) {
      ++unrouted_records_;
      return;
    }
    route->second->OnRecord(e, *this);
    return;
  }
  UserStack(e);
  const size_t kstack_len = e.kernel_pcs.size();
  auto ip_at = [&](size_t i) { return e.kernel_pcs[i]; };

  if (kstack_len > 0) ++kernel_samples_;
  if (e.flags & ARCPROF_SAMPLE_KSTACK_ERR) ++truncated_kernel_;
  if (e.flags & ARCPROF_SAMPLE_USTACK_ERR) ++truncated_user_;

  uint64_t hash = 0x9e3779b97f4a7c15ull ^ (static_cast<uint64_t>(e.pid) << 32 | e.tid);
  auto mix = [&hash](uint64_t v) {
    hash ^= v + 0x9e3779b97f4a7c15ull + (hash << 6) + (hash >> 2);
  };
  for (uint64_t pc : user_pcs_) mix(pc);
  // Frames looked up at pc rather than pc - 1 (rare: signal frames).
  for (size_t i = 0; i < user_activation_.size(); ++i)
    if (user_activation_[i]) mix(0xac71ull + i);
  mix(0xfeedull);  // user/kernel boundary
  for (size_t i = 0; i < kstack_len; ++i) mix(ip_at(i));
  if (hash == 0) hash = 1;
  const std::string_view comm = e.comm;
  const uint64_t version = symbolizer_.spaces().ProcessVersion(e.pid);
  // A sample with interpreter frames: the native stack alone does not say
  // which Python code ran (no stack cache, no reused path).
  runtimes::Runtime* const rt = SampleRuntime(e);
  StackSlot& slot = stack_cache_[hash & (stack_cache_.size() - 1)];
  if (rt == nullptr && slot.hash == hash && slot.version == version && version != 0 && slot.epoch == epoch_) {
    window_.threads[slot.thread].tree.Add(slot.leaf, 1, kSamplesValue, 1);
    frames_ += slot.frames;
    ThreadRecord& t = window_.threads[slot.thread];
    if (t.comm != comm) Rename(t, comm, e.timestamp_ns);
    ++samples_;
    ++stack_cache_hits_;
    return;
  }

  RootPcs(e, kstack_len);
  // Before the thread paths and the record are looked up: retiring folds
  // records, which moves them. A sample of the earlier process drained
  // after the new one's (samples of different CPUs race by a few
  // microseconds) stays in the new one's record.
  if (retire_ && e.pid != 0) {
    RetireEarlierIncarnation(e.pid, e.tid, symbolizer_.spaces().Incarnation(e.pid, e.timestamp_ns));
  }
  ThreadPath& path = paths_[((static_cast<uint64_t>(e.pid) << 32 | e.tid) * 0x9e3779b97f4a7c15ull >> 56) &
                            (paths_.size() - 1)];
  size_t reused = 0;
  if (rt == nullptr && path.pid == e.pid && path.tid == e.tid && path.version == version && version != 0 &&
      path.epoch == epoch_) {
    const size_t n = std::min(path.pcs.size(), root_pcs_.size());
    while (reused < n && path.pcs[reused] == root_pcs_[reused]) ++reused;
  } else {
    path.pid = e.pid;
    path.tid = e.tid;
    path.version = version;
    path.epoch = epoch_;
  }
  path.pcs.resize(reused);
  path.frames.resize(reused);
  path.nodes.resize(reused);
  path_frames_reused_ += reused;

  stack_.assign(path.frames.begin(), path.frames.end());
  frames_ += reused;
  bool cacheable = true;
  bool plain_run = version != 0;  // the path grows while each address names one plain frame
  auto add = [&](const SymbolizedFrame& f, uint64_t pc) {
    bool plain = true;
    if (f.kind == FrameKind::kUnknown || f.reason != UnknownReason::kNone) {
      // A marker stands for frames left out, not for code without a name.
      if (f.reason != UnknownReason::kTruncated) ++unknown_frames_[static_cast<size_t>(f.reason)];
      cacheable = false;
      plain = false;
    }
    if (f.kind == FrameKind::kJit || f.kind == FrameKind::kInterpreted || IsRuntimeKind(f.kind)) {
      cacheable = plain = false;
    }
    if (f.inlined) plain = false;
    ++frames_;
    stack_.push_back(InternFrame(f));
    plain_run = plain_run && plain;
    if (plain_run) {
      path.pcs.push_back(pc);
      path.frames.push_back(stack_.back());
    }
    // JIT code with an inlining chain: each inlined method is a frame of its own.
    if (f.inlined) {
      for (std::string_view method : *f.inlined) stack_.push_back(InternInlined(f, method));
    }
  };
  NameFrames(e, rt, reused, add);

  const uint32_t thread = window_.ThreadIndex(e.pid, e.tid);
  CallTree& tree = window_.threads[thread].tree;
  // The path's frames map one to one onto the first entries of stack_.
  uint32_t node = reused > 0 ? path.nodes[reused - 1] : 0;
  for (size_t j = reused; j < stack_.size(); ++j) {
    node = tree.Child(node, stack_[j]);
    if (j < path.frames.size()) path.nodes.push_back(node);
  }
  tree.Add(node, 1, kSamplesValue, 1);
  if (cacheable && version != 0) {
    slot = StackSlot{hash, version, epoch_, thread, node, static_cast<uint32_t>(stack_.size())};
  }
  ThreadRecord& t = window_.threads[thread];
  if (t.comm != comm) Rename(t, comm, e.timestamp_ns);
  ++samples_;
}

SourceStack SampleProcessor::Stack(const StackSample& e) {
  UserStack(e);
  SourceStack out;
  out.pid = e.pid;
  out.tid = e.tid;
  out.t_ns = e.timestamp_ns;
  out.comm = e.comm;
  // The user frames named as a sample's are (NameFrames): interpreter
  // frames in place of the native frames that run them.
  runtimes::Runtime* const rt = SampleRuntime(e);
  RootPcs(e, 0);
  out.user.reserve(root_pcs_.size());
  NameFrames(e, rt, 0, [&out](const SymbolizedFrame& f, uint64_t) { out.user.push_back(f); });
  // The stack is taken inside a tracepoint or probe: its leaf frames are
  // the BPF program and the tracing glue, not the workload.
  const auto& k = e.kernel_pcs;
  size_t leaf = 0;
  for (; leaf < k.size(); ++leaf) {
    const uint64_t ip = k[leaf];
    const std::string_view name = ip ? symbolizer_.ResolveKernel(leaf > 0 ? ip - 1 : ip).symbol : "";
    if (!name.starts_with("bpf_") && !name.starts_with("__bpf_") &&
        !name.starts_with("__traceiter_")) {
      break;
    }
  }
  for (size_t i = k.size(); i-- > leaf;) {
    uint64_t ip = k[i];
    if (ip == 0) continue;
    if (i > 0) ip -= 1;
    out.kernel.push_back(symbolizer_.ResolveKernel(ip));
  }
  return out;
}

void SampleProcessor::Keep(uint32_t source, uint64_t key, const SourceStack& stack,
                           std::span<const LeafFrame> leaf) {
  KeptStack& kept = kept_stacks_[SourceKey{source, key}];
  kept.pid = stack.pid;
  kept.tid = stack.tid;
  kept.born = symbolizer_.spaces().Incarnation(stack.pid, stack.t_ns);
  kept.seen_ns = stack.t_ns;
  kept.comm = std::string(stack.comm);
  const ProcessInfo* process = symbolizer_.spaces().Process(stack.pid);
  kept.process_comm = stack.tid == stack.pid ? kept.comm : process != nullptr ? process->comm : std::string();
  ReleaseFrames(kept.frames);
  kept.frames.clear();
  auto add = [&](const SymbolizedFrame& f) {
    FrameRecord record;
    record.module = kept_modules_.InternModule(f.module);
    record.symbol = std::string(f.symbol);
    record.address = StoredAddress(f);  // the same frame as on CPU
    record.kind = f.kind;
    record.reason = f.reason;
    kept.frames.push_back(KeepFrame(FrameRecord(record)));
    if (f.inlined) {
      for (std::string_view method : *f.inlined) {
        FrameRecord inlined;
        inlined.module = record.module;
        inlined.symbol = std::string(method);
        inlined.kind = f.kind;
        inlined.inlined = true;
        kept.frames.push_back(KeepFrame(std::move(inlined)));
      }
    }
  };
  for (const SymbolizedFrame& f : stack.user) add(f);
  for (const SymbolizedFrame& f : stack.kernel) add(f);
  for (const LeafFrame& f : leaf) {
    FrameRecord pseudo;
    pseudo.module = kept_modules_.InternModule(f.module);
    pseudo.symbol = std::string(f.symbol);
    pseudo.kind = f.kind;
    kept.frames.push_back(KeepFrame(std::move(pseudo)));
  }
}

bool SampleProcessor::Add(uint32_t source, uint64_t key, std::span<const SourceValue> values) {
  auto it = kept_stacks_.find(SourceKey{source, key});
  if (it == kept_stacks_.end()) return false;
  const KeptStack& kept = it->second;
  uint32_t thread;
  if (RetireEarlierIncarnation(kept.pid, kept.tid, kept.born)) {
    thread = window_.ThreadIndex(kept.pid, kept.tid);
  } else {
    // A process that exited, its pid now another's whose record the window
    // holds: its last values go where its record was folded.
    ThreadRecord earlier;
    earlier.pid = kept.pid;
    earlier.tid = kept.tid;
    earlier.comm = kept.comm;
    earlier.process_comm = kept.process_comm;
    ThreadRecord g = retire_(earlier);
    thread = window_.ThreadIndex(g.pid, g.tid);
    ThreadRecord& t = window_.threads[thread];
    if (t.comm.empty()) {
      t.comm = g.comm;
      t.process_comm = g.process_comm;
      t.cmdline = g.cmdline;
    }
  }
  CallTree& tree = window_.threads[thread].tree;
  uint32_t node = 0;
  for (uint32_t f : kept.frames) {
    const FrameRecord& frame = kept_frames_[f];
    node = tree.Child(node, window_.frames.Intern(kept_modules_.module(frame.module), frame));
  }
  for (const SourceValue& v : values) {
    if (v.value != 0) tree.Add(node, 0, window_.DeclareValue(v.type.type()), v.value);
  }
  // Kept stacks are added in no particular order: the record takes the name
  // of the latest seen (a program that renames itself after exec can be
  // switched out under its exec name first).
  ThreadRecord& t = window_.threads[thread];
  if (t.comm.empty()) {
    Rename(t, kept.comm, kept.seen_ns);
  } else if (t.comm != kept.comm) {
    const auto renamed = renamed_ns_.find(static_cast<uint64_t>(t.pid) << 32 | t.tid);
    if (renamed == renamed_ns_.end() || kept.seen_ns > renamed->second) Rename(t, kept.comm, kept.seen_ns);
  }
  return true;
}

std::vector<StackSink::Kept> SampleProcessor::KeptKeys(uint32_t source) const {
  std::vector<Kept> out;
  for (const auto& [k, stack] : kept_stacks_) {
    if (k.source == source) out.push_back({k.key, stack.pid, stack.tid, stack.seen_ns});
  }
  return out;
}

bool SampleProcessor::Keeps(uint32_t source, uint64_t key) const {
  return kept_stacks_.count(SourceKey{source, key}) != 0;
}

void SampleProcessor::Forget(uint32_t source, uint64_t key) {
  auto it = kept_stacks_.find(SourceKey{source, key});
  if (it == kept_stacks_.end()) return;
  ReleaseFrames(it->second.frames);
  kept_stacks_.erase(it);
}

void SampleProcessor::Route(uint32_t source, ValueSource* to) {
  if (to == nullptr) routes_.erase(source);
  else routes_[source] = to;
}

uint32_t SampleProcessor::KeepFrame(FrameRecord&& frame) {
  auto found = kept_ids_.find(frame);
  if (found != kept_ids_.end()) {
    ++kept_refs_[found->second];
    return found->second;
  }
  uint32_t id;
  if (!kept_free_.empty()) {
    id = kept_free_.back();
    kept_free_.pop_back();
    kept_frames_[id] = std::move(frame);
    kept_refs_[id] = 1;
  } else {
    id = static_cast<uint32_t>(kept_frames_.size());
    kept_frames_.push_back(std::move(frame));
    kept_refs_.push_back(1);
  }
  kept_ids_.emplace(kept_frames_[id], id);
  return id;
}

void SampleProcessor::ReleaseFrames(const std::vector<uint32_t>& ids) {
  for (uint32_t id : ids) {
    if (--kept_refs_[id] != 0) continue;
    kept_ids_.erase(kept_frames_[id]);
    kept_frames_[id] = FrameRecord();  // its strings freed now
    kept_free_.push_back(id);
  }
}

// A thread's first sample, or a new name (exec): the process's command line
// and name are taken now, while the symbolizer still knows the process (it
// forgets processes some time after they exit).
model::ProcessIdentity ProcessIdentityOf(const ProcessInfo& p) {
  model::ProcessIdentity id;
  id.container_id = p.cgroup.container_id;
  id.container_runtime = p.cgroup.container_runtime;
  id.pod_uid = p.cgroup.pod_uid;
  id.qos_class = p.cgroup.qos_class;
  id.cgroup = p.cgroup.cgroup;
  id.service_name = model::ServiceName(p.cgroup.unit, p.otel_service_name, p.cgroup.container_id, p.comm);
  id.ns_pid = p.ns_pid;
  return id;
}

bool SampleProcessor::RetireEarlierIncarnation(uint32_t pid, uint32_t tid, uint64_t born) {
  if (!retire_ || pid == 0) return true;
  auto [it, inserted] = incarnations_.try_emplace(static_cast<uint64_t>(pid) << 32 | tid, born);
  if (inserted || born == it->second) return true;
  if (born < it->second) return false;
  it->second = born;
  // The key is in incarnations_ only while the window holds its record.
  window_.FoldThreads([&](const ThreadRecord& t) -> std::optional<ThreadRecord> {
    if (t.pid != pid || t.tid != tid) return std::nullopt;
    return retire_(t);
  });
  ++epoch_;  // the stack cache and thread paths index threads and their nodes
  ++incarnations_retired_;
  return true;
}

void SampleProcessor::Rename(ThreadRecord& t, std::string_view comm, uint64_t t_ns) {
  t.comm = comm;
  renamed_ns_[static_cast<uint64_t>(t.pid) << 32 | t.tid] = t_ns;
  if (const ProcessInfo* p = symbolizer_.spaces().Process(t.pid)) {
    t.cmdline = p->cmdline;
    t.process_comm = p->comm;
    t.identity = ProcessIdentityOf(*p);
    t.process_start_ns = p->start_ns;
  }
  // The leader's name in the sample is the process's name at that time, even
  // when the exec event that renamed it is not applied yet.
  if (t.tid == t.pid) t.process_comm = comm;
}

size_t SampleProcessor::WindowBytes() const {
  // An unordered_map's entry: its node and its bucket.
  constexpr size_t kIndexEntry = 40;
  size_t bytes = 0;
  for (const ThreadRecord& t : window_.threads) {
    bytes += sizeof(ThreadRecord) + t.comm.capacity() + t.process_comm.capacity() + t.cmdline.capacity() +
             t.identity.cgroup.capacity() + t.identity.container_id.capacity() + t.identity.service_name.capacity();
    bytes += t.tree.MemoryBytes();
  }
  for (const FrameRecord& f : window_.frames.all()) {
    bytes += sizeof(FrameRecord) + kIndexEntry + (f.symbol.size() > 15 ? f.symbol.capacity() + 1 : 0);
  }
  for (size_t m = 0; m < window_.frames.module_count(); ++m) bytes += window_.frames.module(m).capacity() + 48;
  bytes += frame_keys_.capacity() * sizeof(FrameKey) + frame_key_ids_.capacity() * sizeof(uint32_t) +
           frame_index_.bytes();
  bytes += renamed_ns_.size() * (2 * sizeof(uint64_t) + kIndexEntry);
  return bytes;
}

size_t SampleProcessor::FoldThreads(
    const std::function<std::optional<ThreadRecord>(const ThreadRecord&)>& group_of) {
  const size_t folded = window_.FoldThreads([&](const ThreadRecord& t) {
    std::optional<ThreadRecord> g = group_of(t);
    if (g) {
      incarnations_.erase(static_cast<uint64_t>(t.pid) << 32 | t.tid);
      renamed_ns_.erase(static_cast<uint64_t>(t.pid) << 32 | t.tid);
    }
    return g;
  });
  if (folded > 0) ++epoch_;  // the stack cache and thread paths index threads and their nodes
  return folded;
}

Profile SampleProcessor::TakeWindow() {
  for (ThreadRecord& t : window_.threads) {
    if (t.pid == 0) {
      t.comm = "swapper";
      t.process_comm = "swapper";
      continue;
    }
    if (const ProcessInfo* p = symbolizer_.spaces().Process(t.pid)) {
      t.cmdline = p->cmdline;
      t.process_comm = p->comm;
      t.identity = ProcessIdentityOf(*p);
    }
    if (t.process_comm.empty() && t.tid == t.pid) t.process_comm = t.comm;
    if (t.comm.empty()) t.comm = std::string(symbolizer_.spaces().ThreadName(t.pid, t.tid));
  }
  // Threads whose leader never ran: borrow the process name from a sibling.
  std::unordered_map<uint32_t, std::string> leader_comm;
  for (const ThreadRecord& t : window_.threads) {
    if (!t.process_comm.empty()) leader_comm.emplace(t.pid, t.process_comm);
  }
  for (ThreadRecord& t : window_.threads) {
    if (t.process_comm.empty()) {
      auto it = leader_comm.find(t.pid);
      t.process_comm = it != leader_comm.end() ? it->second : t.comm;
    }
  }
  window_.counters["samples_total"] += static_cast<int64_t>(samples_);
  if (unrouted_records_ > 0) {
    window_.counters["source_records_unrouted"] += static_cast<int64_t>(unrouted_records_);
    unrouted_records_ = 0;
  }
  window_.counters["frames_total"] += static_cast<int64_t>(frames_);
  window_.counters["samples_malformed"] += static_cast<int64_t>(malformed_);
  window_.counters["truncated_stacks.kernel_stack_error"] += static_cast<int64_t>(truncated_kernel_);
  window_.counters["truncated_stacks.user_stack_error"] += static_cast<int64_t>(truncated_user_);
  // Where arcprof's own time goes (docs/performance.md reports these).
  window_.counters["processing_ns"] += static_cast<int64_t>(processing_ns_);
  window_.counters["stack_cache_hits"] += static_cast<int64_t>(stack_cache_hits_);
  window_.counters["stack_prefix_frames_reused"] += static_cast<int64_t>(path_frames_reused_);
  window_.counters["unwind_ns"] += static_cast<int64_t>(unwind_ns_);
  window_.counters["unwound_samples"] += static_cast<int64_t>(unwound_);
  window_.counters["leaf_frames_repaired"] += static_cast<int64_t>(leaf_repairs_);
  window_.counters["stacks_spliced_with_frame_pointers"] += static_cast<int64_t>(spliced_);
  if (stacks_elided_ > 0) {
    window_.counters["deep_stacks.middle_elided"] += static_cast<int64_t>(stacks_elided_);
    window_.counters["deep_stacks.frames_elided"] += static_cast<int64_t>(frames_elided_);
  }
  if (runtime_samples_ > 0) {
    window_.counters["runtimes.samples"] += static_cast<int64_t>(runtime_samples_);
    window_.counters["runtimes.activations_unmatched"] += static_cast<int64_t>(runtime_unmatched_);
    if (runtime_unplaced_) window_.counters["runtimes.frames_unplaced"] += static_cast<int64_t>(runtime_unplaced_);
    runtime_unplaced_ = 0;
    static constexpr const char* kStatus[] = {"complete", "max depth", "no thread state", "read fault", "bad chain"};
    static_assert(std::size(kStatus) == std::tuple_size_v<decltype(runtime_status_)>);
    for (size_t s = 0; s < runtime_status_.size(); ++s) {
      if (runtime_status_[s] == 0) continue;
      window_.counters[std::string(s == 0 ? "runtimes.walks." : "runtimes.truncated_walks.") + kStatus[s]] +=
          static_cast<int64_t>(runtime_status_[s]);
    }
    runtime_samples_ = runtime_unmatched_ = 0;
    runtime_status_.fill(0);
  }
  if (interpreted_named_) window_.counters["java.interpreted_frames_named"] += static_cast<int64_t>(interpreted_named_);
  if (interpreted_unnamed_) {
    window_.counters["java.interpreted_frames_unnamed"] += static_cast<int64_t>(interpreted_unnamed_);
  }
  for (size_t s = 0; s < unwind_stops_.size(); ++s) {
    if (unwind_stops_[s] == 0) continue;
    const auto stop = static_cast<UnwindStop>(s);
    const std::string prefix = stop == UnwindStop::kComplete ? "unwound_stacks." : "truncated_stacks.";
    window_.counters[prefix + UnwindStopName(stop)] += static_cast<int64_t>(unwind_stops_[s]);
  }
  for (int r = 1; r < kUnknownReasonCount; ++r) {
    if (unknown_frames_[static_cast<size_t>(r)] == 0) continue;
    window_.counters["unknown_frames." +
                      std::string(UnknownReasonName(static_cast<UnknownReason>(r)))] +=
        static_cast<int64_t>(unknown_frames_[static_cast<size_t>(r)]);
  }
  if (incarnations_retired_ > 0) {
    window_.counters["threads_of_reused_pids_retired"] += static_cast<int64_t>(incarnations_retired_);
    incarnations_retired_ = 0;
  }
  Profile out = std::move(window_);
  window_ = Profile();
  incarnations_.clear();
  renamed_ns_.clear();
  // Every cached index points into the window just handed over.
  frame_index_.Clear();
  frame_keys_.clear();
  frame_key_ids_.clear();
  ++epoch_;
  total_samples_ += samples_;
  total_malformed_ += malformed_;
  samples_ = frames_ = malformed_ = kernel_samples_ = truncated_kernel_ = truncated_user_ = 0;
  stack_cache_hits_ = leaf_repairs_ = processing_ns_ = unwind_ns_ = unwound_ = spliced_ = path_frames_reused_ = 0;
  stacks_elided_ = frames_elided_ = 0;
  interpreted_named_ = interpreted_unnamed_ = 0;
  unwind_stops_.fill(0);
  unknown_frames_.fill(0);
  return out;
}

}  // namespace arcprof
