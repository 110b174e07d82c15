#include "symbolize/kallsyms.h"

#include <algorithm>
#include <charconv>

namespace arcprof {
namespace {

constexpr std::string_view kVmlinux = "vmlinux";

bool IsTextType(char type) { return type == 't' || type == 'T' || type == 'w' || type == 'W'; }

// Among aliases at one address, prefer a global symbol, then one without the
// "__pfx_"/"__cfi_" padding prefixes, then the first seen.
int AliasRank(char type, std::string_view name) {
  int rank = 0;
  if (type == 'T') rank += 2;
  if (name.substr(0, 6) != "__pfx_" && name.substr(0, 6) != "__cfi_") rank += 4;
  return rank;
}

}  // namespace

Result<KernelSymbols> KernelSymbols::Parse(std::string_view input) {
  KernelSymbols table;
  table.text_ = std::make_unique<std::string>(input);
  std::string_view text = *table.text_;

  struct Parsed {
    KernelSymbol symbol;
    int rank;
  };
  std::vector<Parsed> parsed;
  size_t lines_ok = 0;
  bool any_nonzero = false;
  while (!text.empty()) {
    size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);
    if (line.empty()) continue;
    // "ffffffff821f94a0 T schedule" or "ffffffffc0a01000 t foo\t[module]"
    uint64_t addr = 0;
    auto [ptr, ec] = std::from_chars(line.data(), line.data() + line.size(), addr, 16);
    size_t pos = static_cast<size_t>(ptr - line.data());
    if (ec != std::errc() || pos == 0 || pos + 3 > line.size() || line[pos] != ' ' ||
        line[pos + 2] != ' ') {
      ++table.malformed_lines_;
      continue;
    }
    const char type = line[pos + 1];
    std::string_view rest = line.substr(pos + 3);
    std::string_view module = kVmlinux;
    size_t tab = rest.find('\t');
    std::string_view name = rest.substr(0, tab);
    if (tab != std::string_view::npos) {
      std::string_view mod = rest.substr(tab + 1);
      if (mod.size() < 3 || mod.front() != '[' || mod.back() != ']') {
        ++table.malformed_lines_;
        continue;
      }
      module = mod.substr(1, mod.size() - 2);
    }
    if (name.empty()) {
      ++table.malformed_lines_;
      continue;
    }
    ++lines_ok;
    if (addr != 0) any_nonzero = true;
    if (!IsTextType(type)) continue;
    parsed.push_back({KernelSymbol{addr, 0, name, module}, AliasRank(type, name)});
  }
  if (lines_ok == 0) return MakeError("kallsyms: no parsable line (expected 'ADDRESS TYPE NAME')");
  if (!any_nonzero) {
    table.addresses_hidden_ = true;
    return table;
  }

  std::stable_sort(parsed.begin(), parsed.end(), [](const Parsed& a, const Parsed& b) {
    if (a.symbol.start != b.symbol.start) return a.symbol.start < b.symbol.start;
    return a.rank > b.rank;
  });
  table.symbols_.reserve(parsed.size());
  for (const Parsed& p : parsed) {
    if (p.symbol.start == 0) continue;
    if (!table.symbols_.empty() && table.symbols_.back().start == p.symbol.start) continue;
    table.symbols_.push_back(p.symbol);
  }
  for (size_t i = 0; i < table.symbols_.size(); ++i) {
    KernelSymbol& s = table.symbols_[i];
    if (i + 1 < table.symbols_.size()) {
      const KernelSymbol& next = table.symbols_[i + 1];
      s.end = next.start;
      if (next.module != s.module) s.end = std::min(s.end, s.start + kMaxTailExtent);
    } else {
      s.end = s.start + kMaxTailExtent < s.start ? UINT64_MAX : s.start + kMaxTailExtent;
    }
  }
  return table;
}

const KernelSymbol* KernelSymbols::Find(uint64_t addr) const {
  auto it = std::upper_bound(symbols_.begin(), symbols_.end(), addr,
                             [](uint64_t a, const KernelSymbol& s) { return a < s.start; });
  if (it == symbols_.begin()) return nullptr;
  --it;
  return addr < it->end ? &*it : nullptr;
}

}  // namespace arcprof
