// Kernel text symbols from /proc/kallsyms text.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace arcprof {

struct KernelSymbol {
  uint64_t start = 0;
  uint64_t end = 0;         // exclusive: the next symbol's start (capped, see Parse)
  std::string_view name;    // valid while the table lives
  std::string_view module;  // "vmlinux" or the kernel module's name
};

class KernelSymbols {
 public:
  // The largest extent given to a symbol that is followed by another module's
  // symbol or by nothing: kallsyms has no sizes, and beyond a module's last
  // symbol there may be unrelated memory.
  static constexpr uint64_t kMaxTailExtent = 64 * 1024;

  // Parses kallsyms text: keeps text symbols (t, T, w, W), sorts them,
  // and gives each the extent up to the next symbol. Malformed lines are
  // skipped. Fails only when no line at all could be parsed.
  static Result<KernelSymbols> Parse(std::string_view text);

  // The symbol covering addr, if any.
  std::optional<KernelSymbol> Find(uint64_t addr) const;

  // True when every address was zero: kernel.kptr_restrict hides them from
  // this user, so nothing can be resolved.
  bool addresses_hidden() const { return addresses_hidden_; }
  size_t size() const { return starts_.size(); }
  size_t malformed_lines() const { return malformed_lines_; }
  // Heap bytes the table holds (a daemon's -v accounting).
  size_t bytes() const;

 private:
  // Compact: a running kernel has ~120,000 text symbols, and a daemon holds
  // them for days. One blob of the kept names (not the whole kallsyms text),
  // and per symbol its start, where its name begins in the blob (it ends
  // where the next one begins) and its module: 14 bytes a symbol instead of
  // 48 plus the 5 MB text (~5 MB in all instead of ~11 MB).
  std::unique_ptr<std::string> names_;    // owns the bytes the views point into
  std::vector<uint64_t> starts_;          // sorted
  std::vector<uint32_t> name_offsets_;    // size() + 1 entries
  std::vector<uint16_t> module_of_;       // index into modules_
  std::vector<std::string> modules_;      // element addresses survive moves of the table
  bool addresses_hidden_ = false;
  size_t malformed_lines_ = 0;
};

}  // namespace arcprof
