#include "loader/sample_processor.h"

#include <algorithm>
#include <cstring>

#include "events.h"

namespace arcprof {

size_t SampleProcessor::FrameKeyHash::operator()(const FrameKey& k) const {
  size_t h = reinterpret_cast<uintptr_t>(k.module);
  h = h * 0x9e3779b97f4a7c15ull ^ reinterpret_cast<uintptr_t>(k.symbol);
  h = h * 0x9e3779b97f4a7c15ull ^ k.address;
  return h * 0x9e3779b97f4a7c15ull ^ k.kind_reason;
}

SampleProcessor::SampleProcessor(Symbolizer& symbolizer, Profile& profile)
    : symbolizer_(symbolizer), profile_(profile) {
  stack_.reserve(2 * ARCPROF_MAX_STACK);
}

uint32_t SampleProcessor::InternFrame(const SymbolizedFrame& f) {
  const FrameKey key{f.module.data(), f.symbol.data(), f.address,
                     static_cast<uint16_t>(static_cast<unsigned>(f.kind) << 8 |
                                           static_cast<unsigned>(f.reason))};
  auto it = frame_ids_.find(key);
  if (it != frame_ids_.end()) return it->second;
  FrameRecord record;
  record.module = std::string(f.module);
  record.symbol = std::string(f.symbol);
  record.address = f.address;
  record.kind = f.kind;
  record.reason = f.reason;
  const uint32_t id = profile_.frames.Intern(record);
  frame_ids_.emplace(key, id);
  return id;
}

bool SampleProcessor::Process(const void* data, size_t size) {
  sample_event e;
  if (size < sizeof(e)) {
    ++malformed_;
    return false;
  }
  memcpy(&e, data, sizeof(e));
  const size_t nframes = static_cast<size_t>(e.kstack_len) + e.ustack_len;
  if (e.kstack_len > ARCPROF_MAX_STACK || e.ustack_len > ARCPROF_MAX_STACK ||
      sizeof(e) + nframes * sizeof(uint64_t) > size) {
    ++malformed_;
    return false;
  }
  const auto* ips = reinterpret_cast<const uint8_t*>(data) + sizeof(e);
  auto ip_at = [&](size_t i) {
    uint64_t v;
    memcpy(&v, ips + i * sizeof(uint64_t), sizeof(v));
    return v;
  };

  // Root first: the user stack from its outermost frame, then the kernel stack.
  // Frames after the leaf are return addresses: look up ip-1 so that a call at
  // the very end of a function is attributed to that function.
  stack_.clear();
  auto add = [&](const SymbolizedFrame& f) {
    if (f.kind == FrameKind::kUnknown || f.reason != UnknownReason::kNone) {
      ++unknown_frames_[static_cast<size_t>(f.reason)];
    }
    ++frames_;
    stack_.push_back(InternFrame(f));
  };
  for (size_t i = e.ustack_len; i-- > 0;) {
    uint64_t ip = ip_at(e.kstack_len + i);
    if (ip == 0) continue;
    if (i > 0) ip -= 1;
    add(symbolizer_.ResolveUser(e.pid, ip, e.timestamp_ns));
  }
  for (size_t i = e.kstack_len; i-- > 0;) {
    uint64_t ip = ip_at(i);
    if (ip == 0) continue;
    if (i > 0) ip -= 1;
    add(symbolizer_.ResolveKernel(ip));
  }
  if (e.kstack_len > 0) ++kernel_samples_;
  if (e.flags & ARCPROF_SAMPLE_KSTACK_ERR) ++truncated_kernel_;
  if (e.flags & ARCPROF_SAMPLE_USTACK_ERR) ++truncated_user_;

  const uint32_t thread = profile_.ThreadIndex(e.pid, e.tid);
  profile_.trees[thread].AddStack(stack_, 1);
  char comm[ARCPROF_COMM_LEN + 1] = {};
  memcpy(comm, e.comm, ARCPROF_COMM_LEN);
  ThreadRecord& t = profile_.threads[thread];
  if (t.comm != comm) t.comm = comm;
  ++samples_;
  return true;
}

void SampleProcessor::Finish() {
  for (ThreadRecord& t : profile_.threads) {
    if (t.pid == 0) {
      t.comm = "swapper";
      t.process_comm = "swapper";
      continue;
    }
    if (const ProcessInfo* p = symbolizer_.Process(t.pid)) {
      t.cmdline = p->cmdline;
      t.process_comm = p->comm;
    }
    if (t.process_comm.empty() && t.tid == t.pid) t.process_comm = t.comm;
    if (t.comm.empty()) t.comm = std::string(symbolizer_.ThreadName(t.pid, t.tid));
  }
  // Threads whose leader never ran: borrow the process name from a sibling.
  std::unordered_map<uint32_t, std::string> leader_comm;
  for (const ThreadRecord& t : profile_.threads) {
    if (!t.process_comm.empty()) leader_comm.emplace(t.pid, t.process_comm);
  }
  for (ThreadRecord& t : profile_.threads) {
    if (t.process_comm.empty()) {
      auto it = leader_comm.find(t.pid);
      t.process_comm = it != leader_comm.end() ? it->second : t.comm;
    }
  }
  profile_.counters["samples_total"] += static_cast<int64_t>(samples_);
  profile_.counters["frames_total"] += static_cast<int64_t>(frames_);
  profile_.counters["samples_malformed"] += static_cast<int64_t>(malformed_);
  profile_.counters["truncated_stacks.kernel_stack_error"] += static_cast<int64_t>(truncated_kernel_);
  profile_.counters["truncated_stacks.user_stack_error"] += static_cast<int64_t>(truncated_user_);
  for (int r = 1; r < kUnknownReasonCount; ++r) {
    if (unknown_frames_[static_cast<size_t>(r)] == 0) continue;
    profile_.counters["unknown_frames." +
                      std::string(UnknownReasonName(static_cast<UnknownReason>(r)))] +=
        static_cast<int64_t>(unknown_frames_[static_cast<size_t>(r)]);
  }
}

}  // namespace arcprof
