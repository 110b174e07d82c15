// What every runtime's naming shares (runtimes/README.md): the process's
// memory read through /proc/PID/mem, bounded; names interned under a byte
// budget (views stay valid for the runtime's life); the cache of named
// frames by (pid, object, stamp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

#include "bpf/runtimes.h"
#include "common/frame.h"
#include "common/scoped_fd.h"

namespace arcprof::runtimes {

// One process's memory, opened at the first read; a process that cannot be
// opened is not tried again.
class ProcessMemory {
 public:
  bool Read(uint32_t pid, uint64_t addr, void* out, size_t n);

 private:
  ScopedFd mem_;
  bool failed_ = false;
};

// Interned names; a name past the budget is refused and counted.
class NameStore {
 public:
  explicit NameStore(size_t max_bytes) : max_bytes_(max_bytes) {}
  std::optional<std::string_view> Intern(std::string&& s);
  uint64_t TakeOverBudget() {
    const uint64_t n = over_budget_;
    over_budget_ = 0;
    return n;
  }
  size_t HeldBytes() const { return bytes_ + names_.size() * 48; }

 private:
  std::unordered_set<std::string> names_;  // node-based: views stay valid
  size_t bytes_ = 0, max_bytes_;
  uint64_t over_budget_ = 0;
};

// A frame's name, by the object the sampler read and its stamp.
struct NamedFrame {
  std::string_view symbol, file;
  uint64_t line = 0;
};
struct NameKey {
  uint32_t pid;
  uint64_t object, stamp;
  bool operator==(const NameKey&) const = default;
};
struct NameKeyHash {
  size_t operator()(const NameKey& k) const {
    return (k.object * 0x9e3779b97f4a7c15ull) ^ (k.stamp * 0xbf58476d1ce4e5b9ull) ^ k.pid;
  }
};

// The names of frames by the object the sampler read and its stamp, each a
// runtime's `Value` (NamedFrame, or more: Python keeps its code object's line
// table), read once and cached. Bounded by entries and by the bytes the
// values hold beyond themselves (`Value::HeldBytes()`, when it has one): past
// either it starts over.
template <typename Value>
class FrameNameCache {
 public:
  FrameNameCache(size_t max_entries, size_t max_bytes = SIZE_MAX) : max_entries_(max_entries), max_bytes_(max_bytes) {}

  // The name of `frame` in pid: cached, else read by `read(proc, value)`
  // from pid's entry of `procs` (a map by pid). nullptr with `*reason` when
  // it cannot be had: kNoProcess (pid not recognized), kNoSymbols (the read
  // failed: the runtime counts why).
  template <typename Procs, typename Read>
  const Value* Find(uint32_t pid, const runtime_frame& frame, Procs& procs, Read&& read, UnknownReason* reason) {
    const NameKey key{pid, frame.code, frame.stamp};
    if (auto it = cache_.find(key); it != cache_.end()) return &it->second;
    auto p = procs.find(pid);
    if (p == procs.end()) {
      *reason = UnknownReason::kNoProcess;
      return nullptr;
    }
    Value v;
    if (!read(p->second, v)) {
      *reason = UnknownReason::kNoSymbols;
      return nullptr;
    }
    const size_t bytes = BytesOf(v);
    if (cache_.size() >= max_entries_ || bytes_ + bytes > max_bytes_) {
      cache_.clear();
      bytes_ = 0;
    }
    bytes_ += bytes;
    return &cache_.emplace(key, std::move(v)).first->second;
  }

  // pid exited: its names go.
  void Forget(uint32_t pid) {
    std::erase_if(cache_, [this, pid](const auto& kv) {
      if (kv.first.pid != pid) return false;
      bytes_ -= BytesOf(kv.second);
      return true;
    });
  }

  size_t HeldBytes() const { return cache_.size() * (sizeof(NameKey) + sizeof(Value) + 32) + bytes_; }

 private:
  static size_t BytesOf(const Value& v) {
    if constexpr (requires { v.HeldBytes(); }) {
      return v.HeldBytes();
    } else {
      return 0;
    }
  }

  std::unordered_map<NameKey, Value, NameKeyHash> cache_;
  size_t max_entries_, max_bytes_;
  size_t bytes_ = 0;
};

}  // namespace arcprof::runtimes
