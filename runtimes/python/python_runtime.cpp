#include "runtimes/python/python_runtime.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstring>
#include <algorithm>
#include <string>
#include <unordered_map>
#include <vector>

#include <fmt/format.h>

#include "runtimes/naming.h"
#include "runtimes/python/trampoline_stepper.h"
#include "symbolize/elf_symbols.h"

namespace arcprof::runtimes {
namespace {

constexpr uint16_t kNone = ARCPROF_PY_NO_OFFSET;

// Rows printed by tests/runtimes/python_offsets_probe.c against each
// version's Include/internal headers.
PythonOffsets Row(uint32_t minor, std::initializer_list<uint16_t> bpf, uint16_t firstlineno,
                  uint16_t linetable, uint16_t adaptive, uint16_t ascii, uint16_t compact) {
  // bpf: the ARCPROF_PY_* offsets in enum order, up to ARCPROF_PY_CODE_NAME.
  PythonOffsets o;
  o.minor = minor;
  size_t i = 0;
  for (uint16_t v : bpf) o.off[i++] = v;
  o.code_firstlineno = firstlineno;
  o.code_linetable = linetable;
  o.code_adaptive = adaptive;
  o.unicode_state = 32;
  o.unicode_length = 16;
  o.unicode_ascii_size = ascii;
  o.unicode_compact_size = compact;
  o.bytes_size = 16;
  o.bytes_sval = 32;
  return o;
}

// Names in the order of enum arcprof_py_off, as the probe prints them.
constexpr const char* kOffNames[] = {
    "runtime_interpreters_head", "interp_threads_head", "tstate_next",  "tstate_native_thread_id",
    "tstate_current_frame",      "cframe_current_frame", "frame_code", "frame_previous",
    "frame_instr",               "frame_owner",          "frame_entry", "code_filename",
    "code_name"};
static_assert(sizeof(kOffNames) / sizeof(kOffNames[0]) == ARCPROF_PY_CODE_NAME + 1);

// The versions named: 2.7, and 3.6 on. 3.7 brought _PyRuntime; 2.7 and 3.6
// keep their interpreter list in a static variable (interp_head).
constexpr uint32_t Version(uint32_t major, uint32_t minor) { return major << 8 | minor; }
constexpr bool Supported(uint32_t version) { return version == Version(2, 7) || version >= Version(3, 6); }

// The bytes of a file at an ELF virtual address.
bool ReadFileAt(const MappedFile& file, const std::vector<LoadSegment>& loads, uint64_t vaddr,
                void* out, size_t n) {
  auto off = VaddrToFileOffset(loads, vaddr);
  if (!off) return false;
  return pread(file.fd, out, n, static_cast<off_t>(*off)) == static_cast<ssize_t>(n);
}

// "python3.11", "libpython3.12.so.1.0", "python3.13d", "python2.7": the
// version (major << 8 | minor) in a binary's or library's base name, 0 when
// none.
uint32_t VersionInName(std::string_view path) {
  const size_t slash = path.rfind('/');
  std::string_view base = slash == std::string_view::npos ? path : path.substr(slash + 1);
  if (base.starts_with("lib")) base.remove_prefix(3);
  if (!base.starts_with("python3.") && !base.starts_with("python2.")) return 0;
  const uint32_t major = static_cast<uint32_t>(base[6] - '0');
  base.remove_prefix(8);
  uint32_t minor = 0;
  size_t digits = 0;
  while (digits < base.size() && digits < 3 && base[digits] >= '0' && base[digits] <= '9') {
    minor = minor * 10 + static_cast<uint32_t>(base[digits] - '0');
    ++digits;
  }
  return digits == 0 ? 0 : Version(major, minor);
}

// CPython 3.12+'s -X perf trampoline (Python/asm_trampoline.S), copied for
// every code object: on x86-64 `[endbr64;] sub $8,%rsp; call *%rcx; add
// $8,%rsp; ret`, a 16-byte frame that keeps rbp. The offset at which the
// frame is set up (after the sub), when the file's trampoline is exactly
// that; -1 otherwise (another architecture or layout: not stepped).
int32_t TrampolineSetup(Elf* elf, const MappedFile& file, const std::vector<LoadSegment>& loads) {
  const auto start = FindSymbolValue(elf, "_Py_trampoline_func_start");
  if (!start) return -1;
  uint8_t bytes[15] = {};
  if (!ReadFileAt(file, loads, *start, bytes, sizeof(bytes))) return -1;
  static constexpr uint8_t kEndbr[] = {0xf3, 0x0f, 0x1e, 0xfa};
  static constexpr uint8_t kBody[] = {0x48, 0x83, 0xec, 0x08, 0xff, 0xd1, 0x48, 0x83, 0xc4, 0x08, 0xc3};
  const size_t skip = memcmp(bytes, kEndbr, sizeof(kEndbr)) == 0 ? sizeof(kEndbr) : 0;
  if (memcmp(bytes + skip, kBody, sizeof(kBody)) != 0) return -1;
  return static_cast<int32_t>(skip + 4);
}

class PythonRuntime final : public Runtime {
 public:
  std::string_view name() const override { return "python"; }
  uint32_t id() const override { return ARCPROF_RUNTIME_PYTHON; }

  bool MayHost(std::string_view path) const override { return Supported(VersionInName(path)); }

  std::optional<runtime_proc> Recognize(uint32_t pid, const MappedFile& file) override {
    const uint32_t name_version = VersionInName(file.path);
    if (!Supported(name_version) || file.fd < 0) return std::nullopt;
    const uint32_t major = name_version >> 8, name_minor = name_version & 0xff;
    auto elf = OpenElfFd(file.fd);
    if (!elf) return std::nullopt;
    auto info = ReadElfHeaderInfo(elf->get());
    if (!info) return std::nullopt;
    std::optional<uint64_t> runtime = FindSymbolValue(elf->get(), "_PyRuntime");
    const auto code_type = FindSymbolValue(elf->get(), "PyCode_Type");
    if (!code_type) return std::nullopt;  // not CPython
    uint32_t minor = name_minor;
    if (name_version < Version(3, 7)) {
      // 2.7, 3.6: no _PyRuntime; the root is interp_head, found from the
      // code of PyInterpreterState_Head(). 2.7 has str objects
      // (PyString_Type) and no _PyEval_EvalFrameDefault, 3.6 the opposite.
      if (runtime || FindSymbolValue(elf->get(), "Py_Version")) return std::nullopt;  // newer than its name
      const bool two = FindSymbolValue(elf->get(), "PyString_Type").has_value();
      const bool pep523 = FindSymbolValue(elf->get(), "_PyEval_EvalFrameDefault").has_value();
      if (two != (major == 2) || pep523 != (major == 3)) return std::nullopt;
      const auto head_fn = FindSymbolValue(elf->get(), "PyInterpreterState_Head");
      uint8_t code[16] = {};
      if (!head_fn || !ReadFileAt(file, info->loads, *head_fn, code, sizeof(code))) return std::nullopt;
      runtime = PythonInterpHeadFromCode(code, *head_fn);
      if (!runtime) return std::nullopt;
    } else if (!runtime) {
      return std::nullopt;  // not CPython 3.7+
    } else if (name_minor >= 11) {
      // 3.11+ says its version in Py_Version.
      const auto version = FindSymbolValue(elf->get(), "Py_Version");
      uint64_t hex = 0;
      if (!version || !ReadFileAt(file, info->loads, *version, &hex, 4)) return std::nullopt;
      hex &= 0xffffffffu;
      minor = static_cast<uint32_t>(hex >> 16 & 0xff);
      if (hex >> 24 != 3 || minor != name_minor) return std::nullopt;
    } else if (FindSymbolValue(elf->get(), "Py_Version") ||
               !FindSymbolValue(elf->get(), "_PyEval_EvalFrameDefault")) {
      // Before 3.11: the file's name says the version; a file that has
      // Py_Version is newer than its name, one without the evaluation loop
      // is not CPython.
      return std::nullopt;
    }
    std::optional<PythonOffsets> offsets;
    if (minor >= 13) {
      // The interpreter documents its offsets: _Py_DebugOffsets opens _PyRuntime.
      std::vector<uint8_t> debug(71 * 8);
      if (ReadFileAt(file, info->loads, *runtime, debug.data(), debug.size())) {
        offsets = PythonOffsetsFromDebug(debug, minor);
      }
      if (!offsets) ++debug_offsets_missing_;
    }
    if (!offsets) offsets = PythonOffsetsFor(major, minor);
    if (!offsets) return std::nullopt;
    runtime_proc rp{};
    rp.runtime = ARCPROF_RUNTIME_PYTHON;
    rp.version = Version(major, minor);
    rp.root = *runtime + file.load_bias;
    memcpy(rp.off, offsets->off, sizeof(rp.off));
    Proc& p = procs_[pid];
    p = Proc{};
    p.offsets = *offsets;
    p.code_type = *code_type + file.load_bias;
    p.trampoline_setup = TrampolineSetup(elf->get(), file, info->loads);
    // 2.7 has no PEP 523 hook: PyEval_EvalFrameEx runs the frames itself.
    p.host = major == 2 ? "PyEval_EvalFrameEx" : "_PyEval_EvalFrameDefault";
    ++recognized_;
    return rp;
  }

  std::unique_ptr<FrameStepper> MakeFrameStepper() const override { return MakePythonTrampolineStepper(); }

  // -X perf (3.12+): every perf map entry "py::..." is a copy of the
  // interpreter's trampoline, whose frame is fixed (TrampolineSetup).
  void RefineJitFrame(uint32_t pid, JitSymbol& code) override {
    auto p = procs_.find(pid);
    if (p == procs_.end() || p->second.trampoline_setup < 0 || !code.name.starts_with("py::") ||
        code.frame_size != 0) {
      return;
    }
    code.frame_size = 16;
    code.frame_complete = p->second.trampoline_setup;
    code.rbp_unreliable = true;
    code.keeps_rbp = true;
  }

  bool IsHostFrame(uint32_t pid, std::string_view symbol) const override {
    if (symbol != "_PyEval_EvalFrameDefault" && symbol != "PyEval_EvalFrameEx") return false;
    auto p = procs_.find(pid);
    return p != procs_.end() && symbol == p->second.host;
  }

  SymbolizedFrame Name(uint32_t pid, const runtime_frame& frame) override {
    SymbolizedFrame f;
    f.kind = FrameKind::kPython;
    f.module = "[python]";
    f.address = 0;
    f.offset = frame.code;
    const Cached* c = cache_.Find(
        pid, frame, procs_, [&](Proc& p, Cached& out) { return ReadCode(pid, p, frame, out); }, &f.reason);
    if (c == nullptr) {
      if (f.reason == UnknownReason::kNoProcess) ++unreadable_;
      return f;
    }
    ++named_;
    f.symbol = c->symbol;
    f.module = c->file;
    f.address = SourceAddress(Line(NameKey{pid, frame.code, frame.stamp}, *c, frame.instr));
    return f;
  }

  void Forget(uint32_t pid) override {
    procs_.erase(pid);
    cache_.Forget(pid);
    std::erase_if(lines_, [pid](const auto& kv) { return kv.first.code.pid == pid; });
  }

  void TakeCounters(const std::function<void(std::string_view, int64_t)>& add) override {
    if (recognized_) add("python.processes_recognized", static_cast<int64_t>(recognized_));
    if (named_) add("python.frames_named", static_cast<int64_t>(named_));
    if (stale_) add("python.frames_code_gone", static_cast<int64_t>(stale_));
    if (unreadable_) add("python.frames_unreadable", static_cast<int64_t>(unreadable_));
    if (debug_offsets_missing_) add("python.debug_offsets_missing", static_cast<int64_t>(debug_offsets_missing_));
    if (const uint64_t n = names_.TakeOverBudget()) add("python.names_over_budget", static_cast<int64_t>(n));
    recognized_ = named_ = stale_ = unreadable_ = debug_offsets_missing_ = 0;
  }

  size_t HeldBytes() const override {
    return names_.HeldBytes() + cache_.HeldBytes() +
           lines_.size() * (sizeof(LineKey) + 16) + procs_.size() * sizeof(Proc);
  }

 private:
  struct Proc {
    PythonOffsets offsets;
    int32_t trampoline_setup = -1;  // -X perf: where its trampoline's frame is set up, -1 unknown
    uint64_t code_type = 0;  // &PyCode_Type in the process
    std::string_view host;   // the native function that runs its frames
    ProcessMemory mem;
  };
  struct Cached {
    std::string_view symbol, file;
    uint32_t first_line = 0;
    uint32_t major = 3, minor = 0;
    uint64_t first_instr = 0;    // 3.11+: the address of the first instruction
    std::vector<uint8_t> table;  // the line table (co_linetable, co_lnotab)
    size_t HeldBytes() const { return table.size(); }
  };
  struct LineKey {
    NameKey code;
    uint64_t instr;
    bool operator==(const LineKey&) const = default;
  };
  struct LineKeyHash {
    size_t operator()(const LineKey& k) const { return NameKeyHash()(k.code) ^ (k.instr * 0x94d049bb133111ebull); }
  };
  static constexpr size_t kMaxCached = 1 << 16;
  static constexpr size_t kMaxTableBytes = 16u << 20;
  static constexpr size_t kMaxTable = 64u << 10;  // one code object's line table, at most
  static constexpr size_t kMaxNameBytes = 16u << 20;
  static constexpr size_t kMaxChars = 1024;  // a longer name or path is cut

  bool ReadMem(Proc& p, uint32_t pid, uint64_t addr, void* out, size_t n) { return p.mem.Read(pid, addr, out, n); }

  // A str object as UTF-8 (compact strings only: every name and path a code
  // object holds), at most kMaxChars characters. In 2.7 a str is a
  // PyStringObject, its bytes as they are (names are ASCII, paths the file
  // system's bytes; reports make any bytes safe).
  bool ReadString(Proc& p, uint32_t pid, uint64_t addr, std::string& out) {
    const PythonOffsets& o = p.offsets;
    if (o.major == 2) {
      int64_t size = 0;
      if (!ReadMem(p, pid, addr + o.bytes_size, &size, sizeof(size)) || size < 0) return false;
      out.assign(static_cast<size_t>(std::min<int64_t>(size, kMaxChars)), '\0');
      if (!out.empty() && !ReadMem(p, pid, addr + o.bytes_sval, out.data(), out.size())) return false;
      if (size > static_cast<int64_t>(kMaxChars)) out += "...";
      return true;
    }
    uint8_t head[128];
    const size_t head_len = std::max(o.unicode_compact_size, o.unicode_ascii_size);
    if (head_len > sizeof(head) || !ReadMem(p, pid, addr, head, head_len)) return false;
    uint64_t length = 0;
    uint32_t state = 0;
    memcpy(&length, head + o.unicode_length, 8);
    memcpy(&state, head + o.unicode_state, 4);
    const uint32_t kind = state >> 2 & 7, compact = state >> 5 & 1, ascii = state >> 6 & 1;
    if (!compact || (kind != 1 && kind != 2 && kind != 4)) return false;
    const size_t chars = std::min<uint64_t>(length, kMaxChars);
    const uint64_t data = addr + (ascii ? o.unicode_ascii_size : o.unicode_compact_size);
    std::vector<uint8_t> raw(chars * kind);
    if (chars > 0 && !ReadMem(p, pid, data, raw.data(), raw.size())) return false;
    out.clear();
    for (size_t i = 0; i < chars; ++i) {
      uint32_t c = 0;
      memcpy(&c, raw.data() + i * kind, kind);
      if (c < 0x80) {
        out.push_back(static_cast<char>(c));
      } else if (c < 0x800) {
        out.push_back(static_cast<char>(0xc0 | c >> 6));
        out.push_back(static_cast<char>(0x80 | (c & 0x3f)));
      } else if (c < 0x10000) {
        out.push_back(static_cast<char>(0xe0 | c >> 12));
        out.push_back(static_cast<char>(0x80 | (c >> 6 & 0x3f)));
        out.push_back(static_cast<char>(0x80 | (c & 0x3f)));
      } else if (c < 0x110000) {
        out.push_back(static_cast<char>(0xf0 | c >> 18));
        out.push_back(static_cast<char>(0x80 | (c >> 12 & 0x3f)));
        out.push_back(static_cast<char>(0x80 | (c >> 6 & 0x3f)));
        out.push_back(static_cast<char>(0x80 | (c & 0x3f)));
      } else {
        out += "\xef\xbf\xbd";  // U+FFFD for what no str holds
      }
    }
    if (length > chars) out += "...";
    return true;
  }

  // The line of the instruction the sampler read: from 3.11 an address in
  // the code object, before it f_lasti (instr >> 1; bytes before 3.10, code
  // units from 3.10).
  uint32_t Line(const NameKey& key, const Cached& c, uint64_t instr) {
    const LineKey lk{key, instr};
    if (auto it = lines_.find(lk); it != lines_.end()) return it->second;
    int64_t addr = -1;
    if (c.major == 3 && c.minor >= 11) {
      const uint64_t ip = instr & ~ARCPROF_RUNTIME_ENTRY_BIT;
      if (ip >= c.first_instr && ip - c.first_instr < (uint64_t{1} << 31)) addr = static_cast<int64_t>(ip - c.first_instr);
    } else {
      const int32_t lasti = static_cast<int32_t>(static_cast<uint32_t>(instr >> 1));
      addr = c.major == 3 && c.minor >= 10 ? int64_t{lasti} * 2 : lasti;
    }
    const int line = PythonLine(c.major, c.minor, c.table, static_cast<int>(c.first_line), addr);
    const uint32_t out = line > 0 ? static_cast<uint32_t>(line) : c.first_line;
    if (lines_.size() >= kMaxCached) lines_.clear();
    lines_.emplace(lk, out);
    return out;
  }


  // The code object as it is now, named only when it is still the object
  // the sampler saw: a code object (its type) holding the same filename and
  // qualified name (the stamp). A freed object, or another one at the same
  // address since, is not misnamed.
  bool ReadCode(uint32_t pid, Proc& p, const runtime_frame& frame, Cached& out) {
    const PythonOffsets& o = p.offsets;
    const uint16_t file_off = o.off[ARCPROF_PY_CODE_FILENAME];
    const uint16_t name_off = o.off[ARCPROF_PY_CODE_NAME];
    uint8_t code[256];
    const size_t len = std::max<size_t>({file_off + 24u, o.code_firstlineno + 4u, o.code_linetable + 8u});
    if (len > sizeof(code) || name_off + 8 > len || !ReadMem(p, pid, frame.code, code, len)) {
      ++unreadable_;
      return false;
    }
    uint64_t type = 0, filename = 0, qualname = 0;
    int32_t first_line = 0;
    memcpy(&type, code + 8, 8);
    memcpy(&filename, code + file_off, 8);
    memcpy(&qualname, code + name_off, 8);
    memcpy(&first_line, code + o.code_firstlineno, 4);
    if (type != p.code_type || (filename ^ (qualname << 1 | qualname >> 63)) != frame.stamp) {
      ++stale_;
      return false;
    }
    std::string name, file;
    if (!ReadString(p, pid, qualname, name) || !ReadString(p, pid, filename, file)) {
      ++unreadable_;
      return false;
    }
    auto n = names_.Intern(std::move(name));
    auto f = names_.Intern(std::move(file));
    if (!n || !f) return false;
    out.symbol = *n;
    out.file = *f;
    out.first_line = first_line > 0 ? static_cast<uint32_t>(first_line) : 0;
    out.major = o.major;
    out.minor = o.minor;
    out.first_instr = o.code_adaptive != kNone ? frame.code + o.code_adaptive : 0;
    // The line table: a bytes object; without it (unreadable, too large) a
    // frame is its function's first line.
    uint64_t table = 0;
    memcpy(&table, code + o.code_linetable, 8);
    uint8_t head[40];
    int64_t size = 0;
    if (o.bytes_sval <= sizeof(head) && o.bytes_size + 8u <= o.bytes_sval && ReadMem(p, pid, table, head, o.bytes_sval)) {
      memcpy(&size, head + o.bytes_size, 8);
      if (size > 0 && static_cast<uint64_t>(size) <= kMaxTable) {
        out.table.resize(static_cast<size_t>(size));
        if (!ReadMem(p, pid, table + o.bytes_sval, out.table.data(), out.table.size())) out.table.clear();
      }
    }
    return true;
  }

  std::unordered_map<uint32_t, Proc> procs_;
  FrameNameCache<Cached> cache_{kMaxCached, kMaxTableBytes};
  std::unordered_map<LineKey, uint32_t, LineKeyHash> lines_;  // by code object and instruction
  NameStore names_{kMaxNameBytes};
  uint64_t recognized_ = 0, named_ = 0, stale_ = 0, unreadable_ = 0, debug_offsets_missing_ = 0;
};

}  // namespace

namespace {

// 3.11+ (Objects/locations.md): a varint of 6-bit chunks, bit 6 continuing.
bool ReadVarint(std::span<const uint8_t> t, size_t& at, uint32_t& out) {
  out = 0;
  for (uint32_t shift = 0; at < t.size() && shift < 32; shift += 6) {
    const uint8_t b = t[at++];
    out |= static_cast<uint32_t>(b & 63) << shift;
    if (!(b & 64)) return true;
  }
  return false;
}

int LocationTableLine(std::span<const uint8_t> t, int first_line, int64_t addr) {
  int64_t end = 0;
  int line = first_line;
  size_t at = 0;
  while (at < t.size()) {
    const uint8_t head = t[at++];
    if (!(head & 0x80)) return first_line;  // not the start of an entry: a corrupt table
    const int code = head >> 3 & 15;
    const int64_t start = end;
    end += ((head & 7) + 1) * 2;
    bool has_line = true;
    if (code == 15) {
      has_line = false;  // no location
    } else if (code == 14 || code == 13) {  // long form, no columns: a signed line delta
      uint32_t v = 0;
      if (!ReadVarint(t, at, v)) return first_line;
      line += (v & 1) ? -static_cast<int>(v >> 1) : static_cast<int>(v >> 1);
    } else if (code >= 10) {
      line += code - 10;  // one-line forms
    }
    while (at < t.size() && !(t[at] & 0x80)) ++at;  // the rest of the entry (columns)
    if (addr >= start && addr < end) return has_line ? line : first_line;
  }
  return first_line;
}

// 3.10 (Objects/lnotab_notes.txt): (bytes, signed line delta) pairs; a delta
// of -128 is no line.
int LineTable310(std::span<const uint8_t> t, int first_line, int64_t addr) {
  int64_t end = 0;
  int line = first_line;
  for (size_t at = 0; at + 1 < t.size(); at += 2) {
    const int64_t start = end;
    end += t[at];
    const int delta = static_cast<int8_t>(t[at + 1]);
    const bool has_line = delta != -128;
    if (has_line) line += delta;
    if (addr >= start && addr < end) return has_line ? line : first_line;
  }
  return first_line;
}

// 2.7, 3.6-3.9: co_lnotab, (address increment, line increment) pairs; the
// line increment is signed from 3.6, unsigned in 2.7.
int Lnotab(std::span<const uint8_t> t, int first_line, int64_t addr, bool signed_lines) {
  int64_t at_addr = 0;
  int line = first_line;
  for (size_t at = 0; at + 1 < t.size(); at += 2) {
    at_addr += t[at];
    if (at_addr > addr) break;
    line += signed_lines ? static_cast<int8_t>(t[at + 1]) : t[at + 1];
  }
  return line;
}

}  // namespace

int PythonLine(uint32_t major, uint32_t minor, std::span<const uint8_t> table, int first_line, int64_t addr) {
  if (addr < 0) return first_line;
  if (major == 2) return Lnotab(table, first_line, addr, false);
  if (minor >= 11) return LocationTableLine(table, first_line, addr);
  if (minor == 10) return LineTable310(table, first_line, addr);
  return Lnotab(table, first_line, addr, true);
}

std::optional<uint64_t> PythonInterpHeadFromCode(std::span<const uint8_t> code, uint64_t addr) {
  static constexpr uint8_t kEndbr[] = {0xf3, 0x0f, 0x1e, 0xfa};
  static constexpr uint8_t kMovRip[] = {0x48, 0x8b, 0x05};  // mov disp32(%rip),%rax
  size_t at = code.size() >= sizeof(kEndbr) && memcmp(code.data(), kEndbr, sizeof(kEndbr)) == 0 ? sizeof(kEndbr) : 0;
  if (code.size() < at + 8 || memcmp(code.data() + at, kMovRip, sizeof(kMovRip)) != 0 || code[at + 7] != 0xc3) {
    return std::nullopt;
  }
  int32_t disp = 0;
  memcpy(&disp, code.data() + at + 3, 4);
  return addr + at + 7 + static_cast<int64_t>(disp);
}

std::optional<PythonOffsets> PythonOffsetsFor(uint32_t major, uint32_t minor) {
  if (major == 2) {
    if (minor != 7) return std::nullopt;
    PythonOffsets o = Row(7, {0, 8, 0, 144, 16, kNone, 32, 24, 120, kNone, kNone, 80, 88}, 96, 104, kNone, kNone, kNone);
    o.major = 2;
    o.unicode_state = o.unicode_length = kNone;
    o.bytes_sval = 36;  // PyStringObject: ob_shash and ob_sstate before the bytes
    return o;
  }
  if (major != 3) return std::nullopt;
  switch (minor) {
    case 6:
      return Row(6, {0, 8, 8, 152, 24, kNone, 32, 24, 120, kNone, kNone, 96, 104}, 36, 112, kNone, 48, 72);
    case 7:
      return Row(7, {24, 8, 8, 176, 24, kNone, 32, 24, 104, kNone, kNone, 96, 104}, 36, 112, kNone, 48, 72);
    case 8:
    case 9:
      return Row(minor, {32, 8, 8, 176, 24, kNone, 32, 24, 104, kNone, kNone, 104, 112}, 40, 120, kNone, 48, 72);
    case 10:
      return Row(10, {32, 8, 8, 176, 24, kNone, 32, 24, 96, kNone, kNone, 104, 112}, 40, 120, kNone, 48, 72);
    case 11:
      return Row(11, {40, 16, 8, 160, 56, 8, 32, 48, 56, 69, 68, 112, 128}, 72, 136, 184, 48, 72);
    case 12:
      return Row(12, {40, 72, 8, 144, 56, 0, 0, 8, 56, 70, kNone, 112, 128}, 68, 136, 192, 40, 56);
    case 13:
      return Row(13, {632, 7344, 8, 160, 72, kNone, 0, 8, 56, 70, kNone, 112, 128}, 68, 136, 200, 40, 56);
    default:
      return std::nullopt;
  }
}

std::optional<PythonOffsets> PythonOffsetsFromDebug(std::span<const uint8_t> bytes, uint32_t minor) {
  // _Py_DebugOffsets of 3.13 (Include/internal/pycore_runtime.h), as u64s.
  constexpr size_t kWords = 71;
  if (bytes.size() < kWords * 8 || memcmp(bytes.data(), "xdebugpy", 8) != 0) return std::nullopt;
  uint64_t w[kWords];
  memcpy(w, bytes.data(), sizeof(w));
  const uint64_t version = w[1];
  if (version >> 24 != 3 || (version >> 16 & 0xff) != minor || minor != 13 || w[2] != 0) {
    return std::nullopt;  // another layout of the struct, or free-threaded
  }
  auto fits = [](uint64_t v) { return v < 0xffff; };
  const uint64_t picks[] = {w[5], w[9], w[21], w[25], w[23], w[29], w[30], w[31], w[33], w[35],
                            w[37], w[39], w[38], w[43], w[68], w[69], w[70], w[65], w[66]};
  for (uint64_t v : picks) {
    if (!fits(v)) return std::nullopt;
  }
  auto o = PythonOffsetsFor(3, minor);
  if (!o) return std::nullopt;
  o->off[ARCPROF_PY_RUNTIME_INTERPRETERS_HEAD] = static_cast<uint16_t>(w[5]);
  o->off[ARCPROF_PY_INTERP_THREADS_HEAD] = static_cast<uint16_t>(w[9]);
  o->off[ARCPROF_PY_TSTATE_NEXT] = static_cast<uint16_t>(w[21]);
  o->off[ARCPROF_PY_TSTATE_NATIVE_TID] = static_cast<uint16_t>(w[25]);
  o->off[ARCPROF_PY_TSTATE_FRAME] = static_cast<uint16_t>(w[23]);
  o->off[ARCPROF_PY_CFRAME_FRAME] = kNone;
  o->off[ARCPROF_PY_FRAME_PREVIOUS] = static_cast<uint16_t>(w[29]);
  o->off[ARCPROF_PY_FRAME_CODE] = static_cast<uint16_t>(w[30]);
  o->off[ARCPROF_PY_FRAME_INSTR] = static_cast<uint16_t>(w[31]);
  o->off[ARCPROF_PY_FRAME_OWNER] = static_cast<uint16_t>(w[33]);
  o->off[ARCPROF_PY_FRAME_ENTRY] = kNone;
  o->off[ARCPROF_PY_CODE_FILENAME] = static_cast<uint16_t>(w[35]);
  o->off[ARCPROF_PY_CODE_NAME] = static_cast<uint16_t>(w[37]);  // co_qualname
  o->code_firstlineno = static_cast<uint16_t>(w[39]);
  o->code_linetable = static_cast<uint16_t>(w[38]);
  o->code_adaptive = static_cast<uint16_t>(w[43]);
  o->unicode_state = static_cast<uint16_t>(w[68]);
  o->unicode_length = static_cast<uint16_t>(w[69]);
  o->unicode_ascii_size = static_cast<uint16_t>(w[70]);
  o->bytes_size = static_cast<uint16_t>(w[65]);
  o->bytes_sval = static_cast<uint16_t>(w[66]);
  // BPF reads a frame's fields from its first ARCPROF_PY_FRAME_READ bytes,
  // and the code object's three names after co_filename.
  for (int i : {ARCPROF_PY_FRAME_CODE, ARCPROF_PY_FRAME_PREVIOUS, ARCPROF_PY_FRAME_INSTR}) {
    if (o->off[i] + 8 > ARCPROF_PY_FRAME_READ) return std::nullopt;
  }
  if (o->off[ARCPROF_PY_FRAME_OWNER] >= ARCPROF_PY_FRAME_READ || o->code_firstlineno + 4 > 256 ||
      o->off[ARCPROF_PY_CODE_FILENAME] + 24 > 256 || o->unicode_ascii_size > 128 ||
      o->off[ARCPROF_PY_CODE_NAME] <= o->off[ARCPROF_PY_CODE_FILENAME] ||
      o->off[ARCPROF_PY_CODE_NAME] > o->off[ARCPROF_PY_CODE_FILENAME] + 16) {
    return std::nullopt;
  }
  return o;
}

std::string PythonOffsetsText(const PythonOffsets& o) {
  std::string out = fmt::format("version {}.{}\n", o.major, o.minor);
  auto value = [](uint16_t v) { return v == kNone ? -1 : static_cast<int>(v); };
  for (int i = 0; i <= ARCPROF_PY_CODE_NAME; ++i) out += fmt::format("{} {}\n", kOffNames[i], value(o.off[i]));
  out += fmt::format("code_firstlineno {}\ncode_linetable {}\ncode_adaptive {}\n", o.code_firstlineno,
                     o.code_linetable, value(o.code_adaptive));
  out += fmt::format("unicode_state {}\nunicode_length {}\nunicode_ascii_size {}\nunicode_compact_size {}\n",
                     value(o.unicode_state), value(o.unicode_length), value(o.unicode_ascii_size),
                     value(o.unicode_compact_size));
  out += fmt::format("bytes_size {}\nbytes_sval {}\n", o.bytes_size, o.bytes_sval);
  return out;
}

std::unique_ptr<Runtime> MakePythonRuntime() { return std::make_unique<PythonRuntime>(); }

}  // namespace arcprof::runtimes
