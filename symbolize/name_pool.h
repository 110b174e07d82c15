// Interned names whose views stay valid for the pool's lifetime. The symbol
// sources (ELF files, JIT sources) may be dropped when their processes are
// long gone; the names they gave out live on here, because frames are
// compared by the address of their name (SampleProcessor interns them so).
// Only names that some answer carried are kept: the pool grows with the
// distinct functions sampled, not with the size of the symbol tables.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "common/string_hash.h"

namespace arcprof {

class NamePool {
 public:
  std::string_view Intern(std::string_view name) {
    if (name.empty()) return {};
    // Looked up by view first: a name already held (almost every call)
    // costs no allocation.
    if (auto it = names_.find(name); it != names_.end()) return *it;
    bytes_ += name.size() + kEntryBytes;
    return *names_.emplace(name).first;
  }

  // A list of names (a JIT inlining chain), interned as a whole.
  const std::vector<std::string_view>* InternList(const std::vector<std::string_view>& list) {
    std::string key;
    for (std::string_view name : list) {
      key.append(name);
      key.push_back('\0');
    }
    const size_t key_bytes = key.size();
    auto [it, added] = lists_.try_emplace(std::move(key));
    if (added) {
      bytes_ += key_bytes + kEntryBytes + list.size() * sizeof(std::string_view);
      it->second.reserve(list.size());
      for (std::string_view name : list) it->second.push_back(Intern(name));
    }
    return &it->second;
  }

  size_t size() const { return names_.size(); }
  // About how many heap bytes the pool holds (names, lists, their nodes).
  size_t bytes() const { return bytes_; }
  // Forgets every name: each view handed out dangles afterwards, so only a
  // caller that holds none may call it (Symbolizer::ReleaseNames).
  void Clear() {
    names_ = {};
    lists_ = {};
    bytes_ = 0;
  }

 private:
  std::unordered_set<std::string, TransparentStringHash, std::equal_to<>> names_;  // node-based: views stay valid
  std::unordered_map<std::string, std::vector<std::string_view>> lists_;
  static constexpr size_t kEntryBytes = 64;  // hash node, std::string, bucket
  size_t bytes_ = 0;
};

}  // namespace arcprof
