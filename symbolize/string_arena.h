// Append-only storage for many short strings that live and die together (a
// JIT source's method names): one allocation per 64 KiB instead of one (or
// three, with a hash node) per string, and freeing it all is a few frees.
// Views handed out stay valid for the arena's lifetime. No deduplication.
#pragma once

#include <cstring>
#include <memory>
#include <string_view>
#include <vector>

namespace arcprof {

class StringArena {
 public:
  std::string_view Store(std::string_view s) {
    if (s.empty()) return {};
    if (s.size() > kBlockBytes / 4) {
      auto& big = large_.emplace_back(std::make_unique_for_overwrite<char[]>(s.size()));
      std::memcpy(big.get(), s.data(), s.size());
      bytes_ += s.size();
      return {big.get(), s.size()};
    }
    if (blocks_.empty() || used_ + s.size() > kBlockBytes) {
      blocks_.push_back(std::make_unique_for_overwrite<char[]>(kBlockBytes));
      used_ = 0;
      bytes_ += kBlockBytes;
    }
    char* at = blocks_.back().get() + used_;
    std::memcpy(at, s.data(), s.size());
    used_ += s.size();
    return {at, s.size()};
  }
  // Heap bytes held.
  size_t bytes() const { return bytes_; }

 private:
  static constexpr size_t kBlockBytes = 64u << 10;
  std::vector<std::unique_ptr<char[]>> blocks_;
  std::vector<std::unique_ptr<char[]>> large_;  // strings past a quarter block, one each
  size_t used_ = 0;  // in blocks_.back()
  size_t bytes_ = 0;
};

}  // namespace arcprof
