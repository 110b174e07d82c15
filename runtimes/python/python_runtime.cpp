#include "runtimes/python/python_runtime.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstring>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include <fmt/format.h>

#include "runtimes/naming.h"
#include "symbolize/elf_symbols.h"

namespace arcprof::runtimes {
namespace {

constexpr uint16_t kNone = ARCPROF_PY_NO_OFFSET;

// Rows printed by tests/runtimes/python_offsets_probe.c against each
// version's Include/internal headers.
PythonOffsets Row(uint32_t minor, std::initializer_list<uint16_t> bpf, uint16_t firstlineno,
                  uint16_t linetable, uint16_t adaptive, uint16_t ascii, uint16_t compact) {
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
    "frame_instr",               "frame_owner",          "frame_entry", "code_filename"};
static_assert(sizeof(kOffNames) / sizeof(kOffNames[0]) == ARCPROF_PY_CODE_FILENAME + 1);

// The bytes of a file at an ELF virtual address.
bool ReadFileAt(const MappedFile& file, const std::vector<LoadSegment>& loads, uint64_t vaddr,
                void* out, size_t n) {
  auto off = VaddrToFileOffset(loads, vaddr);
  if (!off) return false;
  return pread(file.fd, out, n, static_cast<off_t>(*off)) == static_cast<ssize_t>(n);
}

// "python3.11", "libpython3.12.so.1.0", "python3.13d": the 3.X minor in a
// binary's or library's base name, 0 when none.
uint32_t MinorInName(std::string_view path) {
  const size_t slash = path.rfind('/');
  std::string_view base = slash == std::string_view::npos ? path : path.substr(slash + 1);
  if (base.starts_with("lib")) base.remove_prefix(3);
  if (!base.starts_with("python3.")) return 0;
  base.remove_prefix(8);
  uint32_t minor = 0;
  size_t digits = 0;
  while (digits < base.size() && digits < 3 && base[digits] >= '0' && base[digits] <= '9') {
    minor = minor * 10 + static_cast<uint32_t>(base[digits] - '0');
    ++digits;
  }
  return digits == 0 ? 0 : minor;
}

class PythonRuntime final : public Runtime {
 public:
  std::string_view name() const override { return "python"; }
  uint32_t id() const override { return ARCPROF_RUNTIME_PYTHON; }

  bool MayHost(std::string_view path) const override { return MinorInName(path) >= 11; }

  std::optional<runtime_proc> Recognize(uint32_t pid, const MappedFile& file) override {
    const uint32_t name_minor = MinorInName(file.path);
    if (name_minor < 11 || file.fd < 0) return std::nullopt;
    auto elf = OpenElfFd(file.fd);
    if (!elf) return std::nullopt;
    auto info = ReadElfHeaderInfo(elf->get());
    if (!info) return std::nullopt;
    const auto runtime = FindSymbolValue(elf->get(), "_PyRuntime");
    const auto version = FindSymbolValue(elf->get(), "Py_Version");
    const auto code_type = FindSymbolValue(elf->get(), "PyCode_Type");
    if (!runtime || !version || !code_type) return std::nullopt;  // not CPython 3.11+
    uint64_t hex = 0;
    if (!ReadFileAt(file, info->loads, *version, &hex, 4)) return std::nullopt;
    hex &= 0xffffffffu;
    const uint32_t major = static_cast<uint32_t>(hex >> 24), minor = static_cast<uint32_t>(hex >> 16 & 0xff);
    if (major != 3 || minor != name_minor) return std::nullopt;
    std::optional<PythonOffsets> offsets;
    if (minor >= 13) {
      // The interpreter documents its offsets: _Py_DebugOffsets opens _PyRuntime.
      std::vector<uint8_t> debug(71 * 8);
      if (ReadFileAt(file, info->loads, *runtime, debug.data(), debug.size())) {
        offsets = PythonOffsetsFromDebug(debug, minor);
      }
      if (!offsets) ++debug_offsets_missing_;
    }
    if (!offsets) offsets = PythonOffsetsFor(minor);
    if (!offsets) return std::nullopt;
    runtime_proc rp{};
    rp.runtime = ARCPROF_RUNTIME_PYTHON;
    rp.version = 0x300 | minor;
    rp.root = *runtime + file.load_bias;
    memcpy(rp.off, offsets->off, sizeof(rp.off));
    Proc& p = procs_[pid];
    p = Proc{};
    p.offsets = *offsets;
    p.code_type = *code_type + file.load_bias;
    ++recognized_;
    return rp;
  }

  bool IsHostFrame(std::string_view symbol) const override {
    return symbol == "_PyEval_EvalFrameDefault";
  }

  SymbolizedFrame Name(uint32_t pid, const runtime_frame& frame) override {
    SymbolizedFrame f;
    f.kind = FrameKind::kInterpreted;
    f.module = "[python]";
    f.address = frame.code;
    f.offset = frame.code;
    const NameKey key{pid, frame.code, frame.stamp};
    if (auto it = cache_.find(key); it != cache_.end()) {
      ++named_;
      f.symbol = it->second.symbol;
      f.module = it->second.file;
      f.address = it->second.line;
      return f;
    }
    auto p = procs_.find(pid);
    if (p == procs_.end()) {
      f.reason = UnknownReason::kNoProcess;
      ++unreadable_;
      return f;
    }
    NamedFrame c;
    if (!ReadCode(pid, p->second, frame, c)) {
      f.reason = UnknownReason::kNoSymbols;
      return f;
    }
    if (cache_.size() >= kMaxCached) cache_.clear();
    cache_.emplace(key, c);
    ++named_;
    f.symbol = c.symbol;
    f.module = c.file;
    f.address = c.line;
    return f;
  }

  void Forget(uint32_t pid) override {
    procs_.erase(pid);
    std::erase_if(cache_, [pid](const auto& kv) { return kv.first.pid == pid; });
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
    return names_.HeldBytes() + cache_.size() * (sizeof(NameKey) + sizeof(NamedFrame) + 32) +
           procs_.size() * sizeof(Proc);
  }

 private:
  struct Proc {
    PythonOffsets offsets;
    uint64_t code_type = 0;  // &PyCode_Type in the process
    ProcessMemory mem;
  };
  static constexpr size_t kMaxCached = 1 << 16;
  static constexpr size_t kMaxNameBytes = 16u << 20;
  static constexpr size_t kMaxChars = 1024;  // a longer name or path is cut

  bool ReadMem(Proc& p, uint32_t pid, uint64_t addr, void* out, size_t n) { return p.mem.Read(pid, addr, out, n); }

  // A str object as UTF-8 (compact strings only: every name and path a code
  // object holds), at most kMaxChars characters.
  bool ReadString(Proc& p, uint32_t pid, uint64_t addr, std::string& out) {
    const PythonOffsets& o = p.offsets;
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

  // The code object as it is now, named only when it is still the object
  // the sampler saw: a code object (its type) holding the same filename and
  // qualified name (the stamp). A freed object, or another one at the same
  // address since, is not misnamed.
  bool ReadCode(uint32_t pid, Proc& p, const runtime_frame& frame, NamedFrame& out) {
    const PythonOffsets& o = p.offsets;
    const uint16_t file_off = o.off[ARCPROF_PY_CODE_FILENAME];
    uint8_t code[256];
    const size_t len = std::max<size_t>(file_off + 24, o.code_firstlineno + 4);
    if (len > sizeof(code) || !ReadMem(p, pid, frame.code, code, len)) {
      ++unreadable_;
      return false;
    }
    uint64_t type = 0, filename = 0, qualname = 0;
    int32_t first_line = 0;
    memcpy(&type, code + 8, 8);
    memcpy(&filename, code + file_off, 8);
    memcpy(&qualname, code + file_off + 16, 8);
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
    out.line = first_line > 0 ? static_cast<uint64_t>(first_line) : 0;
    return true;
  }

  std::unordered_map<uint32_t, Proc> procs_;
  NameCache cache_;
  NameStore names_{kMaxNameBytes};
  uint64_t recognized_ = 0, named_ = 0, stale_ = 0, unreadable_ = 0, debug_offsets_missing_ = 0;
};

}  // namespace

std::optional<PythonOffsets> PythonOffsetsFor(uint32_t minor) {
  switch (minor) {
    case 11:
      return Row(11, {40, 16, 8, 160, 56, 8, 32, 48, 56, 69, 68, 112}, 72, 136, 184, 48, 72);
    case 12:
      return Row(12, {40, 72, 8, 144, 56, 0, 0, 8, 56, 70, kNone, 112}, 68, 136, 192, 40, 56);
    case 13:
      return Row(13, {632, 7344, 8, 160, 72, kNone, 0, 8, 56, 70, kNone, 112}, 68, 136, 200, 40, 56);
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
                            w[39], w[38], w[43], w[68], w[69], w[70], w[65], w[66]};
  for (uint64_t v : picks) {
    if (!fits(v)) return std::nullopt;
  }
  auto o = PythonOffsetsFor(minor);
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
      o->off[ARCPROF_PY_CODE_FILENAME] + 24 > 256 || o->unicode_ascii_size > 128) {
    return std::nullopt;
  }
  return o;
}

std::string PythonOffsetsText(const PythonOffsets& o) {
  std::string out = fmt::format("version 3.{}\n", o.minor);
  for (int i = 0; i <= ARCPROF_PY_CODE_FILENAME; ++i) {
    out += fmt::format("{} {}\n", kOffNames[i], o.off[i] == kNone ? -1 : static_cast<int>(o.off[i]));
  }
  out += fmt::format("code_firstlineno {}\ncode_linetable {}\ncode_adaptive {}\n", o.code_firstlineno,
                     o.code_linetable, o.code_adaptive);
  out += fmt::format("unicode_state {}\nunicode_length {}\nunicode_ascii_size {}\nunicode_compact_size {}\n",
                     o.unicode_state, o.unicode_length, o.unicode_ascii_size, o.unicode_compact_size);
  out += fmt::format("bytes_size {}\nbytes_sval {}\n", o.bytes_size, o.bytes_sval);
  return out;
}

std::unique_ptr<Runtime> MakePythonRuntime() { return std::make_unique<PythonRuntime>(); }

}  // namespace arcprof::runtimes
