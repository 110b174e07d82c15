#include "class_probes.h"

#include <algorithm>
#include <cstring>

namespace arcprof::classfile {
namespace {

// ---- reading ----

// A bounded cursor over bytes; any read past the end clears ok and returns 0.
struct Reader {
  const uint8_t* data = nullptr;
  size_t size = 0;
  size_t pos = 0;
  bool ok = true;

  bool Has(size_t n) const { return ok && n <= size && pos <= size - n; }
  uint8_t U1() {
    if (!Has(1)) return Fail();
    return data[pos++];
  }
  uint16_t U2() {
    if (!Has(2)) return Fail();
    const uint16_t v = static_cast<uint16_t>(data[pos] << 8 | data[pos + 1]);
    pos += 2;
    return v;
  }
  uint32_t U4() {
    if (!Has(4)) return Fail();
    const uint32_t v = static_cast<uint32_t>(data[pos]) << 24 | static_cast<uint32_t>(data[pos + 1]) << 16 |
                       static_cast<uint32_t>(data[pos + 2]) << 8 | data[pos + 3];
    pos += 4;
    return v;
  }
  bool Skip(size_t n) {
    if (!Has(n)) return Fail();
    pos += n;
    return true;
  }
  uint8_t Fail() {
    ok = false;
    return 0;
  }
};

uint16_t Get2(const uint8_t* p) { return static_cast<uint16_t>(p[0] << 8 | p[1]); }
int32_t Get4(const uint8_t* p) {
  return static_cast<int32_t>(static_cast<uint32_t>(p[0]) << 24 | static_cast<uint32_t>(p[1]) << 16 |
                              static_cast<uint32_t>(p[2]) << 8 | p[3]);
}
void Put1(std::vector<uint8_t>& out, uint32_t v) { out.push_back(static_cast<uint8_t>(v)); }
void Put2(std::vector<uint8_t>& out, uint32_t v) {
  out.push_back(static_cast<uint8_t>(v >> 8));
  out.push_back(static_cast<uint8_t>(v));
}
void Put4(std::vector<uint8_t>& out, uint32_t v) {
  Put2(out, v >> 16);
  Put2(out, v & 0xffff);
}
void Set2(std::vector<uint8_t>& out, size_t at, uint32_t v) {
  out[at] = static_cast<uint8_t>(v >> 8);
  out[at + 1] = static_cast<uint8_t>(v);
}
void Set4(std::vector<uint8_t>& out, size_t at, uint32_t v) {
  Set2(out, at, v >> 16);
  Set2(out, at + 2, v & 0xffff);
}

enum : uint8_t {
  kUtf8 = 1, kInteger = 3, kFloat = 4, kLong = 5, kDouble = 6, kClass = 7, kString = 8, kFieldref = 9,
  kMethodref = 10, kInterfaceMethodref = 11, kNameAndType = 12, kMethodHandle = 15, kMethodType = 16,
  kDynamic = 17, kInvokeDynamic = 18, kModule = 19, kPackage = 20,
};

constexpr uint16_t kAccNative = 0x0100;
constexpr uint16_t kAccAbstract = 0x0400;

struct Attribute {
  uint16_t name = 0;
  size_t start = 0;  // of the attribute (its name index)
  size_t data = 0;   // of its contents
  uint32_t length = 0;
};

struct Method {
  size_t start = 0, end = 0;
  uint16_t access = 0, name = 0, descriptor = 0;
  std::vector<Attribute> attributes;
  int code = -1;  // index of the Code attribute
};

struct ClassFile {
  std::span<const uint8_t> bytes;
  uint16_t major = 0;
  uint16_t cp_count = 0;
  size_t cp_end = 0;
  std::vector<uint32_t> cp;  // offset of each entry's tag, 0 for the unused slots
  size_t methods_start = 0, methods_end = 0;
  std::vector<Method> methods;
  std::vector<Attribute> attributes;  // the class's own

  uint8_t Tag(uint16_t i) const { return i > 0 && i < cp.size() && cp[i] ? bytes[cp[i]] : 0; }
  // The Utf8 entry i, or an empty view with *ok cleared.
  std::string_view Utf8(uint16_t i, bool* ok = nullptr) const {
    if (Tag(i) != kUtf8) {
      if (ok) *ok = false;
      return {};
    }
    const uint8_t* p = bytes.data() + cp[i];
    return {reinterpret_cast<const char*>(p + 3), Get2(p + 1)};
  }
  // Field i of a constant pool entry (u2 operands after the tag).
  uint16_t Ref(uint16_t i, int field) const { return Get2(bytes.data() + cp[i] + 1 + 2 * field); }
};

bool ReadAttributes(Reader& r, size_t limit, std::vector<Attribute>* out) {
  const uint16_t count = r.U2();
  for (uint32_t i = 0; i < count && r.ok; ++i) {
    Attribute a;
    a.start = r.pos;
    a.name = r.U2();
    a.length = r.U4();
    a.data = r.pos;
    if (!r.Skip(a.length) || r.pos > limit) return false;
    out->push_back(a);
  }
  return r.ok;
}

bool Parse(std::span<const uint8_t> bytes, ClassFile* cf) {
  cf->bytes = bytes;
  Reader r{bytes.data(), bytes.size()};
  if (r.U4() != 0xCAFEBABEu) return false;
  r.U2();  // minor
  cf->major = r.U2();
  if (!r.ok || cf->major < 45 || cf->major > kMaxMajorVersion) return false;
  cf->cp_count = r.U2();
  if (cf->cp_count == 0) return false;
  cf->cp.assign(cf->cp_count, 0);
  for (uint32_t i = 1; i < cf->cp_count && r.ok; ++i) {
    cf->cp[i] = static_cast<uint32_t>(r.pos);
    switch (r.U1()) {
      case kUtf8: r.Skip(r.U2()); break;
      case kInteger: case kFloat: r.Skip(4); break;
      case kLong: case kDouble:
        r.Skip(8);
        if (++i >= cf->cp_count) return false;  // takes two slots, both in the pool
        break;
      case kClass: case kString: case kMethodType: case kModule: case kPackage: r.Skip(2); break;
      case kFieldref: case kMethodref: case kInterfaceMethodref: case kNameAndType: case kDynamic:
      case kInvokeDynamic:
        r.Skip(4);
        break;
      case kMethodHandle: r.Skip(3); break;
      default: return false;
    }
  }
  if (!r.ok) return false;
  cf->cp_end = r.pos;
  r.Skip(6);  // access, this, super
  r.Skip(2 * static_cast<size_t>(r.U2()));  // interfaces
  const uint16_t fields = r.U2();
  for (uint32_t i = 0; i < fields && r.ok; ++i) {
    r.Skip(6);
    std::vector<Attribute> ignored;
    if (!ReadAttributes(r, bytes.size(), &ignored)) return false;
  }
  const uint16_t methods = r.U2();
  cf->methods_start = r.pos;
  for (uint32_t i = 0; i < methods && r.ok; ++i) {
    Method m;
    m.start = r.pos;
    m.access = r.U2();
    m.name = r.U2();
    m.descriptor = r.U2();
    if (!ReadAttributes(r, bytes.size(), &m.attributes)) return false;
    m.end = r.pos;
    bool ok = true;
    if (cf->Utf8(m.name, &ok).empty() || cf->Utf8(m.descriptor, &ok).empty() || !ok) return false;
    for (size_t a = 0; a < m.attributes.size(); ++a) {
      if (cf->Utf8(m.attributes[a].name) == "Code") {
        if (m.code >= 0) return false;  // two Code attributes: not a valid class
        m.code = static_cast<int>(a);
      }
    }
    cf->methods.push_back(std::move(m));
  }
  cf->methods_end = r.pos;
  if (!ReadAttributes(r, bytes.size(), &cf->attributes)) return false;
  return r.ok && r.pos == bytes.size();
}

// ---- instructions ----

enum : uint8_t {
  kLdcW = 0x13, kIfeq = 0x99, kIfAcmpne = 0xa6, kGoto = 0xa7, kJsr = 0xa8, kTableswitch = 0xaa,
  kLookupswitch = 0xab, kIreturn = 0xac, kReturn = 0xb1, kInvokevirtual = 0xb6, kInvokespecial = 0xb7,
  kInvokestatic = 0xb8, kInvokeinterface = 0xb9, kInvokedynamic = 0xba, kAthrow = 0xbf, kWide = 0xc4,
  kIfnull = 0xc6, kIfnonnull = 0xc7, kGotoW = 0xc8, kJsrW = 0xc9,
};

// The length of the instruction at pc of fixed size, 0 for variable or
// invalid ones.
uint32_t FixedLength(uint8_t op) {
  if (op <= 0x0f) return 1;
  if (op == 0x10) return 2;
  if (op == 0x11) return 3;
  if (op == 0x12) return 2;
  if (op == 0x13 || op == 0x14) return 3;
  if (op <= 0x19) return 2;
  if (op <= 0x35) return 1;
  if (op <= 0x3a) return 2;
  if (op <= 0x83) return 1;
  if (op == 0x84) return 3;
  if (op <= 0x98) return 1;
  if (op <= 0xa8) return 3;
  if (op == 0xa9) return 2;
  if (op <= 0xab) return 0;  // switches
  if (op <= 0xb1) return 1;
  if (op <= 0xb8) return 3;
  if (op <= 0xba) return 5;
  if (op == 0xbb) return 3;
  if (op == 0xbc) return 2;
  if (op == 0xbd) return 3;
  if (op <= 0xbf) return 1;
  if (op <= 0xc1) return 3;
  if (op <= 0xc3) return 1;
  if (op == 0xc4) return 0;  // wide
  if (op == 0xc5) return 4;
  if (op <= 0xc7) return 3;
  if (op <= 0xc9) return 5;
  return 0;  // breakpoint, reserved: not in a class file
}

bool IsBranch16(uint8_t op) { return (op >= kIfeq && op <= kJsr) || op == kIfnull || op == kIfnonnull; }
bool IsReturn(uint8_t op) { return op >= kIreturn && op <= kReturn; }

struct Insn {
  uint32_t pc = 0, length = 0;
  uint8_t op = 0;
  uint32_t first_target = 0, targets = 0;  // into Code::targets (old pcs)
  uint32_t size = 0;                        // its size in the new code
  bool wide_branch = false;                 // goto/jsr that became goto_w/jsr_w
};

struct Code {
  const uint8_t* code = nullptr;
  uint32_t length = 0;
  std::vector<Insn> insns;
  std::vector<uint32_t> targets;
  std::vector<int32_t> index_of;  // old pc -> instruction index, -1 inside one
};

uint32_t SwitchOperands(uint32_t pc) { return (pc + 4) & ~3u; }  // first byte after the padding

// Decodes every instruction; false on anything malformed (a branch into the
// middle of an instruction, off the code, a truncated switch).
bool Decode(const uint8_t* code, uint32_t length, Code* out) {
  out->code = code;
  out->length = length;
  out->index_of.assign(length + 1, -1);
  uint32_t pc = 0;
  std::vector<std::pair<uint32_t, int64_t>> raw_targets;  // (insn, target)
  while (pc < length) {
    Insn in;
    in.pc = pc;
    in.op = code[pc];
    uint32_t len = FixedLength(in.op);
    in.first_target = static_cast<uint32_t>(out->targets.size());
    auto target = [&](int64_t delta) { raw_targets.push_back({static_cast<uint32_t>(out->insns.size()), pc + delta}); };
    if (in.op == kWide) {
      if (pc + 1 >= length) return false;
      const uint8_t op = code[pc + 1];
      if (op == 0x84) len = 6;
      else if ((op >= 0x15 && op <= 0x19) || (op >= 0x36 && op <= 0x3a) || op == 0xa9) len = 4;
      else return false;
    } else if (in.op == kTableswitch || in.op == kLookupswitch) {
      const uint32_t ops = SwitchOperands(pc);
      if (ops > length || length - ops < 12) return false;
      const uint8_t* p = code + ops;
      target(Get4(p));
      if (in.op == kTableswitch) {
        const int64_t low = Get4(p + 4), high = Get4(p + 8);
        if (high < low || high - low + 1 > (length - ops - 12) / 4) return false;
        const int64_t n = high - low + 1;
        for (int64_t i = 0; i < n; ++i) target(Get4(p + 12 + 4 * i));
        len = static_cast<uint32_t>(ops - pc + 12 + 4 * n);
      } else {
        const int64_t n = Get4(p + 4);
        if (n < 0 || n > (length - ops - 8) / 8) return false;
        for (int64_t i = 0; i < n; ++i) target(Get4(p + 8 + 8 * i + 4));
        len = static_cast<uint32_t>(ops - pc + 8 + 8 * n);
      }
    } else if (len == 0) {
      return false;
    }
    if (len > length - pc) return false;
    if (IsBranch16(in.op)) target(static_cast<int16_t>(Get2(code + pc + 1)));
    if (in.op == kGotoW || in.op == kJsrW) target(Get4(code + pc + 1));
    in.length = len;
    in.size = len;
    out->index_of[pc] = static_cast<int32_t>(out->insns.size());
    out->insns.push_back(in);
    pc += len;
  }
  out->index_of[length] = static_cast<int32_t>(out->insns.size());
  for (const auto& [insn, t] : raw_targets) {
    if (t < 0 || t >= length || out->index_of[t] < 0) return false;
    out->targets.push_back(static_cast<uint32_t>(t));
  }
  // Targets were appended in instruction order: give each its range.
  size_t next = 0;
  for (uint32_t i = 0; i < out->insns.size(); ++i) {
    out->insns[i].first_target = static_cast<uint32_t>(next);
    while (next < raw_targets.size() && raw_targets[next].first == i) ++next;
    out->insns[i].targets = static_cast<uint32_t>(next - out->insns[i].first_target);
  }
  return true;
}

// ---- the new constant pool entries ----

struct PoolAdditions {
  const ClassFile* cf = nullptr;
  uint32_t next = 0;  // index of the next entry
  std::vector<uint8_t> bytes;
  bool full = false;

  uint16_t Add(std::initializer_list<uint8_t> entry) {
    if (next >= 0xffff) {
      full = true;
      return 0;
    }
    bytes.insert(bytes.end(), entry);
    return static_cast<uint16_t>(next++);
  }
  uint16_t Utf8(std::string_view s) {
    for (uint16_t i = 1; i < cf->cp.size(); ++i) {
      if (cf->Tag(i) == kUtf8 && cf->Utf8(i) == s) return i;
    }
    if (next >= 0xffff || s.size() > 0xffff) {
      full = true;
      return 0;
    }
    bytes.push_back(kUtf8);
    Put2(bytes, static_cast<uint32_t>(s.size()));
    bytes.insert(bytes.end(), s.begin(), s.end());
    return static_cast<uint16_t>(next++);
  }
  uint16_t Pair(uint8_t tag, uint16_t a, uint16_t b) {
    return Add({tag, static_cast<uint8_t>(a >> 8), static_cast<uint8_t>(a), static_cast<uint8_t>(b >> 8),
                static_cast<uint8_t>(b)});
  }
  uint16_t Class(std::string_view name) {
    const uint16_t n = Utf8(name);
    return Add({kClass, static_cast<uint8_t>(n >> 8), static_cast<uint8_t>(n)});
  }
  uint16_t Integer(int32_t v) {
    const uint32_t u = static_cast<uint32_t>(v);
    return Add({kInteger, static_cast<uint8_t>(u >> 24), static_cast<uint8_t>(u >> 16), static_cast<uint8_t>(u >> 8),
                static_cast<uint8_t>(u)});
  }
};

struct ProbeRefs {
  uint16_t enter = 0, exit = 0, thrown = 0;  // Methodrefs
  uint16_t throwable = 0;                    // Class java/lang/Throwable
  uint16_t stack_map_name = 0;               // Utf8 "StackMapTable"
};

// ---- one method's code ----

constexpr uint32_t kProbeLength = 6;  // ldc_w id; invokestatic probe

class CodeRewriter {
 public:
  CodeRewriter(const ClassFile& cf, const Attribute& code_attr, const ProbeRefs& refs, uint16_t id_index)
      : cf_(cf), attr_(code_attr), refs_(refs), id_(id_index) {}

  // The new Code attribute (name index included), or false.
  bool Rewrite(std::vector<uint8_t>* out, std::string* why) {
    Reader r{cf_.bytes.data() + attr_.data, attr_.length};
    max_stack_ = r.U2();
    max_locals_ = r.U2();
    const uint32_t length = r.U4();
    if (!r.ok || length == 0 || length > 65535 || !r.Has(length)) return Fail(why, "bad Code attribute");
    code_at_ = attr_.data + r.pos;
    r.Skip(length);
    if (!Decode(cf_.bytes.data() + code_at_, length, &code_)) return Fail(why, "code does not decode");
    const uint16_t handlers = r.U2();
    handlers_at_ = attr_.data + r.pos;
    if (!r.Skip(8 * static_cast<size_t>(handlers))) return Fail(why, "bad exception table");
    handlers_ = handlers;
    std::vector<Attribute> attributes;
    if (!ReadAttributes(r, attr_.length, &attributes) || r.pos != attr_.length) {
      return Fail(why, "bad Code attributes");
    }
    for (Attribute& a : attributes) a.data += attr_.data, a.start += attr_.data;
    if (!Layout()) return Fail(why, "a conditional branch no longer reaches, or the code grew over 64 KiB");

    std::vector<uint8_t>& o = *out;
    o.clear();
    Put2(o, attr_.name);
    const size_t length_at = o.size();
    Put4(o, 0);
    if (max_stack_ >= 0xffff) return Fail(why, "max_stack full");
    Put2(o, std::max<uint32_t>(max_stack_ + 1u, 2u));
    Put2(o, max_locals_);
    Put4(o, new_length_);
    const size_t code_start = o.size();
    EmitCode(o);
    if (o.size() - code_start != new_length_) return Fail(why, "internal: code length");
    // Exception table: the old entries moved, then the catch-all last (the
    // code's own handlers come first).
    Put2(o, handlers_ + 1u);
    for (uint32_t i = 0; i < handlers_; ++i) {
      const uint8_t* h = cf_.bytes.data() + handlers_at_ + 8 * i;
      const uint32_t start = Get2(h), end = Get2(h + 2), handler = Get2(h + 4);
      if (!IsStart(start) || !IsStart(end) || start >= end || !IsStart(handler) || handler >= code_.length) {
        return Fail(why, "bad exception table entry");
      }
      Put2(o, Map(start));
      Put2(o, Map(end));
      Put2(o, Map(handler));
      Put2(o, Get2(h + 6));
    }
    Put2(o, kProbeLength);
    Put2(o, code_end_);
    Put2(o, code_end_);
    Put2(o, 0);
    // Attributes: the ones with offsets rewritten, a StackMapTable added when
    // the class's version has them, everything else dropped.
    const size_t count_at = o.size();
    Put2(o, 0);
    uint32_t count = 0;
    bool stack_map = false;
    for (const Attribute& a : attributes) {
      const std::string_view name = cf_.Utf8(a.name);
      const uint8_t* p = cf_.bytes.data() + a.data;
      if (name == "LineNumberTable") {
        if (!LineNumbers(p, a, o)) return Fail(why, "bad LineNumberTable");
      } else if (name == "LocalVariableTable" || name == "LocalVariableTypeTable") {
        if (!LocalVariables(p, a, o)) return Fail(why, "bad LocalVariableTable");
      } else if (name == "StackMapTable") {
        if (stack_map || !StackMap(p, a.length, a.name, o)) return Fail(why, "bad StackMapTable");
        stack_map = true;
      } else {
        continue;  // may hold offsets (type annotations, unknown ones): dropped
      }
      ++count;
    }
    if (!stack_map && cf_.major >= 50) {
      if (!StackMap(nullptr, 0, refs_.stack_map_name, o)) return Fail(why, "internal: StackMapTable");
      ++count;
    }
    Set2(o, count_at, count);
    if (o.size() - length_at - 4 > 0xffffffffu) return Fail(why, "too large");
    Set4(o, length_at, static_cast<uint32_t>(o.size() - length_at - 4));
    return true;
  }

  // The methods this code invokes, each once.
  static void Calls(const ClassFile& cf, const Code& code, std::vector<CalledMethod>* out) {
    // Lambdas and method references: the method handles among the bootstrap
    // arguments of an invokedynamic name the code that runs.
    const Attribute* bootstrap = nullptr;
    for (const Attribute& a : cf.attributes) {
      if (cf.Utf8(a.name) == "BootstrapMethods") bootstrap = &a;
    }
    auto add = [&](uint16_t ref, uint8_t opcode) {
      const uint8_t tag = cf.Tag(ref);
      if (tag != kMethodref && tag != kInterfaceMethodref) return;
      const uint16_t klass = cf.Ref(ref, 0), nat = cf.Ref(ref, 1);
      if (cf.Tag(klass) != kClass || cf.Tag(nat) != kNameAndType) return;
      bool ok = true;
      CalledMethod m{std::string(cf.Utf8(cf.Ref(klass, 0), &ok)), std::string(cf.Utf8(cf.Ref(nat, 0), &ok)),
                     std::string(cf.Utf8(cf.Ref(nat, 1), &ok)), opcode};
      if (!ok || m.owner.empty() || m.owner[0] == '[' || m.name.empty() || m.name[0] == '<') return;
      if (out->size() >= 4096 || std::find(out->begin(), out->end(), m) != out->end()) return;
      out->push_back(std::move(m));
    };
    for (const Insn& in : code.insns) {
      if (in.op >= kInvokevirtual && in.op <= kInvokeinterface) {
        add(Get2(code.code + in.pc + 1), in.op);
      } else if (in.op == kInvokedynamic && bootstrap) {
        const uint16_t indy = Get2(code.code + in.pc + 1);
        if (cf.Tag(indy) != kInvokeDynamic) continue;
        const uint16_t which = cf.Ref(indy, 0);
        Reader r{cf.bytes.data() + bootstrap->data, bootstrap->length};
        const uint16_t n = r.U2();
        for (uint32_t i = 0; i < n && r.ok; ++i) {
          r.U2();  // the bootstrap method
          const uint16_t args = r.U2();
          for (uint32_t k = 0; k < args && r.ok; ++k) {
            const uint16_t arg = r.U2();
            if (i != which || cf.Tag(arg) != kMethodHandle) continue;
            const uint8_t kind = cf.bytes[cf.cp[arg] + 1];
            const uint16_t ref = Get2(cf.bytes.data() + cf.cp[arg] + 2);
            // 5 invokeVirtual, 6 invokeStatic, 7 invokeSpecial, 9 invokeInterface
            const uint8_t op = kind == 6 ? kInvokestatic : kind == 7 ? kInvokespecial
                               : kind == 9 ? kInvokeinterface : kind == 5 ? kInvokevirtual : 0;
            if (op) add(ref, op);
          }
          if (i == which) break;
        }
      }
    }
  }

  const Code& code() const { return code_; }

 private:
  static bool Fail(std::string* why, const char* what) {
    if (why) *why = what;
    return false;
  }

  bool IsStart(uint32_t pc) const { return pc <= code_.length && code_.index_of[pc] >= 0; }
  // Where old pc lands: the probe before a return when there is one (a
  // branch to a return goes through its exit probe); the code's end is the
  // start of the handler.
  uint32_t Map(uint32_t pc) const {
    return pc == code_.length ? code_end_ : start_[static_cast<size_t>(code_.index_of[pc])];
  }
  uint32_t InsnAt(uint32_t pc) const { return pos_[static_cast<size_t>(code_.index_of[pc])]; }

  // New positions of every instruction; grows gotos to goto_w and sizes
  // switch padding until nothing changes.
  bool Layout() {
    const size_t n = code_.insns.size();
    start_.assign(n, 0);
    pos_.assign(n, 0);
    for (int round = 0; round < 16; ++round) {
      uint32_t at = kProbeLength;
      for (size_t i = 0; i < n; ++i) {
        start_[i] = at;
        if (IsReturn(code_.insns[i].op)) at += kProbeLength;
        pos_[i] = at;
        at += code_.insns[i].size;
      }
      code_end_ = at;
      new_length_ = at + kProbeLength + 1;  // the handler: probe, athrow
      if (new_length_ > 65535) return false;
      bool changed = false;
      for (size_t i = 0; i < n; ++i) {
        Insn& in = code_.insns[i];
        uint32_t size = in.size;
        if (in.op == kTableswitch || in.op == kLookupswitch) {
          size = in.length - (SwitchOperands(in.pc) - in.pc) + (SwitchOperands(pos_[i]) - pos_[i]);
        } else if (IsBranch16(in.op)) {
          const int64_t delta = static_cast<int64_t>(Map(code_.targets[in.first_target])) - pos_[i];
          if (delta < -32768 || delta > 32767) {
            if (in.op != kGoto && in.op != kJsr) return false;
            in.wide_branch = true;
            size = 5;
          }
        }
        if (size != in.size) {
          in.size = size;
          changed = true;
        }
      }
      if (!changed) return true;
    }
    return false;
  }

  void Probe(std::vector<uint8_t>& o, uint16_t method) const {
    Put1(o, kLdcW);
    Put2(o, id_);
    Put1(o, kInvokestatic);
    Put2(o, method);
  }

  void EmitCode(std::vector<uint8_t>& o) const {
    const size_t code_start = o.size();
    Probe(o, refs_.enter);
    for (size_t i = 0; i < code_.insns.size(); ++i) {
      const Insn& in = code_.insns[i];
      const uint8_t* old = code_.code + in.pc;
      if (IsReturn(in.op)) Probe(o, refs_.exit);
      auto delta = [&](uint32_t k) {
        return static_cast<uint32_t>(static_cast<int64_t>(Map(code_.targets[in.first_target + k])) - pos_[i]);
      };
      if (IsBranch16(in.op)) {
        if (in.wide_branch) {
          Put1(o, in.op == kGoto ? kGotoW : kJsrW);
          Put4(o, delta(0));
        } else {
          Put1(o, in.op);
          Put2(o, delta(0) & 0xffff);
        }
      } else if (in.op == kGotoW || in.op == kJsrW) {
        Put1(o, in.op);
        Put4(o, delta(0));
      } else if (in.op == kTableswitch || in.op == kLookupswitch) {
        Put1(o, in.op);
        while ((o.size() - code_start) % 4 != 0) Put1(o, 0);  // operands at a multiple of 4
        const uint8_t* p = code_.code + SwitchOperands(in.pc);
        Put4(o, delta(0));
        if (in.op == kTableswitch) {
          Put4(o, static_cast<uint32_t>(Get4(p + 4)));
          Put4(o, static_cast<uint32_t>(Get4(p + 8)));
          for (uint32_t k = 1; k < in.targets; ++k) Put4(o, delta(k));
        } else {
          Put4(o, static_cast<uint32_t>(Get4(p + 4)));
          for (uint32_t k = 1; k < in.targets; ++k) {
            Put4(o, static_cast<uint32_t>(Get4(p + 8 + 8 * (k - 1))));
            Put4(o, delta(k));
          }
        }
      } else {
        o.insert(o.end(), old, old + in.length);
      }
    }
    Probe(o, refs_.thrown);
    Put1(o, kAthrow);
  }

  bool LineNumbers(const uint8_t* p, const Attribute& a, std::vector<uint8_t>& o) const {
    Reader r{p, a.length};
    const uint16_t n = r.U2();
    if (!r.ok || a.length != 2 + 4ull * n) return false;
    Put2(o, a.name);
    Put4(o, a.length);
    Put2(o, n);
    for (uint32_t i = 0; i < n; ++i) {
      const uint16_t pc = r.U2(), line = r.U2();
      if (!IsStart(pc) || pc >= code_.length) return false;
      Put2(o, pc == 0 ? 0 : Map(pc));  // the entry probe belongs to the first line
      Put2(o, line);
    }
    return r.ok;
  }

  bool LocalVariables(const uint8_t* p, const Attribute& a, std::vector<uint8_t>& o) const {
    Reader r{p, a.length};
    const uint16_t n = r.U2();
    if (!r.ok || a.length != 2 + 10ull * n) return false;
    Put2(o, a.name);
    Put4(o, a.length);
    Put2(o, n);
    for (uint32_t i = 0; i < n; ++i) {
      const uint32_t start = r.U2(), length = r.U2();
      const uint16_t name = r.U2(), descriptor = r.U2(), slot = r.U2();
      if (!IsStart(start) || !IsStart(start + length) || start + length > code_.length) return false;
      const uint32_t new_start = Map(start);
      Put2(o, new_start);
      Put2(o, Map(start + length) - new_start);
      Put2(o, name);
      Put2(o, descriptor);
      Put2(o, slot);
    }
    return r.ok;
  }

  // One verification_type_info, copied with an Uninitialized(offset) moved.
  bool TypeInfo(Reader& r, std::vector<uint8_t>& o) const {
    const uint8_t tag = r.U1();
    Put1(o, tag);
    if (tag <= 6) return r.ok;
    if (tag == 7) {
      Put2(o, r.U2());
      return r.ok;
    }
    if (tag == 8) {
      const uint16_t at = r.U2();
      // The offset of a `new`: never a return, so its probe is not before it.
      if (!r.ok || !IsStart(at) || at >= code_.length || code_.code[at] != 0xbb) return false;
      Put2(o, InsnAt(at));
      return true;
    }
    return false;
  }

  // Writes the StackMapTable (p == nullptr: a new one) with every frame
  // moved and the handler's frame (no locals, a Throwable on the stack)
  // appended.
  bool StackMap(const uint8_t* p, uint32_t length, uint16_t name, std::vector<uint8_t>& o) const {
    Put2(o, name);
    const size_t length_at = o.size();
    Put4(o, 0);
    const size_t count_at = o.size();
    Put2(o, 0);
    Reader r{p, length};
    const uint16_t n = p ? r.U2() : 0;
    int64_t old_at = -1;
    int64_t new_at = -1;
    uint32_t written = 0;
    auto write_delta = [&](uint32_t new_offset) { return static_cast<uint32_t>(new_offset - new_at - 1); };
    for (uint32_t i = 0; i < n && r.ok; ++i) {
      const uint8_t type = r.U1();
      uint32_t delta = 0;
      if (type <= 127) delta = type & 63;
      else if (type >= 247) delta = r.U2();
      else return false;  // 128-246 are reserved
      old_at = old_at + delta + 1;
      if (old_at >= code_.length || !IsStart(static_cast<uint32_t>(old_at))) return false;
      const uint32_t new_offset = Map(static_cast<uint32_t>(old_at));
      const uint32_t d = write_delta(new_offset);
      if (type <= 63 || type == 251) {  // same_frame(_extended)
        if (d <= 63) Put1(o, d);
        else Put1(o, 251), Put2(o, d);
      } else if (type <= 127 || type == 247) {  // same_locals_1_stack_item(_extended)
        if (d <= 63) Put1(o, 64 + d);
        else Put1(o, 247), Put2(o, d);
        if (!TypeInfo(r, o)) return false;
      } else if (type <= 250) {  // chop
        Put1(o, type);
        Put2(o, d);
      } else if (type <= 254) {  // append
        Put1(o, type);
        Put2(o, d);
        for (int k = 0; k < type - 251; ++k) {
          if (!TypeInfo(r, o)) return false;
        }
      } else {  // full_frame
        Put1(o, 255);
        Put2(o, d);
        for (int part = 0; part < 2; ++part) {
          const uint16_t count = r.U2();
          Put2(o, count);
          for (uint32_t k = 0; k < count; ++k) {
            if (!TypeInfo(r, o)) return false;
          }
        }
      }
      new_at = new_offset;
      ++written;
    }
    if (!r.ok || r.pos != length) return false;
    // The handler: full_frame, no locals, one Throwable.
    Put1(o, 255);
    Put2(o, write_delta(code_end_));
    Put2(o, 0);
    Put2(o, 1);
    Put1(o, 7);
    Put2(o, refs_.throwable);
    ++written;
    Set2(o, count_at, written);
    Set4(o, length_at, static_cast<uint32_t>(o.size() - length_at - 4));
    return true;
  }

  const ClassFile& cf_;
  const Attribute& attr_;
  const ProbeRefs& refs_;
  uint16_t id_;
  uint16_t max_stack_ = 0, max_locals_ = 0;
  size_t code_at_ = 0, handlers_at_ = 0;
  uint32_t handlers_ = 0;
  Code code_;
  std::vector<uint32_t> start_, pos_;
  uint32_t code_end_ = 0, new_length_ = 0;
};

}  // namespace

ProbeResult AddProbes(std::span<const uint8_t> class_file, std::span<const MethodProbe> probes,
                      std::string_view probe_class) {
  ProbeResult result;
  ClassFile cf;
  if (!Parse(class_file, &cf)) {
    result.error = "the class file does not parse";
    for (const MethodProbe& p : probes) result.skipped.push_back(p.id);
    return result;
  }
  PoolAdditions pool;
  pool.cf = &cf;
  pool.next = cf.cp_count;
  ProbeRefs refs;
  bool refs_made = false;
  std::vector<uint8_t> out;
  out.reserve(class_file.size() + 256 * probes.size() + 256);
  // The methods, rewritten into a buffer of their own first: the pool grows
  // while they are.
  std::vector<uint8_t> methods;
  size_t copied_from = cf.methods_start;
  for (const Method& m : cf.methods) {
    const std::string_view name = cf.Utf8(m.name), descriptor = cf.Utf8(m.descriptor);
    const MethodProbe* probe = nullptr;
    for (const MethodProbe& p : probes) {
      if (p.name == name && p.descriptor == descriptor) probe = &p;
    }
    if (!probe) continue;
    if (name[0] == '<' || (m.access & (kAccNative | kAccAbstract)) || m.code < 0) {
      result.skipped.push_back(probe->id);
      continue;
    }
    if (!refs_made) {
      const uint16_t probe_cls = pool.Class(probe_class);
      const uint16_t sig = pool.Utf8("(I)V");
      auto ref = [&](std::string_view method) {
        return pool.Pair(kMethodref, probe_cls, pool.Pair(kNameAndType, pool.Utf8(method), sig));
      };
      refs.enter = ref("enter");
      refs.exit = ref("exit");
      refs.thrown = ref("thrown");
      refs.throwable = pool.Class("java/lang/Throwable");
      refs.stack_map_name = pool.Utf8("StackMapTable");
      refs_made = true;
    }
    const uint16_t id_index = pool.Integer(probe->id);
    if (pool.full) {
      result.skipped.push_back(probe->id);
      result.error = "the constant pool is full";
      break;
    }
    std::vector<uint8_t> code_attr;
    std::string why;
    CodeRewriter rewriter(cf, m.attributes[static_cast<size_t>(m.code)], refs, id_index);
    if (!rewriter.Rewrite(&code_attr, &why)) {
      result.skipped.push_back(probe->id);
      result.error = std::string(name) + std::string(descriptor) + ": " + why;
      continue;
    }
    ProbeResult::Probed probed;
    probed.id = probe->id;
    CodeRewriter::Calls(cf, rewriter.code(), &probed.calls);
    result.probed.push_back(std::move(probed));
    // The method with its Code attribute replaced.
    methods.insert(methods.end(), class_file.begin() + copied_from, class_file.begin() + m.start);
    const Attribute& code = m.attributes[static_cast<size_t>(m.code)];
    methods.insert(methods.end(), class_file.begin() + m.start, class_file.begin() + code.start);
    methods.insert(methods.end(), code_attr.begin(), code_attr.end());
    methods.insert(methods.end(), class_file.begin() + code.data + code.length, class_file.begin() + m.end);
    copied_from = m.end;
  }
  for (const MethodProbe& p : probes) {
    bool known = std::any_of(result.probed.begin(), result.probed.end(), [&](auto& x) { return x.id == p.id; }) ||
                 std::find(result.skipped.begin(), result.skipped.end(), p.id) != result.skipped.end();
    if (!known) result.skipped.push_back(p.id);
  }
  if (result.probed.empty()) {
    if (result.error.empty()) result.error = "no method to probe";
    return result;
  }
  methods.insert(methods.end(), class_file.begin() + copied_from, class_file.begin() + cf.methods_end);
  // magic, version, the pool's new count, the old entries, the new ones,
  // what lies between the pool and the methods, the methods, the rest.
  out.insert(out.end(), class_file.begin(), class_file.begin() + 8);
  Put2(out, pool.next);
  out.insert(out.end(), class_file.begin() + 10, class_file.begin() + cf.cp_end);
  out.insert(out.end(), pool.bytes.begin(), pool.bytes.end());
  out.insert(out.end(), class_file.begin() + cf.cp_end, class_file.begin() + cf.methods_start);
  out.insert(out.end(), methods.begin(), methods.end());
  out.insert(out.end(), class_file.begin() + cf.methods_end, class_file.end());
  result.bytes = std::move(out);
  return result;
}

bool ListMethods(std::span<const uint8_t> class_file, std::vector<DeclaredMethod>* out) {
  ClassFile cf;
  if (!Parse(class_file, &cf)) return false;
  for (const Method& m : cf.methods) {
    out->push_back({std::string(cf.Utf8(m.name)), std::string(cf.Utf8(m.descriptor)), m.access, m.code >= 0});
  }
  return true;
}

bool CalledBy(std::span<const uint8_t> class_file, std::string_view name, std::string_view descriptor,
              std::vector<CalledMethod>* out) {
  ClassFile cf;
  if (!Parse(class_file, &cf)) return false;
  for (const Method& m : cf.methods) {
    if (m.code < 0 || cf.Utf8(m.name) != name || cf.Utf8(m.descriptor) != descriptor) continue;
    const Attribute& a = m.attributes[static_cast<size_t>(m.code)];
    Reader r{cf.bytes.data() + a.data, a.length};
    r.Skip(4);
    const uint32_t length = r.U4();
    if (!r.ok || length == 0 || length > 65535 || !r.Has(length)) return false;
    Code code;
    if (!Decode(cf.bytes.data() + a.data + r.pos, length, &code)) return false;
    CodeRewriter::Calls(cf, code, out);
    return true;
  }
  return false;
}

}  // namespace arcprof::classfile
