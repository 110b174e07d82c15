#include "runtimes/node/node_runtime.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include <fmt/format.h>

#include "runtimes/naming.h"
#include "symbolize/elf_symbols.h"

namespace arcprof::runtimes {
namespace {

// The ScopeInfo flag bits of V8 10.x-11.x (src/objects/scope-info.tq; V8
// exports no constant for them): whether a saved class variable slot, a
// function variable (its name) and an inferred name are present. A name read
// through them must still be a string, or nothing is named.
constexpr uint32_t kScopeSavedClassVariableBit = 10;
constexpr uint32_t kScopeFunctionVariableShift = 12;
constexpr uint32_t kScopeInferredNameBit = 14;
constexpr uint32_t kScopeTypeMask = 0xf;
constexpr uint32_t kScopeMaxInlinedLocals = 75;  // kScopeInfoMaxInlinedLocalNamesSize

// The base name of a path.
std::string_view BaseName(std::string_view path) {
  const size_t slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

class NodeRuntime final : public Runtime {
 public:
  std::string_view name() const override { return "node"; }
  uint32_t id() const override { return ARCPROF_RUNTIME_V8; }
  bool MayHost(std::string_view path) const override { return MayBeNode(path); }

  std::optional<runtime_proc> Recognize(uint32_t pid, const MappedFile& file) override {
    if (!MayBeNode(file.path) || file.fd < 0) return std::nullopt;
    // One layout per file (every node process maps the same binary).
    auto known = layouts_.find(file.file_id);
    if (known == layouts_.end()) {
      if (layouts_.size() >= kMaxFiles) layouts_.clear();
      known = layouts_.emplace(file.file_id, ReadLayout(file)).first;
    }
    if (!known->second) {
      ++not_v8_;
      return std::nullopt;
    }
    const V8Layout* layout = &*known->second;
    runtime_proc rp{};
    rp.runtime = ARCPROF_RUNTIME_V8;
    rp.version = 0;
    rp.root = 0;
    rp.off[ARCPROF_V8_FP_FUNCTION] = layout->fp_function;
    rp.off[ARCPROF_V8_FP_CONTEXT] = layout->fp_context;
    rp.off[ARCPROF_V8_FP_BYTECODE_OFFSET] = layout->fp_bytecode_offset;
    rp.off[ARCPROF_V8_FUNCTION_SHARED] = layout->function_shared;
    rp.off[ARCPROF_V8_SFI_NAME] = layout->sfi_name;
    rp.off[ARCPROF_V8_SFI_SCRIPT] = layout->sfi_script;
    Proc& p = procs_[pid];
    p = Proc{};
    p.layout = *layout;
    ++recognized_;
    return rp;
  }

  // The v8dbg_* constants of a file: ints in its data (a constant 0 is in
  // .bss, a defined symbol without file bytes).
  static std::optional<V8Layout> ReadLayout(const MappedFile& file) {
    auto elf = OpenElfFd(file.fd);
    if (!elf) return std::nullopt;
    auto info = ReadElfHeaderInfo(elf->get());
    if (!info) return std::nullopt;
    std::unordered_map<std::string, int64_t> constants;
    for (const auto& [name, addr] : FindSymbolValuesWithPrefix(elf->get(), "v8dbg_", 4096)) {
      const auto off = VaddrToFileOffset(info->loads, addr);
      int32_t v = 0;
      if (off && pread(file.fd, &v, sizeof(v), static_cast<off_t>(*off)) != sizeof(v)) continue;
      constants.emplace(name.substr(6), v);
    }
    return V8Layout::Read([&](std::string_view name) -> std::optional<int64_t> {
      auto it = constants.find(std::string(name));
      if (it == constants.end()) return std::nullopt;
      return it->second;
    });
  }

  bool IsHostFrame(uint32_t, std::string_view) const override { return false; }
  uint64_t NativePc(const runtime_frame& frame) const override { return frame.instr & ARCPROF_V8_PC_MASK; }

  SymbolizedFrame Name(uint32_t pid, const runtime_frame& frame) override {
    SymbolizedFrame f;
    f.kind = FrameKind::kJs;
    f.module = "[js]";
    f.address = frame.code;
    f.offset = frame.code;
    const NamedFrame* c = cache_.Find(
        pid, frame, procs_, [&](Proc& p, NamedFrame& out) { return ReadFunction(pid, p, frame, out); }, &f.reason);
    if (c == nullptr) {
      if (f.reason == UnknownReason::kNoProcess) ++unreadable_;
      return f;
    }
    ++named_;
    f.symbol = c->symbol;
    f.module = c->file;
    f.address = SourceAddress(static_cast<uint32_t>(c->line));
    return f;
  }

  void Forget(uint32_t pid) override {
    procs_.erase(pid);
    cache_.Forget(pid);
    std::erase_if(lines_, [pid](const auto& kv) { return kv.first.pid == pid; });
  }

  void TakeCounters(const std::function<void(std::string_view, int64_t)>& add) override {
    if (recognized_) add("node.processes_recognized", static_cast<int64_t>(recognized_));
    if (not_v8_) add("node.not_v8", static_cast<int64_t>(not_v8_));
    if (named_) add("node.frames_named", static_cast<int64_t>(named_));
    if (stale_) add("node.frames_function_gone", static_cast<int64_t>(stale_));
    if (unreadable_) add("node.frames_unreadable", static_cast<int64_t>(unreadable_));
    if (const uint64_t n = names_.TakeOverBudget()) add("node.names_over_budget", static_cast<int64_t>(n));
    if (truncated_) add("node.names_truncated", static_cast<int64_t>(truncated_));
    recognized_ = not_v8_ = named_ = stale_ = unreadable_ = truncated_ = 0;
  }

  size_t HeldBytes() const override {
    size_t bytes = names_.HeldBytes() + cache_.HeldBytes() +
                   procs_.size() * sizeof(Proc);
    for (const auto& [k, v] : lines_) bytes += sizeof(k) + 48 + v.capacity() * sizeof(uint32_t);
    return bytes;
  }

 private:
  struct Proc {
    V8Layout layout;
    ProcessMemory mem;
  };
  // A script's line starts, by (pid, script, source): the source string is
  // part of the key, so a script object reused for another source is not
  // misread.
  struct ScriptKey {
    uint32_t pid;
    uint64_t script, source;
    bool operator==(const ScriptKey&) const = default;
  };
  struct ScriptKeyHash {
    size_t operator()(const ScriptKey& k) const {
      return (k.script * 0x9e3779b97f4a7c15ull) ^ (k.source * 0xbf58476d1ce4e5b9ull) ^ k.pid;
    }
  };
  static constexpr size_t kMaxCached = 1 << 16;
  static constexpr size_t kMaxFiles = 64;
  static constexpr size_t kMaxScripts = 4096;
  static constexpr size_t kMaxNameBytes = 16u << 20;
  static constexpr size_t kMaxChars = 1024;           // a longer name or path is cut
  static constexpr size_t kMaxSourceChars = 8u << 20;  // a longer script gives no lines
  static constexpr int kMaxStringHops = 8;             // thin/sliced/cons indirections

  bool ReadMem(Proc& p, uint32_t pid, uint64_t addr, void* out, size_t n) { return p.mem.Read(pid, addr, out, n); }
  bool ReadWord(Proc& p, uint32_t pid, uint64_t addr, uint64_t& out) { return ReadMem(p, pid, addr, &out, 8); }

  static bool IsHeapObject(uint64_t v) { return (v & 3) == 1; }
  int64_t SmiValue(const Proc& p, uint64_t v) const {
    return static_cast<int64_t>(v) >> p.layout.smi_shift;
  }
  static bool IsSmi(uint64_t v) { return (v & 1) == 0; }

  // The instance type of a tagged heap object, -1 when unreadable.
  int32_t TypeOf(Proc& p, uint32_t pid, uint64_t obj) {
    uint64_t map = 0;
    if (!IsHeapObject(obj) || !ReadWord(p, pid, obj - 1 + p.layout.map, map) || !IsHeapObject(map)) return -1;
    uint16_t type = 0;
    if (!ReadMem(p, pid, map - 1 + p.layout.map_instance_type, &type, 2)) return -1;
    return type;
  }

  // A V8 string as UTF-8, at most `max` characters (sequential, thin,
  // sliced strings, and a cons string's flat first part); false for what it
  // cannot read (an external string's data lives outside the heap).
  bool ReadString(Proc& p, uint32_t pid, uint64_t str, std::string& out, size_t max, size_t* full_length = nullptr) {
    const V8Layout& l = p.layout;
    uint64_t start = 0;
    for (int hop = 0; hop < kMaxStringHops; ++hop) {
      const int32_t type = TypeOf(p, pid, str);
      if (type < 0 || static_cast<uint32_t>(type) >= l.first_nonstring) return false;
      int32_t length = 0;
      if (!ReadMem(p, pid, str - 1 + l.string_length, &length, 4) || length < 0) return false;
      const uint32_t repr = static_cast<uint32_t>(type) & l.repr_mask;
      uint64_t next = 0;
      if (repr == l.thin_tag) {
        if (!ReadWord(p, pid, str - 1 + l.thin_actual, next)) return false;
        str = next;
        continue;
      }
      if (repr == l.sliced_tag) {
        uint64_t offset = 0;
        if (!ReadWord(p, pid, str - 1 + l.sliced_offset, offset) || !IsSmi(offset) ||
            !ReadWord(p, pid, str - 1 + l.sliced_parent, next)) {
          return false;
        }
        start += static_cast<uint64_t>(std::max<int64_t>(0, SmiValue(p, offset)));
        str = next;
        continue;
      }
      if (repr == l.cons_tag) {
        // A flattened cons string holds everything in its first part.
        uint64_t second = 0;
        if (!ReadWord(p, pid, str - 1 + l.cons_second, second) || TypeOf(p, pid, second) < 0 ||
            !ReadWord(p, pid, str - 1 + l.cons_first, next)) {
          return false;
        }
        int32_t second_length = -1;
        if (!ReadMem(p, pid, second - 1 + l.string_length, &second_length, 4) || second_length != 0) return false;
        str = next;
        continue;
      }
      if (repr != l.seq_tag) return false;
      const bool one_byte = (static_cast<uint32_t>(type) & l.encoding_mask) == l.one_byte_tag;
      if (start > static_cast<uint64_t>(length)) return false;
      const size_t avail = static_cast<size_t>(length) - start;
      if (full_length) *full_length = avail;
      const size_t chars = std::min(avail, max);
      const size_t width = one_byte ? 1 : 2;
      std::vector<uint8_t> raw(chars * width);
      const uint64_t data = str - 1 + (one_byte ? l.seq_one_byte_chars : l.seq_two_byte_chars) + start * width;
      if (chars > 0 && !ReadMem(p, pid, data, raw.data(), raw.size())) return false;
      out.clear();
      out.reserve(chars);
      for (size_t i = 0; i < chars; ++i) {
        uint32_t c = raw[i * width];
        if (!one_byte) c |= static_cast<uint32_t>(raw[i * 2 + 1]) << 8;
        if (c < 0x80) {
          out.push_back(static_cast<char>(c));
        } else if (c < 0x800) {
          out.push_back(static_cast<char>(0xc0 | c >> 6));
          out.push_back(static_cast<char>(0x80 | (c & 0x3f)));
        } else if (c >= 0xd800 && c < 0xe000) {
          out += "\xef\xbf\xbd";  // a lone surrogate half: U+FFFD
        } else {
          out.push_back(static_cast<char>(0xe0 | c >> 12));
          out.push_back(static_cast<char>(0x80 | (c >> 6 & 0x3f)));
          out.push_back(static_cast<char>(0x80 | (c & 0x3f)));
        }
      }
      if (avail > chars && !full_length) {
        out += "...";
        ++truncated_;
      }
      return true;
    }
    return false;  // more indirections than any string has
  }

  // The function's name and its start position (-1: unknown), from its
  // name-or-scope-info word: a String (a function not compiled yet), a
  // ScopeInfo (the function variable's name, else the inferred name), or
  // Smi 0 (no name).
  void ReadName(Proc& p, uint32_t pid, uint64_t name_or_scope, std::string& name, int64_t& start) {
    const V8Layout& l = p.layout;
    start = -1;
    name.clear();
    if (!IsHeapObject(name_or_scope)) return;
    const int32_t type = TypeOf(p, pid, name_or_scope);
    if (type >= 0 && static_cast<uint32_t>(type) < l.first_nonstring) {
      ReadString(p, pid, name_or_scope, name, kMaxChars);
      return;
    }
    if (type != l.type_scope_info) return;
    // Tagged slots after the map: flags, parameter count, context local
    // count, then the variable part (scope-info.tq).
    const uint64_t base = name_or_scope - 1 + 8;
    uint64_t flags_word = 0, locals_word = 0;
    if (!ReadWord(p, pid, base, flags_word) || !ReadWord(p, pid, base + 8ull * l.scope_ncontextlocals, locals_word) ||
        !IsSmi(flags_word) || !IsSmi(locals_word)) {
      return;
    }
    const uint64_t flags = static_cast<uint64_t>(SmiValue(p, flags_word));
    const int64_t locals = SmiValue(p, locals_word);
    if (locals < 0 || locals > (1 << 20)) return;
    uint64_t slot = l.scope_first_vars + (locals < kScopeMaxInlinedLocals ? locals : 1) + locals;
    if (flags >> kScopeSavedClassVariableBit & 1) ++slot;
    auto string_at = [&](uint64_t s, std::string& out) {
      uint64_t v = 0;
      if (!ReadWord(p, pid, base + 8 * s, v) || !IsHeapObject(v)) return false;
      const int32_t t = TypeOf(p, pid, v);
      return t >= 0 && static_cast<uint32_t>(t) < l.first_nonstring && ReadString(p, pid, v, out, kMaxChars);
    };
    if ((flags >> kScopeFunctionVariableShift & 3) != 0) {
      string_at(slot, name);
      slot += 2;
    }
    if (flags >> kScopeInferredNameBit & 1) {
      if (name.empty()) string_at(slot, name);
      ++slot;
    }
    // Function, script, eval and module scopes carry their positions next.
    const uint32_t scope_type = flags & kScopeTypeMask;
    if (scope_type == 1 || scope_type == 2 || scope_type == 3 || scope_type == 4) {
      uint64_t s = 0, e = 0;
      if (ReadWord(p, pid, base + 8 * slot, s) && ReadWord(p, pid, base + 8 * (slot + 1), e) && IsSmi(s) &&
          IsSmi(e) && SmiValue(p, s) >= 0 && SmiValue(p, s) <= SmiValue(p, e)) {
        start = SmiValue(p, s);
      }
    }
  }

  // The 1-based line of a source position in a script, 0 when unknown.
  uint64_t LineOf(Proc& p, uint32_t pid, uint64_t script, uint64_t source, int64_t position) {
    if (position < 0 || !IsHeapObject(source)) return 0;
    const ScriptKey key{pid, script, source};
    auto it = lines_.find(key);
    if (it == lines_.end()) {
      std::vector<uint32_t> starts;
      std::string text;
      size_t full = 0;
      if (ReadString(p, pid, source, text, kMaxSourceChars, &full) && full <= kMaxSourceChars) {
        // Positions count UTF-16 units; a non-ASCII script is counted in
        // bytes here, which only moves lines after its first non-ASCII
        // character (a sequential two-byte source is read as such).
        starts.push_back(0);
        uint32_t unit = 0;
        for (size_t i = 0; i < text.size(); ++i) {
          const unsigned char c = static_cast<unsigned char>(text[i]);
          if ((c & 0xc0) != 0x80) ++unit;
          if (c == '\n') starts.push_back(unit);
        }
      }
      if (lines_.size() >= kMaxScripts) lines_.clear();
      it = lines_.emplace(key, std::move(starts)).first;
    }
    const auto& starts = it->second;
    if (starts.empty()) return 0;
    return static_cast<uint64_t>(std::upper_bound(starts.begin(), starts.end(), static_cast<uint64_t>(position)) -
                                 starts.begin());
  }

  // The SharedFunctionInfo as it is now, named only when it is still the
  // object the sampler saw: a SharedFunctionInfo (its map's type) holding the
  // same name-or-scope-info and script words (the stamp). A freed object, or
  // another one at the same address since, is not misnamed.
  bool ReadFunction(uint32_t pid, Proc& p, const runtime_frame& frame, NamedFrame& out) {
    const V8Layout& l = p.layout;
    const uint64_t sfi = frame.code;
    uint64_t name_word = 0, script = 0;
    if (!IsHeapObject(sfi) || !ReadWord(p, pid, sfi - 1 + l.sfi_name, name_word) ||
        !ReadWord(p, pid, sfi - 1 + l.sfi_script, script)) {
      ++unreadable_;
      return false;
    }
    if (TypeOf(p, pid, sfi) != l.type_sfi || (name_word ^ (script << 1 | script >> 63)) != frame.stamp) {
      ++stale_;
      return false;
    }
    std::string name, file;
    int64_t start = -1;
    ReadName(p, pid, name_word, name, start);
    uint64_t line = 0;
    if (TypeOf(p, pid, script) == l.type_script) {
      uint64_t script_name = 0, source = 0;
      if (ReadWord(p, pid, script - 1 + l.script_name, script_name) && IsHeapObject(script_name)) {
        ReadString(p, pid, script_name, file, kMaxChars);
      }
      if (ReadWord(p, pid, script - 1 + l.script_source, source)) line = LineOf(p, pid, script, source, start);
    }
    if (name.empty()) {
      // The module wrapper node compiles a CommonJS file into starts at
      // position 0 of its script; other unnamed functions are anonymous.
      name = start == 0 ? "(top level)" : "(anonymous)";
    }
    if (file.empty()) file = "[js]";
    auto n = names_.Intern(std::move(name));
    auto f = names_.Intern(std::move(file));
    if (!n || !f) return false;
    out.symbol = *n;
    out.file = *f;
    out.line = line;
    return true;
  }

  std::unordered_map<uint32_t, Proc> procs_;
  std::unordered_map<uint32_t, std::optional<V8Layout>> layouts_;  // by MappedFile::file_id
  FrameNameCache<NamedFrame> cache_{kMaxCached};
  std::unordered_map<ScriptKey, std::vector<uint32_t>, ScriptKeyHash> lines_;
  NameStore names_{kMaxNameBytes};
  uint64_t recognized_ = 0, not_v8_ = 0, named_ = 0, stale_ = 0, unreadable_ = 0, truncated_ = 0;
};

}  // namespace

bool MayBeNode(std::string_view path) {
  const std::string_view base = BaseName(path);
  if (base == "node" || base == "nodejs") return true;
  if (base.starts_with("libnode.so")) return true;
  // node20, node-20: a versioned name.
  if (base.starts_with("node")) {
    std::string_view rest = base.substr(4);
    if (!rest.empty() && (rest[0] == '-' || rest[0] == '_')) rest.remove_prefix(1);
    return !rest.empty() && rest.size() <= 8 &&
           std::all_of(rest.begin(), rest.end(), [](char c) { return (c >= '0' && c <= '9') || c == '.'; });
  }
  return false;
}

std::optional<V8Layout> V8Layout::Read(const std::function<std::optional<int64_t>(std::string_view)>& lookup) {
  V8Layout l;
  bool ok = true;
  // Each constant must be there and fit a small field.
  auto get = [&](std::string_view name, int64_t lo, int64_t hi) -> int64_t {
    auto v = lookup(name);
    if (!v || *v < lo || *v > hi) {
      ok = false;
      return 0;
    }
    return *v;
  };
  auto field = [&](std::string_view name) { return static_cast<uint16_t>(get(name, 0, 4096)); };
  // Without pointer compression, tagged values are 8 bytes and heap objects
  // tagged 1 (the only layout the walker and this reader know).
  if (get("TaggedSize", 8, 8) != 8 || get("HeapObjectTag", 1, 1) != 1 || get("SmiTagMask", 1, 1) != 1) {
    return std::nullopt;
  }
  l.smi_shift = static_cast<uint32_t>(get("SmiShiftSize", 31, 31) + 1);
  // Frame slots below the frame pointer, 8-byte aligned, within what BPF reads.
  auto below = [&](std::string_view name) {
    const int64_t v = get(name, -ARCPROF_V8_FRAME_BELOW, -8);
    if (v % 8 != 0) ok = false;
    return static_cast<uint16_t>(-v);
  };
  l.fp_function = below("off_fp_function");
  l.fp_context = below("off_fp_context");
  l.fp_bytecode_offset = below("off_fp_bytecode_offset");
  l.function_shared = field("class_JSFunction__shared__SharedFunctionInfo");
  l.sfi_name = field("class_SharedFunctionInfo__name_or_scope_info__Object");
  l.sfi_script = field("class_SharedFunctionInfo__script_or_debug_info__HeapObject");
  l.map = field("class_HeapObject__map__Map");
  l.map_instance_type = field("class_Map__instance_type__uint16_t");
  l.script_name = field("class_Script__name__Object");
  l.script_source = field("class_Script__source__Object");
  l.string_length = field("class_String__length__int32_t");
  l.seq_one_byte_chars = field("class_SeqOneByteString__chars__char");
  l.seq_two_byte_chars = field("class_SeqTwoByteString__chars__char");
  l.cons_first = field("class_ConsString__first__String");
  l.cons_second = field("class_ConsString__second__String");
  l.sliced_parent = field("class_SlicedString__parent__String");
  l.sliced_offset = field("class_SlicedString__offset__SMI");
  l.thin_actual = field("class_ThinString__actual__String");
  l.type_sfi = static_cast<uint16_t>(get("type_SharedFunctionInfo__SHARED_FUNCTION_INFO_TYPE", 1, 0xffff));
  l.type_scope_info = static_cast<uint16_t>(get("type_ScopeInfo__SCOPE_INFO_TYPE", 1, 0xffff));
  l.type_script = static_cast<uint16_t>(get("type_Script__SCRIPT_TYPE", 1, 0xffff));
  l.first_nonstring = static_cast<uint16_t>(get("FirstNonstringType", 1, 0xffff));
  l.repr_mask = static_cast<uint16_t>(get("StringRepresentationMask", 1, 0xff));
  l.encoding_mask = static_cast<uint16_t>(get("StringEncodingMask", 1, 0xff));
  l.seq_tag = static_cast<uint16_t>(get("SeqStringTag", 0, 0xff));
  l.cons_tag = static_cast<uint16_t>(get("ConsStringTag", 0, 0xff));
  l.sliced_tag = static_cast<uint16_t>(get("SlicedStringTag", 0, 0xff));
  l.thin_tag = static_cast<uint16_t>(get("ThinStringTag", 0, 0xff));
  l.one_byte_tag = static_cast<uint16_t>(get("OneByteStringTag", 0, 0xff));
  l.scope_first_vars = static_cast<uint16_t>(get("scopeinfo_idx_first_vars", 1, 64));
  l.scope_ncontextlocals = static_cast<uint16_t>(get("scopeinfo_idx_ncontextlocals", 1, 64));
  if (!ok) return std::nullopt;
  return l;
}

std::unique_ptr<Runtime> MakeNodeRuntime() { return std::make_unique<NodeRuntime>(); }

}  // namespace arcprof::runtimes
