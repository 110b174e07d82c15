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

Result<KernelSymbols> KernelSymbols::Parse(std::string_view text) {
  KernelSymbols table;

  struct Parsed {
    uint64_t start;
    std::string_view name;  // into text
    uint16_t module;
    int rank;
  };
  std::vector<Parsed> parsed;
  std::vector<std::string_view> modules;  // into text; 0 is vmlinux
  modules.push_back(kVmlinux);
  std::string_view last_module = kVmlinux;
  uint16_t last_module_index = 0;
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
    // kallsyms lists a module's symbols together: look further only on a change.
    if (module != last_module) {
      auto it = std::find(modules.begin(), modules.end(), module);
      if (it == modules.end()) {
        if (modules.size() > UINT16_MAX) {
          ++table.malformed_lines_;
          continue;
        }
        it = modules.insert(modules.end(), module);
      }
      last_module = module;
      last_module_index = static_cast<uint16_t>(it - modules.begin());
    }
    parsed.push_back({addr, name, last_module_index, AliasRank(type, name)});
  }
  if (lines_ok == 0) return MakeError("kallsyms: no parsable line (expected 'ADDRESS TYPE NAME')");
  if (!any_nonzero) {
    table.addresses_hidden_ = true;
    return table;
  }

  std::stable_sort(parsed.begin(), parsed.end(), [](const Parsed& a, const Parsed& b) {
    if (a.start != b.start) return a.start < b.start;
    return a.rank > b.rank;
  });
  // Keep the first of each address; size the blob before filling it.
  size_t kept = 0, name_bytes = 0;
  for (size_t i = 0; i < parsed.size(); ++i) {
    if (parsed[i].start == 0 || (kept > 0 && parsed[kept - 1].start == parsed[i].start)) continue;
    parsed[kept++] = parsed[i];
    name_bytes += parsed[i].name.size();
  }
  parsed.resize(kept);
  if (name_bytes > UINT32_MAX) return MakeError("kallsyms: names too large");
  table.names_ = std::make_unique<std::string>();
  table.names_->reserve(name_bytes);
  table.starts_.reserve(kept);
  table.name_offsets_.reserve(kept + 1);
  table.module_of_.reserve(kept);
  for (const Parsed& p : parsed) {
    table.starts_.push_back(p.start);
    table.name_offsets_.push_back(static_cast<uint32_t>(table.names_->size()));
    table.names_->append(p.name);
    table.module_of_.push_back(p.module);
  }
  table.name_offsets_.push_back(static_cast<uint32_t>(table.names_->size()));
  table.modules_.assign(modules.begin(), modules.end());
  return table;
}

std::optional<KernelSymbol> KernelSymbols::Find(uint64_t addr) const {
  auto it = std::upper_bound(starts_.begin(), starts_.end(), addr);
  if (it == starts_.begin()) return std::nullopt;
  const size_t i = static_cast<size_t>(it - starts_.begin()) - 1;
  KernelSymbol s;
  s.start = starts_[i];
  // The extent runs to the next symbol; past a module's last symbol (or the
  // last of all) it is capped: beyond may be unrelated memory.
  const uint64_t capped = s.start + kMaxTailExtent < s.start ? UINT64_MAX : s.start + kMaxTailExtent;
  if (i + 1 < starts_.size()) {
    s.end = starts_[i + 1];
    if (module_of_[i + 1] != module_of_[i]) s.end = std::min(s.end, capped);
  } else {
    s.end = capped;
  }
  if (addr >= s.end) return std::nullopt;
  s.name = std::string_view(*names_).substr(name_offsets_[i], name_offsets_[i + 1] - name_offsets_[i]);
  s.module = modules_[module_of_[i]];
  return s;
}

size_t KernelSymbols::bytes() const {
  size_t n = starts_.capacity() * sizeof(uint64_t) + name_offsets_.capacity() * sizeof(uint32_t) +
             module_of_.capacity() * sizeof(uint16_t) + modules_.capacity() * sizeof(std::string);
  if (names_) n += names_->capacity();
  for (const std::string& m : modules_) n += m.capacity() > 15 ? m.capacity() : 0;
  return n;
}

}  // namespace arcprof
