#include "runtimes/node/node_runtime.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <map>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include <fmt/format.h>

#include "runtimes/naming.h"
#include "runtimes/node/v8_tables.h"
#include "spaces/proc_parse.h"
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
    // V8's builtins, the interpreter among them, are embedded in node (or
    // libnode) and run from its executable mappings (or a copy V8 maps near
    // its JIT code); JIT code is in anonymous memory.
    p.file = std::string(file.path);
    ++recognized_;
    return rp;
  }

  // The v8dbg_* constants of a file: ints in its data (a constant 0 is in
  // .bss, a defined symbol without file bytes); and V8's bytecode sizes.
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
    auto layout = V8Layout::Read([&](std::string_view name) -> std::optional<int64_t> {
      auto it = constants.find(std::string(name));
      if (it == constants.end()) return std::nullopt;
      return it->second;
    });
    if (!layout) return layout;
    // v8::internal::interpreter::Bytecodes::kBytecodeSizes: 3 x count sizes.
    if (auto sym = FindSymbolValueAndSize(elf->get(), "_ZN2v88internal11interpreter9Bytecodes14kBytecodeSizesE")) {
      const auto off = VaddrToFileOffset(info->loads, sym->first);
      if (off && sym->second > 0 && sym->second % 3 == 0 && sym->second <= 3 * 256) {
        std::vector<uint8_t> sizes(sym->second);
        if (pread(file.fd, sizes.data(), sizes.size(), static_cast<off_t>(*off)) == static_cast<ssize_t>(sizes.size()) &&
            std::all_of(sizes.begin(), sizes.end(), [](uint8_t b) { return b > 0 && b < 64; })) {
          layout->bytecode_sizes = std::move(sizes);
        }
      }
    }
    return layout;
  }

  bool IsHostFrame(uint32_t, std::string_view) const override { return false; }
  uint64_t NativePc(const runtime_frame& frame) const override { return frame.instr & ARCPROF_V8_PC_MASK; }

  SymbolizedFrame Name(uint32_t pid, const runtime_frame& frame) override {
    std::vector<SymbolizedFrame> out;
    NameInlined(pid, frame, out);
    return out.front();
  }

  // The function whose code ran, at the line running, then the functions
  // optimized code inlined at that pc, each at its own line.
  void NameInlined(uint32_t pid, const runtime_frame& frame, std::vector<SymbolizedFrame>& out) override {
    out.clear();
    SymbolizedFrame f;
    f.kind = FrameKind::kJs;
    f.module = "[js]";
    f.address = frame.code;
    f.offset = frame.code;
    const JsFunction* c = cache_.Find(
        pid, frame, procs_, [&](Proc& p, JsFunction& v) { return ReadFunction(pid, p, frame.code, frame.stamp, v); },
        &f.reason);
    auto proc = procs_.find(pid);
    if (c == nullptr || proc == procs_.end()) {
      if (f.reason == UnknownReason::kNoProcess) ++unreadable_;
      out.push_back(f);
      return;
    }
    ++named_;
    Proc& p = proc->second;
    // Innermost first: (function, script offset); function -1 is c.
    chain_.assign(1, V8InlinedFrame{-1, -1});
    const CodeInfo* code = p.layout.lines ? Locate(pid, p, frame, *c, chain_) : nullptr;
    for (size_t i = chain_.size(); i-- > 0;) {
      const JsFunction* fn = c;
      if (chain_[i].function >= 0) {
        fn = nullptr;
        if (code != nullptr && static_cast<size_t>(chain_[i].function) < code->inlined.size()) {
          fn = FunctionAt(pid, p, code->inlined[static_cast<size_t>(chain_[i].function)]);
        }
        if (fn == nullptr) {
          ++inlined_unnamed_;
          continue;
        }
        ++inlined_;
      }
      SymbolizedFrame g = f;
      g.reason = UnknownReason::kNone;
      g.symbol = fn->symbol;
      g.module = fn->file;
      g.address = SourceAddress(static_cast<uint32_t>(fn->line));
      if (chain_[i].script_offset >= 0) {
        if (auto at = LineOf(p, pid, fn->script, fn->source, chain_[i].script_offset)) {
          g.address = SourceAddress(at->first, at->second);
        }
      }
      out.push_back(g);
    }
    if (out.empty()) out.push_back(f);
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
    if (line_bytecode_) add("node.lines_interpreted", static_cast<int64_t>(line_bytecode_));
    if (line_baseline_) add("node.lines_baseline", static_cast<int64_t>(line_baseline_));
    if (line_optimized_) add("node.lines_optimized", static_cast<int64_t>(line_optimized_));
    if (line_unknown_) add("node.lines_function_start", static_cast<int64_t>(line_unknown_));
    if (code_unknown_) add("node.code_not_found", static_cast<int64_t>(code_unknown_));
    if (tables_bad_) add("node.position_tables_bad", static_cast<int64_t>(tables_bad_));
    if (inlined_) add("node.frames_inlined", static_cast<int64_t>(inlined_));
    if (inlined_unnamed_) add("node.inlined_unnamed", static_cast<int64_t>(inlined_unnamed_));
    recognized_ = not_v8_ = named_ = stale_ = unreadable_ = truncated_ = 0;
    line_bytecode_ = line_baseline_ = line_optimized_ = line_unknown_ = code_unknown_ = tables_bad_ = 0;
    inlined_ = inlined_unnamed_ = 0;
  }

  size_t HeldBytes() const override {
    size_t bytes = names_.HeldBytes() + cache_.HeldBytes() + procs_.size() * sizeof(Proc);
    for (const auto& [pid, p] : procs_) bytes += p.code_bytes + p.codes.size() * (sizeof(CodeInfo) + 48);
    for (const auto& [k, v] : lines_) bytes += sizeof(k) + 48 + v.capacity() * sizeof(uint32_t);
    return bytes;
  }

 private:
  // A function as named once: its name, file and first line, what its lines
  // need (the script's words, its bytecode's source positions).
  struct JsFunction {
    std::string_view symbol, file;
    uint64_t line = 0;
    uint64_t script = 0, source = 0;
    std::vector<V8Position> bytecode_positions;  // empty: none
    size_t HeldBytes() const { return bytecode_positions.capacity() * sizeof(V8Position); }
  };
  // One piece of baseline or optimized code, by its first instruction.
  struct CodeInfo {
    uint64_t start = 0;  // its first instruction
    uint64_t end = 0;    // one past its last instruction
    uint64_t sfi = 0;    // the function it runs (0: not known to be a JavaScript function's)
    bool baseline = false;
    std::vector<V8Position> positions;    // optimized: machine code offset -> position
    std::vector<V8Inlining> inlinings;    // optimized: inlining ids -> (call position, function)
    std::vector<uint64_t> inlined;        // optimized: inlined functions' SharedFunctionInfos
    std::vector<uint8_t> offsets, bytecodes;  // baseline: pc -> bytecode
    std::unordered_map<uint32_t, int32_t> baseline_pcs;  // baseline: pc offsets already mapped
    size_t Bytes() const {
      return positions.capacity() * sizeof(V8Position) + inlinings.capacity() * sizeof(V8Inlining) +
             inlined.capacity() * 8 + offsets.capacity() + bytecodes.capacity();
    }
  };
  struct Proc {
    V8Layout layout;
    ProcessMemory mem;
    std::string file;                                    // the recognized binary's path
    std::vector<std::pair<uint64_t, uint64_t>> builtins;  // its executable mappings
    std::chrono::steady_clock::time_point maps_read{};
    uint64_t stream_map = 0;  // the InstructionStream map, once one was checked
    std::map<uint64_t, CodeInfo> codes;
    size_t code_bytes = 0;
    std::unordered_set<uint64_t> no_code;  // pcs in no code found (bounded)
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
  static constexpr size_t kMaxCachedBytes = 64u << 20;
  static constexpr size_t kMaxFiles = 64;
  static constexpr size_t kMaxScripts = 4096;
  static constexpr size_t kMaxNameBytes = 16u << 20;
  static constexpr size_t kMaxChars = 1024;           // a longer name or path is cut
  static constexpr size_t kMaxSourceChars = 8u << 20;  // a longer script gives no lines
  static constexpr int kMaxStringHops = 8;             // thin/sliced/cons indirections
  static constexpr size_t kMaxTableBytes = 1u << 20;   // a longer position table or bytecode gives no lines
  static constexpr size_t kMaxTableEntries = 1u << 18;
  static constexpr size_t kMaxInlined = 4096;          // inlined functions of one code
  static constexpr size_t kMaxInlineDepth = 64;
  static constexpr uint64_t kMaxCodeScan = 256u << 10;  // how far before a pc its code's start is looked for
  static constexpr uint64_t kMaxCodeSize = 16u << 20;
  static constexpr size_t kMaxCodesPerProc = 4096;
  static constexpr size_t kMaxCodeBytesPerProc = 32u << 20;
  static constexpr size_t kMaxNoCode = 1 << 14;
  static constexpr uint64_t kCodeAlignment = 64;
  static constexpr int32_t kNoBytecode = INT32_MIN;
  static constexpr size_t kMaxMapsBytes = 4u << 20;  // a longer maps file is read that far
  static constexpr size_t kMaxBuiltinRanges = 64;
  static constexpr int kMaxMapChecks = 16;          // per code looked for, until the map is known
  static constexpr size_t kMaxBaselinePcs = 1024;   // remembered bytecodes of one baseline code's pcs  // x64's kCodeAlignment: where instructions start

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

  // The bytes of a ByteArray (source positions, offset tables) or of a
  // BytecodeArray's bytecode: checked type, a Smi length within bounds.
  bool ReadBytes(Proc& p, uint32_t pid, uint64_t obj, int32_t type, uint16_t data, std::vector<uint8_t>& out) {
    uint64_t len_word = 0;
    if (TypeOf(p, pid, obj) != type || !ReadWord(p, pid, obj - 1 + p.layout.array_length, len_word) ||
        !IsSmi(len_word)) {
      return false;
    }
    const int64_t len = SmiValue(p, len_word);
    if (len < 0 || static_cast<uint64_t>(len) > kMaxTableBytes) return false;
    out.resize(static_cast<size_t>(len));
    return len == 0 || ReadMem(p, pid, obj - 1 + data, out.data(), out.size());
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

  // The 1-based line and column of a source position in a script; nullopt
  // when unknown.
  std::optional<std::pair<uint32_t, uint32_t>> LineOf(Proc& p, uint32_t pid, uint64_t script, uint64_t source,
                                                      int64_t position) {
    if (position < 0 || !IsHeapObject(source)) return std::nullopt;
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
        starts.push_back(unit + 1);  // the end: a position past it is not in this script
      }
      if (lines_.size() >= kMaxScripts) lines_.clear();
      it = lines_.emplace(key, std::move(starts)).first;
    }
    const auto& starts = it->second;
    if (starts.size() < 2 || static_cast<uint64_t>(position) >= starts.back()) return std::nullopt;
    const auto at = std::upper_bound(starts.begin(), starts.end() - 1, static_cast<uint64_t>(position));
    const uint32_t line = static_cast<uint32_t>(at - starts.begin());
    return std::make_pair(line, static_cast<uint32_t>(position - starts[line - 1] + 1));
  }

  // The SharedFunctionInfo as it is now, named only when it is still the
  // object the sampler saw: a SharedFunctionInfo (its map's type) holding the
  // same name-or-scope-info and script words (the stamp). A freed object, or
  // another one at the same address since, is not misnamed.
  bool ReadFunction(uint32_t pid, Proc& p, uint64_t sfi, uint64_t stamp, JsFunction& out) {
    const V8Layout& l = p.layout;
    uint64_t name_word = 0, script = 0;
    if (!IsHeapObject(sfi) || !ReadWord(p, pid, sfi - 1 + l.sfi_name, name_word) ||
        !ReadWord(p, pid, sfi - 1 + l.sfi_script, script)) {
      ++unreadable_;
      return false;
    }
    if (TypeOf(p, pid, sfi) != l.type_sfi || Stamp(name_word, script) != stamp) {
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
      if (ReadWord(p, pid, script - 1 + l.script_source, source)) {
        if (auto at = LineOf(p, pid, script, source, start)) line = at->first;
        out.script = script;
        out.source = source;
      }
    }
    if (l.lines) ReadBytecodePositions(p, pid, sfi, out.bytecode_positions);
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

  static uint64_t Stamp(uint64_t name_word, uint64_t script) { return name_word ^ (script << 1 | script >> 63); }

  // The function's BytecodeArray: its function data, or the baseline code's
  // (a Code in the function data holds the bytecode it was compiled from).
  uint64_t BytecodeOf(Proc& p, uint32_t pid, uint64_t sfi) {
    const V8Layout& l = p.layout;
    uint64_t data = 0;
    if (!ReadWord(p, pid, sfi - 1 + l.sfi_function_data, data)) return 0;
    const int32_t type = TypeOf(p, pid, data);
    if (type == l.type_code && !ReadWord(p, pid, data - 1 + l.code_deopt, data)) return 0;
    return TypeOf(p, pid, data) == l.type_bytecode ? data : 0;
  }

  void ReadBytecodePositions(Proc& p, uint32_t pid, uint64_t sfi, std::vector<V8Position>& out) {
    const uint64_t bytecode = BytecodeOf(p, pid, sfi);
    uint64_t table = 0;
    std::vector<uint8_t> bytes;
    // Undefined until V8 collects the positions (lazily, for a stack trace
    // or a profiler): then the function's first line.
    if (bytecode == 0 || !ReadWord(p, pid, bytecode - 1 + p.layout.bytecode_positions, table) ||
        !ReadBytes(p, pid, table, p.layout.type_byte_array, p.layout.array_data, bytes)) {
      return;
    }
    if (!DecodeSourcePositions(bytes, kMaxTableEntries, out)) {
      ++tables_bad_;
      out.clear();
    }
  }

  // A function met as inlined into optimized code: named and cached like a
  // sampled one, its stamp read now.
  const JsFunction* FunctionAt(uint32_t pid, Proc& p, uint64_t sfi) {
    uint64_t name_word = 0, script = 0;
    if (!IsHeapObject(sfi) || !ReadWord(p, pid, sfi - 1 + p.layout.sfi_name, name_word) ||
        !ReadWord(p, pid, sfi - 1 + p.layout.sfi_script, script)) {
      return nullptr;
    }
    runtime_frame rf{};
    rf.code = sfi;
    rf.stamp = Stamp(name_word, script);
    UnknownReason reason = UnknownReason::kNone;
    return cache_.Find(
        pid, rf, procs_, [&](Proc& q, JsFunction& v) { return ReadFunction(pid, q, sfi, rf.stamp, v); }, &reason);
  }

  // Where the frame's code is (the chain of functions optimized code inlined
  // at its pc, innermost first, with their script offsets) from its pc: an
  // interpreted frame (pc in V8's embedded builtins) by its bytecode offset,
  // baseline code by its pc's bytecode, optimized code by its pc's source
  // position. The code, for the inlined functions; nullptr for none.
  const CodeInfo* Locate(uint32_t pid, Proc& p, const runtime_frame& frame, const JsFunction& fn,
                         std::vector<V8InlinedFrame>& chain) {
    const V8Layout& l = p.layout;
    const uint64_t pc = frame.instr & ARCPROF_V8_PC_MASK;
    const bool returned = frame.instr & ARCPROF_V8_RETURN_BIT;
    auto from_bytecode = [&](int64_t bytecode_offset, uint64_t& counter) {
      if (auto pos = PositionAt(fn.bytecode_positions, bytecode_offset)) {
        chain.assign(1, V8InlinedFrame{-1, ScriptOffsetOf(*pos)});
        if (chain[0].script_offset >= 0) {
          ++counter;
          return;
        }
      }
      ++line_unknown_;
    };
    bool builtin = InBuiltins(pid, p, pc, false);
    CodeInfo* code = builtin ? nullptr : FindCode(pid, p, pc, frame.code);
    if (!builtin && code == nullptr) builtin = InBuiltins(pid, p, pc, true);
    if (builtin) {
      // The frame's bytecode-offset slot: a Smi, the offset from the
      // BytecodeArray's tagged address (the walk stored it + 1).
      const uint64_t slot = frame.instr >> 48;
      if (slot == 0) {
        ++line_unknown_;
        return nullptr;
      }
      from_bytecode(static_cast<int64_t>(slot) - 1 - (l.bytecode_data - 1), line_bytecode_);
      return nullptr;
    }
    if (code == nullptr) {
      ++line_unknown_;
      return nullptr;
    }
    const uint64_t start = code->start;
    if (code->baseline) {
      // Each step of the mapping is a bytecode: remembered per pc.
      CodeInfo& c = *code;
      const uint32_t offset = static_cast<uint32_t>(pc - start);
      std::optional<int32_t> bc;
      if (auto seen = c.baseline_pcs.find(offset); seen != c.baseline_pcs.end()) {
        if (seen->second != kNoBytecode) bc = seen->second;
      } else {
        bc = BaselineBytecodeOffset(code->offsets, code->bytecodes, l.bytecode_sizes, offset, kMaxTableBytes);
        if (c.baseline_pcs.size() >= kMaxBaselinePcs) c.baseline_pcs.clear();
        c.baseline_pcs.emplace(offset, bc.value_or(kNoBytecode));
      }
      if (!bc) {
        ++tables_bad_;
        ++line_unknown_;
        return nullptr;
      }
      from_bytecode(*bc, line_baseline_);
      return nullptr;
    }
    // A return address is one past its call.
    auto pos = PositionAt(code->positions, static_cast<int64_t>(pc - start) - (returned ? 1 : 0));
    if (!pos) {
      ++line_unknown_;
      return nullptr;
    }
    if (!InliningChain(*pos, code->inlinings, kMaxInlineDepth, chain)) {
      ++tables_bad_;
      chain.assign(1, V8InlinedFrame{-1, -1});
      ++line_unknown_;
      return nullptr;
    }
    ++line_optimized_;
    return code;
  }

  // Whether pc is in the recognized binary's executable mappings (its
  // builtins), from /proc/PID/maps read once, and again (at most every
  // 200 ms) when `refresh` asks for it: a pc in no code found.
  bool InBuiltins(uint32_t pid, Proc& p, uint64_t pc, bool refresh) {
    const auto now = std::chrono::steady_clock::now();
    if (p.maps_read == std::chrono::steady_clock::time_point{} ||
        (refresh && now - p.maps_read > std::chrono::milliseconds(200))) {
      p.maps_read = now;
      ReadBuiltins(pid, p);
    }
    for (const auto& [start, end] : p.builtins) {
      if (pc >= start && pc < end) return true;
    }
    return false;
  }

  void ReadBuiltins(uint32_t pid, Proc& p) {
    p.builtins.clear();
    ScopedFd fd(open(fmt::format("/proc/{}/maps", pid).c_str(), O_RDONLY | O_CLOEXEC));
    if (!fd.valid()) return;
    std::string text;
    char chunk[16384];
    while (text.size() < kMaxMapsBytes) {
      const ssize_t n = read(fd.get(), chunk, sizeof(chunk));
      if (n <= 0) break;
      text.append(chunk, static_cast<size_t>(n));
    }
    for (const procfs::MapsEntry& m : procfs::ParseMaps(text)) {
      if ((m.prot & procfs::kProtExec) && m.path == p.file && p.builtins.size() < kMaxBuiltinRanges) {
        p.builtins.emplace_back(m.start, m.end);
      }
    }
  }

  // The baseline or optimized code holding pc, for function sfi: known, or
  // found before pc. V8 starts instructions 64-byte aligned, right after
  // their InstructionStream's header (its map, then its Code); the nearest
  // such header before pc is the code's, which must point back at it (the
  // Code's InstructionStream and instruction start) and cover pc.
  CodeInfo* FindCode(uint32_t pid, Proc& p, uint64_t pc, uint64_t sfi) {
    auto known = p.codes.upper_bound(pc);
    if (known != p.codes.begin()) {
      --known;
      if (pc < known->second.end && known->second.sfi == sfi) return &known->second;
    }
    if (p.no_code.count(pc)) return nullptr;
    constexpr uint64_t kLines = 63;  // candidates per read
    uint8_t buf[kLines * kCodeAlignment + 16];
    uint64_t top = pc & ~(kCodeAlignment - 1);
    int map_checks = 0;  // maps looked at before one is known (each a read)
    for (uint64_t scanned = 0; scanned < kMaxCodeScan && top > kLines * kCodeAlignment; scanned += kLines * kCodeAlignment) {
      // Headers of candidates top, top - 64, ..., top - 62 * 64.
      const uint64_t lo = top - (kLines - 1) * kCodeAlignment - 16;
      // A block that starts below its mapping (code near the start of a
      // code space) is read header by header, down to where memory ends.
      const bool whole = ReadMem(p, pid, lo, buf, top - lo);
      for (uint64_t k = 0; k < kLines; ++k) {
        const uint64_t start = top - k * kCodeAlignment;
        if (!whole && !ReadMem(p, pid, start - 16, buf + (start - 16 - lo), 16)) return NoCode(p, pc);
        uint64_t map = 0, code = 0;
        std::memcpy(&map, buf + (start - 16 - lo), 8);
        std::memcpy(&code, buf + (start - 8 - lo), 8);
        if (!IsHeapObject(map) || !IsHeapObject(code)) continue;
        if (p.stream_map != 0 ? map != p.stream_map
                              : (++map_checks > kMaxMapChecks || !IsStreamMap(p, pid, map))) {
          continue;
        }
        // The nearest InstructionStream: pc is in its code, or in none.
        CodeInfo info;
        if (!ReadCode(pid, p, start, code, sfi, pc, info)) return NoCode(p, pc);
        p.stream_map = map;
        if (p.codes.size() >= kMaxCodesPerProc || p.code_bytes >= kMaxCodeBytesPerProc) {
          p.codes.clear();
          p.code_bytes = 0;
        }
        if (auto old = p.codes.find(start); old != p.codes.end()) {
          p.code_bytes -= old->second.Bytes();
          p.codes.erase(old);
        }
        p.code_bytes += info.Bytes();
        CodeInfo& at = p.codes.emplace(start, std::move(info)).first->second;
        if (at.sfi != sfi) return nullptr;
        return &at;
      }
      top -= kLines * kCodeAlignment;
    }
    return NoCode(p, pc);
  }

  CodeInfo* NoCode(Proc& p, uint64_t pc) {
    ++code_unknown_;
    if (p.no_code.size() >= kMaxNoCode) p.no_code.clear();
    p.no_code.insert(pc);
    return nullptr;
  }

  bool IsStreamMap(Proc& p, uint32_t pid, uint64_t map) {
    uint16_t type = 0;
    return ReadMem(p, pid, map - 1 + p.layout.map_instance_type, &type, 2) && type == p.layout.type_stream;
  }

  // The Code `code` whose instructions start at `start` (checked both ways)
  // and cover pc: its kind, and what gives its pcs their positions.
  bool ReadCode(uint32_t pid, Proc& p, uint64_t start, uint64_t code, uint64_t sfi, uint64_t pc, CodeInfo& out) {
    const V8Layout& l = p.layout;
    uint8_t h[kV8CodeHeaderRead];
    if (TypeOf(p, pid, code) != l.type_code || !ReadMem(p, pid, code - 1, h, sizeof(h))) return false;
    auto word = [&](uint16_t off) {
      uint64_t v = 0;
      std::memcpy(&v, h + off, 8);
      return v;
    };
    uint32_t flags = 0, size = 0;
    std::memcpy(&flags, h + l.code_flags, 4);
    std::memcpy(&size, h + l.code_size, 4);
    if (word(l.code_stream) != start - l.stream_start + 1 || word(l.code_start) != start || size > kMaxCodeSize ||
        pc >= start + size) {
      return false;
    }
    out.start = start;
    out.end = start + size;
    const uint32_t kind = (flags & l.kind_mask) >> l.kind_shift;
    if (kind == l.kind_baseline) {
      // Baseline code: its bytecode (checked against the function's) and
      // the machine code size of each bytecode.
      const uint64_t bytecode = word(l.code_deopt);
      out.baseline = true;
      if (bytecode != BytecodeOf(p, pid, sfi)) return true;  // code of no function known (sfi 0)
      // The function's code from here on, lines or not (kept: not read again).
      out.sfi = sfi;
      if (!ReadBytes(p, pid, word(l.code_positions), l.type_byte_array, l.array_data, out.offsets) ||
          !ReadBytes(p, pid, bytecode, l.type_bytecode, l.bytecode_data, out.bytecodes)) {
        ++tables_bad_;
        out.offsets.clear();
        out.bytecodes.clear();
      }
      return true;
    }
    if (kind == l.kind_interpreted) return true;
    // Optimized code: its deoptimization data names its function and the
    // functions inlined into it.
    const uint64_t deopt = word(l.code_deopt);
    uint64_t len_word = 0;
    if (TypeOf(p, pid, deopt) != l.type_fixed_array || !ReadWord(p, pid, deopt - 1 + l.array_length, len_word) ||
        !IsSmi(len_word)) {
      return true;
    }
    const uint16_t last = std::max({l.deopt_inlined_count, l.deopt_literals, l.deopt_sfi, l.deopt_inlining});
    if (SmiValue(p, len_word) <= last) return true;
    std::vector<uint64_t> slots(last + 1u);
    if (!ReadMem(p, pid, deopt - 1 + l.array_data, slots.data(), slots.size() * 8)) return true;
    out.sfi = slots[l.deopt_sfi];  // another function's code: never used for sfi
    if (out.sfi != sfi) return true;
    // The function's code from here on, lines or not (kept: not read again).
    std::vector<uint8_t> bytes;
    if (!ReadBytes(p, pid, word(l.code_positions), l.type_byte_array, l.array_data, bytes) ||
        !DecodeSourcePositions(bytes, kMaxTableEntries, out.positions)) {
      ++tables_bad_;
      out.positions.clear();
      return true;
    }
    const uint64_t count_word = slots[l.deopt_inlined_count];
    const int64_t count = IsSmi(count_word) ? SmiValue(p, count_word) : -1;
    if (count > 0 && static_cast<uint64_t>(count) <= kMaxInlined) {
      // The first `count` literals are the inlined functions (weak
      // references in a WeakFixedArray: bit 1 set; a cleared one is none).
      const uint64_t literals = slots[l.deopt_literals];
      const int32_t type = TypeOf(p, pid, literals);
      uint64_t lit_len = 0;
      out.inlined.resize(static_cast<size_t>(count));
      if ((type != l.type_weak_fixed_array && type != l.type_fixed_array) ||
          !ReadWord(p, pid, literals - 1 + l.array_length, lit_len) || !IsSmi(lit_len) ||
          SmiValue(p, lit_len) < count ||
          !ReadMem(p, pid, literals - 1 + l.array_data, out.inlined.data(), out.inlined.size() * 8) ||
          !ReadBytes(p, pid, slots[l.deopt_inlining], l.type_byte_array, l.array_data, bytes) ||
          !DecodeInliningPositions(bytes, kMaxInlined * 16, out.inlinings)) {
        ++tables_bad_;
        out.inlined.clear();
        out.inlinings.clear();
      }
      for (uint64_t& f : out.inlined) f = (f & 3) == 3 ? f & ~2ull : f;
    }
    return true;
  }

  std::unordered_map<uint32_t, Proc> procs_;
  std::unordered_map<uint32_t, std::optional<V8Layout>> layouts_;  // by MappedFile::file_id
  FrameNameCache<JsFunction> cache_{kMaxCached, kMaxCachedBytes};
  std::unordered_map<ScriptKey, std::vector<uint32_t>, ScriptKeyHash> lines_;
  NameStore names_{kMaxNameBytes};
  std::vector<V8InlinedFrame> chain_;
  uint64_t recognized_ = 0, not_v8_ = 0, named_ = 0, stale_ = 0, unreadable_ = 0, truncated_ = 0;
  uint64_t line_bytecode_ = 0, line_baseline_ = 0, line_optimized_ = 0, line_unknown_ = 0, code_unknown_ = 0,
           tables_bad_ = 0, inlined_ = 0, inlined_unnamed_ = 0;
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
  bool ok = true, lines = true;
  // Each constant must be there and fit a small field, or `flag` is false.
  auto get_into = [&](bool& flag, std::string_view name, int64_t lo, int64_t hi) -> int64_t {
    auto v = lookup(name);
    if (!v || *v < lo || *v > hi) {
      flag = false;
      return 0;
    }
    return *v;
  };
  auto get = [&](std::string_view name, int64_t lo, int64_t hi) { return get_into(ok, name, lo, hi); };
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

  // Lines: optional, each constant where the walk and naming expect it.
  auto opt = [&](std::string_view name, int64_t lo, int64_t hi) {
    return static_cast<uint16_t>(get_into(lines, name, lo, hi));
  };
  l.sfi_function_data = opt("class_SharedFunctionInfo__function_data__Object", 8, 512);
  l.array_length = opt("class_FixedArrayBase__length__SMI", 8, 64);
  l.array_data = opt("class_FixedArray__data__uintptr_t", 16, 64);
  l.bytecode_data = opt("class_BytecodeArray__data__uintptr_t", 16, 512);
  l.code_deopt = opt("class_Code__deoptimization_data__FixedArray", 8, 512);
  l.code_positions = opt("class_Code__source_position_table__ByteArray", 8, 512);
  l.stream_start = opt("class_InstructionStream__instruction_start__uintptr_t", 8, 256);
  l.type_code = opt("type_Code__CODE_TYPE", 1, 0xffff);
  l.type_stream = opt("type_InstructionStream__INSTRUCTION_STREAM_TYPE", 1, 0xffff);
  l.type_bytecode = opt("type_BytecodeArray__BYTECODE_ARRAY_TYPE", 1, 0xffff);
  l.type_byte_array = opt("type_ByteArray__BYTE_ARRAY_TYPE", 1, 0xffff);
  l.type_fixed_array = opt("type_FixedArray__FIXED_ARRAY_TYPE", 1, 0xffff);
  l.type_weak_fixed_array = opt("type_WeakFixedArray__WEAK_FIXED_ARRAY_TYPE", 1, 0xffff);
  l.kind_mask = opt("CodeKindFieldMask", 1, 0xff);
  l.kind_shift = opt("CodeKindFieldShift", 0, 31);
  l.kind_baseline = opt("CodeKindBaseline", 1, 0xff);
  l.kind_interpreted = opt("CodeKindInterpretedFunction", 1, 0xff);
  l.deopt_inlined_count = opt("DeoptimizationDataInlinedFunctionCountIndex", 0, 32);
  l.deopt_literals = opt("DeoptimizationDataLiteralArrayIndex", 0, 32);
  l.deopt_sfi = opt("DeoptimizationDataSharedFunctionInfoIndex", 0, 32);
  l.deopt_inlining = opt("DeoptimizationDataInliningPositionsIndex", 0, 32);
  // V8 11.x (bytecode-array.tq, code.h): not exported.
  l.bytecode_positions = static_cast<uint16_t>(l.array_length + 3 * 8);
  l.code_stream = static_cast<uint16_t>(l.code_positions + 8);
  l.code_start = static_cast<uint16_t>(l.code_positions + 16);
  l.code_flags = static_cast<uint16_t>(l.code_positions + 24);
  l.code_size = static_cast<uint16_t>(l.code_positions + 32);
  // Everything read of a Code object lies within the bytes read of it.
  if (l.code_size + 4 > kV8CodeHeaderRead || l.code_deopt + 8 > kV8CodeHeaderRead) lines = false;
  l.lines = lines;
  return l;
}

std::unique_ptr<Runtime> MakeNodeRuntime() { return std::make_unique<NodeRuntime>(); }

}  // namespace arcprof::runtimes
