#include "symbolize/elf_symbols.h"

#include <cxxabi.h>
#include <gelf.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <unordered_map>

namespace arcprof {
namespace {


// Preference among symbols at the same address (as perf's choose_best_symbol):
// sized over unsized, global over weak over local, fewer leading underscores,
// shorter names. Higher is better.
struct Candidate {
  uint64_t start;
  uint64_t size;
  uint64_t section_end;  // 0 when unknown
  const char* name;
  size_t name_len;
  uint8_t binding;
};

bool Better(const Candidate& a, const Candidate& b) {
  if ((a.size > 0) != (b.size > 0)) return a.size > 0;
  auto bind_rank = [](uint8_t bind) { return bind == STB_GLOBAL ? 2 : bind == STB_WEAK ? 1 : 0; };
  if (bind_rank(a.binding) != bind_rank(b.binding)) return bind_rank(a.binding) > bind_rank(b.binding);
  auto underscores = [](const Candidate& c) {
    size_t n = 0;
    while (n < c.name_len && c.name[n] == '_') ++n;
    return n;
  };
  if (underscores(a) != underscores(b)) return underscores(a) < underscores(b);
  if (a.name_len != b.name_len) return a.name_len < b.name_len;
  return std::strcmp(a.name, b.name) < 0;
}

// The name a symbol is shown by: without its symbol version
// ("__libc_start_main@@GLIBC_2.34" -> "__libc_start_main"). Mangled C++
// names never contain '@'.
size_t DisplayLength(const char* name, size_t len) {
  const void* at = std::memchr(name, '@', len);
  return at && at != name ? static_cast<size_t>(static_cast<const char*>(at) - name) : len;
}

// "name@plt" for each PLT stub, as perf and elfutils name them: the i-th
// R_X86_64_JUMP_SLOT relocation of .rela.plt is the i-th entry of .plt.sec
// (IBT binaries) or of .plt after its 16-byte header. x86-64 only.
void AddPltCandidates(Elf* elf, std::vector<Candidate>* out, std::deque<std::string>* names) {
  GElf_Ehdr ehdr;
  if (!gelf_getehdr(elf, &ehdr) || ehdr.e_machine != EM_X86_64) return;
  size_t shstrndx = 0;
  if (elf_getshdrstrndx(elf, &shstrndx) != 0) return;
  Elf_Scn* rela_plt = nullptr;
  GElf_Shdr rela_shdr{}, plt_shdr{}, plt_sec_shdr{};
  bool have_plt = false, have_plt_sec = false;
  for (Elf_Scn* scn = nullptr; (scn = elf_nextscn(elf, scn)) != nullptr;) {
    GElf_Shdr shdr;
    if (!gelf_getshdr(scn, &shdr)) return;
    const char* name = elf_strptr(elf, shstrndx, shdr.sh_name);
    if (!name) continue;
    if (shdr.sh_type == SHT_RELA && std::strcmp(name, ".rela.plt") == 0) {
      rela_plt = scn;
      rela_shdr = shdr;
    } else if (shdr.sh_type == SHT_PROGBITS && std::strcmp(name, ".plt") == 0) {
      plt_shdr = shdr;
      have_plt = true;
    } else if (shdr.sh_type == SHT_PROGBITS && std::strcmp(name, ".plt.sec") == 0) {
      plt_sec_shdr = shdr;
      have_plt_sec = true;
    }
  }
  if (!rela_plt || !(have_plt || have_plt_sec)) return;
  constexpr uint64_t kEntry = 16;
  const uint64_t base = have_plt_sec ? plt_sec_shdr.sh_addr : plt_shdr.sh_addr + kEntry;
  const uint64_t limit =
      have_plt_sec ? plt_sec_shdr.sh_addr + plt_sec_shdr.sh_size : plt_shdr.sh_addr + plt_shdr.sh_size;
  Elf_Scn* symtab = elf_getscn(elf, rela_shdr.sh_link);
  GElf_Shdr sym_shdr;
  if (!symtab || !gelf_getshdr(symtab, &sym_shdr)) return;
  Elf_Data* rela = elf_getdata(rela_plt, nullptr);
  Elf_Data* syms = elf_getdata(symtab, nullptr);
  if (!rela || !syms || rela_shdr.sh_entsize == 0) return;
  const size_t count = rela_shdr.sh_size / rela_shdr.sh_entsize;
  for (size_t i = 0; i < count; ++i) {
    const uint64_t start = base + i * kEntry;
    if (start + kEntry > limit) break;
    GElf_Rela r;
    if (!gelf_getrela(rela, static_cast<int>(i), &r)) break;
    if (GELF_R_TYPE(r.r_info) != R_X86_64_JUMP_SLOT) continue;
    GElf_Sym sym;
    if (!gelf_getsym(syms, static_cast<int>(GELF_R_SYM(r.r_info)), &sym)) continue;
    const char* name = elf_strptr(elf, sym_shdr.sh_link, sym.st_name);
    if (!name || !*name) continue;
    const std::string& full =
        names->emplace_back(std::string(name, DisplayLength(name, std::strlen(name))) + "@plt");
    out->push_back({start, kEntry, 0, full.c_str(), full.size(), STB_LOCAL});
  }
}

// Reads the length of FDEs in .eh_frame (the section's bytes, at its
// address): enough of each FDE's CIE to know the size of its pointers.
// Every read is bounded by the section; what cannot be read gives 0.
class EhFrameReader {
 public:
  EhFrameReader(const uint8_t* bytes, size_t size, uint64_t address, size_t address_size)
      : bytes_(bytes), size_(bytes ? size : 0), address_(address), address_size_(address_size) {}

  // The pc_range of the FDE at address fde, when its pc_begin is start.
  uint32_t FdeLength(uint64_t fde, uint64_t start) {
    if (fde < address_ || fde - address_ >= size_) return 0;
    size_t pos = fde - address_;
    uint32_t length = 0, cie_pointer = 0;
    if (!Fixed(&pos, 4, &length) || length == 0 || length == 0xffffffffu) return 0;
    if (length > size_ - pos) return 0;
    const size_t end = pos + length;
    const size_t cie_field = pos;
    if (!Fixed(&pos, 4, &cie_pointer) || cie_pointer == 0 || cie_pointer > cie_field) return 0;
    const int encoding = CieEncoding(cie_field - cie_pointer);
    if (encoding < 0) return 0;
    const size_t begin_field = pos;
    uint64_t begin = 0, range = 0;
    if (!Encoded(&pos, end, static_cast<uint8_t>(encoding), &begin)) return 0;
    switch (encoding & 0x70) {
      case 0x00: break;                                          // absolute
      case 0x10: begin += address_ + begin_field; break;         // pc-relative
      default: begin = start;                                    // not checked
    }
    if (begin != start) return 0;
    if (!Encoded(&pos, end, static_cast<uint8_t>(encoding & 0x0f), &range)) return 0;
    return range > UINT32_MAX ? 0 : static_cast<uint32_t>(range);
  }

 private:
  // The FDE pointer encoding of the CIE at offset cie ('R' augmentation;
  // absolute pointers without one), -1 when it cannot be read. Cached: a
  // file has a handful of CIEs for all its FDEs.
  int CieEncoding(size_t cie) {
    if (auto it = cies_.find(cie); it != cies_.end()) return it->second;
    const int encoding = ReadCie(cie);
    if (cies_.size() < kMaxCies) cies_.emplace(cie, encoding);
    return encoding;
  }

  int ReadCie(size_t pos) {
    uint32_t length = 0, id = 0;
    if (pos >= size_ || !Fixed(&pos, 4, &length) || length == 0 || length == 0xffffffffu) return -1;
    if (length > size_ - pos) return -1;
    const size_t end = pos + length;
    uint8_t version = 0;
    if (!Fixed(&pos, 4, &id) || id != 0 || !Fixed(&pos, 1, &version) || (version != 1 && version != 3))
      return -1;
    const char* augmentation = reinterpret_cast<const char*>(bytes_ + pos);
    const size_t aug_len = strnlen(augmentation, end - pos);
    if (aug_len == end - pos) return -1;
    pos += aug_len + 1;
    uint64_t ignored = 0;
    if (!Uleb(&pos, end, &ignored) || !Sleb(&pos, end) ||
        !(version == 1 ? Fixed(&pos, 1, &ignored) : Uleb(&pos, end, &ignored))) {
      return -1;
    }
    if (aug_len == 0) return 0;  // absolute pointers
    if (augmentation[0] != 'z') return -1;
    uint64_t data_len = 0;
    if (!Uleb(&pos, end, &data_len) || data_len > end - pos) return -1;
    const size_t data_end = pos + data_len;
    for (size_t i = 1; i < aug_len; ++i) {
      switch (augmentation[i]) {
        case 'R': {
          uint8_t encoding = 0;
          if (!Fixed(&pos, 1, &encoding) || (encoding & 0x80) || (encoding & 0x70) == 0x50 || pos > data_end)
            return -1;
          return encoding;
        }
        case 'P': {  // personality routine: its encoding, then the pointer
          uint8_t encoding = 0;
          uint64_t personality = 0;
          if (!Fixed(&pos, 1, &encoding) || (encoding & 0x70) == 0x50 ||
              !Encoded(&pos, data_end, encoding & 0x0f, &personality)) {
            return -1;
          }
          break;
        }
        case 'L': {
          uint8_t lsda = 0;
          if (!Fixed(&pos, 1, &lsda)) return -1;
          break;
        }
        case 'S': case 'B': case 'G': break;
        default: return -1;  // an augmentation whose data we cannot skip
      }
    }
    return 0;  // no 'R': absolute pointers
  }

  // A little-endian value of n bytes (n <= 8) into *out.
  template <typename T>
  bool Fixed(size_t* pos, size_t n, T* out) {
    if (*pos > size_ || n > size_ - *pos) return false;
    uint64_t v = 0;
    for (size_t i = 0; i < n; ++i) v |= uint64_t{bytes_[*pos + i]} << (8 * i);
    *pos += n;
    *out = static_cast<T>(v);
    return true;
  }
  bool Uleb(size_t* pos, size_t end, uint64_t* out) {
    uint64_t v = 0;
    for (unsigned shift = 0; shift < 64 && *pos < end; shift += 7) {
      const uint8_t b = bytes_[(*pos)++];
      v |= uint64_t{b & 0x7fu} << shift;
      if (!(b & 0x80)) {
        *out = v;
        return true;
      }
    }
    return false;
  }
  bool Sleb(size_t* pos, size_t end) {
    uint64_t ignored = 0;
    return Uleb(pos, end, &ignored);  // the same bytes; the value is not needed
  }
  // A value in the format of encoding's low nibble, sign-extended.
  bool Encoded(size_t* pos, size_t end, uint8_t encoding, uint64_t* out) {
    size_t n = 0;
    bool is_signed = false;
    switch (encoding & 0x0f) {
      case 0x00: n = address_size_; break;
      case 0x01: return Uleb(pos, end, out);
      case 0x02: n = 2; break;
      case 0x03: n = 4; break;
      case 0x04: n = 8; break;
      case 0x0a: n = 2; is_signed = true; break;
      case 0x0b: n = 4; is_signed = true; break;
      case 0x0c: n = 8; is_signed = true; break;
      default: return false;
    }
    if (*pos > end || n > end - *pos) return false;
    uint64_t v = 0;
    if (!Fixed(pos, n, &v)) return false;
    if (is_signed && n < 8 && (v >> (8 * n - 1)) & 1) v |= ~uint64_t{0} << (8 * n);
    *out = v;
    return true;
  }

  static constexpr size_t kMaxCies = 4096;
  const uint8_t* bytes_;
  size_t size_;
  uint64_t address_;
  size_t address_size_;
  std::unordered_map<size_t, int> cies_;
};

}  // namespace


namespace {

enum class SymbolVisit { kNext, kTaken, kStop };

// Each defined symbol (name, value) of .dynsym, else of .symtab when `fn`
// found nothing in .dynsym; `fn` returns true to stop.
template <typename Fn>
void ForEachDefinedSymbol(Elf* elf, Fn&& fn) {
  for (const Elf64_Word type : {SHT_DYNSYM, SHT_SYMTAB}) {
    bool any = false;
    Elf_Scn* scn = nullptr;
    while ((scn = elf_nextscn(elf, scn)) != nullptr) {
      GElf_Shdr shdr;
      if (gelf_getshdr(scn, &shdr) == nullptr || shdr.sh_type != type || shdr.sh_entsize == 0) continue;
      Elf_Data* data = elf_getdata(scn, nullptr);
      if (data == nullptr) continue;
      const size_t count = std::min<size_t>(shdr.sh_size / shdr.sh_entsize, data->d_size / sizeof(Elf64_Sym));
      for (size_t i = 0; i < count; ++i) {
        GElf_Sym sym;
        if (gelf_getsym(data, static_cast<int>(i), &sym) == nullptr) continue;
        if (sym.st_shndx == SHN_UNDEF || sym.st_value == 0) continue;
        const char* n = elf_strptr(elf, shdr.sh_link, sym.st_name);
        if (n == nullptr) continue;
        switch (fn(std::string_view(n), static_cast<uint64_t>(sym.st_value), static_cast<uint64_t>(sym.st_size))) {
          case SymbolVisit::kStop: return;
          case SymbolVisit::kTaken: any = true; break;
          case SymbolVisit::kNext: break;
        }
      }
    }
    if (any) return;
  }
}

}  // namespace

std::optional<uint64_t> FindSymbolValue(Elf* elf, std::string_view name) {
  auto sym = FindSymbolValueAndSize(elf, name);
  if (!sym) return std::nullopt;
  return sym->first;
}

std::optional<std::pair<uint64_t, uint64_t>> FindSymbolValueAndSize(Elf* elf, std::string_view name) {
  std::optional<std::pair<uint64_t, uint64_t>> out;
  ForEachDefinedSymbol(elf, [&](std::string_view n, uint64_t value, uint64_t size) {
    if (n != name) return SymbolVisit::kNext;
    out.emplace(value, size);
    return SymbolVisit::kStop;
  });
  return out;
}

std::vector<std::pair<std::string, uint64_t>> FindSymbolValuesWithPrefix(Elf* elf, std::string_view prefix,
                                                                          size_t max) {
  std::vector<std::pair<std::string, uint64_t>> out;
  ForEachDefinedSymbol(elf, [&](std::string_view n, uint64_t value, uint64_t) {
    if (out.size() >= max) return SymbolVisit::kStop;
    if (!n.starts_with(prefix)) return SymbolVisit::kNext;
    out.emplace_back(n, value);
    return SymbolVisit::kTaken;
  });
  return out;
}

FunctionRanges FunctionRanges::Read(Elf* elf) {
  // DWARF pointer encodings (the low nibble: format, the high: what it is relative to).
  constexpr uint8_t kUdata4 = 0x03, kSdata4 = 0x0b, kDatarel = 0x30;
  FunctionRanges out;
  size_t shstrndx = 0;
  if (!elf || elf_getshdrstrndx(elf, &shstrndx) != 0) return out;
  Elf_Scn* hdr_scn = nullptr;
  Elf_Scn* frame_scn = nullptr;
  GElf_Shdr hdr_shdr{}, frame_shdr{};
  for (Elf_Scn* scn = nullptr; (scn = elf_nextscn(elf, scn)) != nullptr;) {
    GElf_Shdr shdr;
    if (!gelf_getshdr(scn, &shdr) || shdr.sh_type == SHT_NOBITS) continue;
    const char* name = elf_strptr(elf, shstrndx, shdr.sh_name);
    if (!name) continue;
    if (!hdr_scn && std::strcmp(name, ".eh_frame_hdr") == 0) {
      hdr_scn = scn;
      hdr_shdr = shdr;
    } else if (!frame_scn && std::strcmp(name, ".eh_frame") == 0) {
      frame_scn = scn;
      frame_shdr = shdr;
    }
  }
  if (!hdr_scn) return out;
  Elf_Data* data = elf_getdata(hdr_scn, nullptr);
  if (!data || !data->d_buf || data->d_size < 12) return out;
  const auto* bytes = static_cast<const uint8_t*>(data->d_buf);
  const size_t size = data->d_size;
  // version, eh_frame_ptr encoding, fde_count encoding, table encoding;
  // then eh_frame_ptr and fde_count (4 bytes each in the layouts read here).
  const auto four_bytes = [](uint8_t enc) { return (enc & 0x0f) == kUdata4 || (enc & 0x0f) == kSdata4; };
  if (bytes[0] != 1 || !four_bytes(bytes[1]) || !four_bytes(bytes[2]) || bytes[3] != (kDatarel | kSdata4)) {
    return out;
  }
  uint32_t count = 0;
  std::memcpy(&count, bytes + 8, 4);
  if (count > (size - 12) / 8) return out;
  GElf_Ehdr ehdr;
  const size_t address_size = gelf_getehdr(elf, &ehdr) && ehdr.e_ident[EI_CLASS] == ELFCLASS32 ? 4 : 8;
  Elf_Data* frame_data = frame_scn ? elf_getdata(frame_scn, nullptr) : nullptr;
  EhFrameReader frames(frame_data && frame_data->d_buf ? static_cast<const uint8_t*>(frame_data->d_buf) : nullptr,
                       frame_data && frame_data->d_buf ? frame_data->d_size : 0, frame_shdr.sh_addr, address_size);
  out.starts_.reserve(count);
  out.sizes_.reserve(count);
  for (size_t i = 0; i < count; ++i) {
    int32_t start_rel = 0, fde_rel = 0;
    std::memcpy(&start_rel, bytes + 12 + 8 * i, 4);
    std::memcpy(&fde_rel, bytes + 16 + 8 * i, 4);
    const uint64_t start = hdr_shdr.sh_addr + static_cast<uint64_t>(static_cast<int64_t>(start_rel));
    const uint64_t fde = hdr_shdr.sh_addr + static_cast<uint64_t>(static_cast<int64_t>(fde_rel));
    const uint32_t length = frames.FdeLength(fde, start);
    if (!out.starts_.empty() && start <= out.starts_.back()) {
      if (start < out.starts_.back()) return FunctionRanges();  // not sorted
      out.sizes_.back() = std::max(out.sizes_.back(), length);  // one start, the longer FDE
      continue;
    }
    out.starts_.push_back(start);
    out.sizes_.push_back(length);
  }
  return out;
}

std::optional<FunctionRanges::Range> FunctionRanges::Find(uint64_t vaddr) const {
  auto after = std::upper_bound(starts_.begin(), starts_.end(), vaddr);
  if (after == starts_.begin()) return std::nullopt;
  const size_t i = static_cast<size_t>(after - starts_.begin()) - 1;
  if (vaddr - starts_[i] >= sizes_[i]) return std::nullopt;
  return Range{starts_[i], starts_[i] + sizes_[i]};
}

SymbolTable SymbolTable::Load(Elf* elf, Section section, Elf* plt_source) {
  SymbolTable table;
  const uint32_t wanted = section == Section::kSymtab ? SHT_SYMTAB : SHT_DYNSYM;
  const size_t sym_size = gelf_fsize(elf, ELF_T_SYM, 1, EV_CURRENT);
  if (sym_size == 0) return table;

  std::unordered_map<size_t, uint64_t> section_ends;
  auto section_end = [&](size_t index) -> uint64_t {
    auto it = section_ends.find(index);
    if (it != section_ends.end()) return it->second;
    uint64_t end = 0;
    GElf_Shdr shdr;
    Elf_Scn* scn = elf_getscn(elf, index);
    if (scn && gelf_getshdr(scn, &shdr) && (shdr.sh_flags & SHF_ALLOC)) end = shdr.sh_addr + shdr.sh_size;
    section_ends.emplace(index, end);
    return end;
  };

  std::vector<Candidate> candidates;
  size_t names_bytes = 0;
  Elf_Scn* scn = nullptr;
  while ((scn = elf_nextscn(elf, scn)) != nullptr) {
    GElf_Shdr shdr;
    if (!gelf_getshdr(scn, &shdr)) break;
    if (shdr.sh_type != wanted) continue;
    Elf_Data* data = elf_getdata(scn, nullptr);
    if (!data || !data->d_buf) continue;
    const size_t count = data->d_size / sym_size;
    for (size_t i = 0; i < count; ++i) {
      GElf_Sym sym;
      if (!gelf_getsym(data, static_cast<int>(i), &sym)) break;
      const int type = GELF_ST_TYPE(sym.st_info);
      if (type != STT_FUNC && type != STT_GNU_IFUNC) continue;
      if (sym.st_shndx == SHN_UNDEF || sym.st_value == 0) continue;
      const char* name = elf_strptr(elf, shdr.sh_link, sym.st_name);
      if (!name || !*name) continue;
      const size_t len = DisplayLength(name, std::strlen(name));
      const uint64_t sec_end = sym.st_shndx < SHN_LORESERVE ? section_end(sym.st_shndx) : 0;
      candidates.push_back({sym.st_value, sym.st_size, sec_end, name, len,
                            static_cast<uint8_t>(GELF_ST_BIND(sym.st_info))});
      names_bytes += len + 1;
    }
  }
  // Stubs complete a table; alone they are not one (a debug file without
  // .symtab must still count as empty).
  if (candidates.empty()) return table;
  std::deque<std::string> plt_names;  // owns the synthesized names until they are copied
  if (plt_source) {
    const size_t before = candidates.size();
    AddPltCandidates(plt_source, &candidates, &plt_names);
    for (size_t i = before; i < candidates.size(); ++i) names_bytes += candidates[i].name_len + 1;
  }

  std::sort(candidates.begin(), candidates.end(), [](const Candidate& a, const Candidate& b) {
    if (a.start != b.start) return a.start < b.start;
    return Better(a, b);
  });
  // One symbol per address; the names are copied out of libelf's buffers so the
  // table outlives the Elf handle.
  table.names_ = std::make_unique<char[]>(names_bytes);
  table.names_bytes_ = names_bytes;
  char* cursor = table.names_.get();
  std::vector<const Candidate*> kept;
  for (const Candidate& c : candidates) {
    if (!kept.empty() && kept.back()->start == c.start) continue;
    kept.push_back(&c);
  }
  table.symbols_.reserve(kept.size());
  for (size_t i = 0; i < kept.size(); ++i) {
    const Candidate& c = *kept[i];
    std::memcpy(cursor, c.name, c.name_len);
    cursor[c.name_len] = '\0';
    ElfSymbol s;
    s.start = c.start;
    s.name = std::string_view(cursor, c.name_len);
    cursor += c.name_len + 1;
    const uint64_t next = i + 1 < kept.size() ? kept[i + 1]->start : UINT64_MAX;
    if (c.size > 0) {
      s.end = c.start + c.size < c.start ? UINT64_MAX : c.start + c.size;
    } else if (c.section_end > c.start) {
      s.end = std::min(next, c.section_end);
    } else {
      s.end = next == UINT64_MAX ? c.start + 1 : next;
    }
    table.symbols_.push_back(s);
  }
  return table;
}

const ElfSymbol* SymbolTable::Find(uint64_t vaddr) {
  auto it = std::upper_bound(symbols_.begin(), symbols_.end(), vaddr,
                             [](uint64_t a, const ElfSymbol& s) { return a < s.start; });
  // Look back a little: a sized symbol may enclose smaller ones that start
  // after it (assembly labels typed as functions).
  constexpr int kLookBack = 4;
  for (int i = 0; i < kLookBack && it != symbols_.begin(); ++i) {
    --it;
    if (vaddr < it->end) {
      ElfSymbol& s = *it;
      if (!s.demangled) {
        s.demangled = true;
        std::string pretty = Demangle(s.name);
        if (!pretty.empty()) {
          demangled_bytes_ += pretty.size() + sizeof(std::string);
          s.name = demangled_names_.emplace_back(std::move(pretty));
        }
      }
      return &s;
    }
  }
  return nullptr;
}

std::string Demangle(std::string_view mangled) {
  if (mangled.size() < 3 || mangled[0] != '_' || mangled[1] != 'Z') return "";
  const std::string c_string(mangled);
  int status = 0;
  char* out = abi::__cxa_demangle(c_string.c_str(), nullptr, nullptr, &status);
  if (status != 0 || !out) {
    std::free(out);
    return "";
  }
  std::string result(out);
  std::free(out);
  return result;
}

}  // namespace arcprof
