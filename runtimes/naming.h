// What every runtime's naming shares (runtimes/README.md): the process's
// memory read through /proc/PID/mem, bounded; names interned under a byte
// budget (views stay valid for the runtime's life); the cache of named
// frames by (pid, object, stamp).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

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
using NameCache = std::unordered_map<NameKey, NamedFrame, NameKeyHash>;

}  // namespace arcprof::runtimes
