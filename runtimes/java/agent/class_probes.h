// Entry/exit probes put into Java class files, for `arcprof trace` of a Java
// root (docs/java.md, "Tracing a Java subgraph"). Pure C++ over the bytes of
// a class file: no JVM, no exceptions (it is built into the agent).
//
// A probed method gets, in its bytecode:
//   at entry:            ldc_w <id>; invokestatic <probe class>.enter(I)V
//   before every return: ldc_w <id>; invokestatic <probe class>.exit(I)V
//   a catch-all handler over the whole original code, appended last:
//                        ldc_w <id>; invokestatic <probe class>.thrown(I)V; athrow
// so a call that ends by an exception is counted as ended too. Branch
// offsets, switches (their padding), the exception table, StackMapTable
// (Uninitialized(offset) entries included), LineNumberTable and
// LocalVariable(Type)Table move with the code; other attributes of the Code
// attribute, which may hold offsets, are dropped. A goto that no longer
// reaches becomes goto_w. Constructors, abstract and native methods are never
// probed; a method that cannot be rewritten for sure (a conditional branch
// that no longer reaches, code over 64 KiB) is left as it is; a class file
// that does not parse is returned unchanged.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace arcprof::classfile {

// The class whose static natives the probes call (defined by the agent in
// the bootstrap loader, so every class loader sees it).
inline constexpr std::string_view kProbeClass = "arcprof/trace/Probe";

// The newest class file version read (JDK 25); newer ones are left alone.
inline constexpr uint16_t kMaxMajorVersion = 69;

// A method of the class to probe, and the id its probes pass.
struct MethodProbe {
  std::string name;        // modified UTF-8, as in the class file
  std::string descriptor;  // "(I)V"
  int32_t id = 0;
};

// A method named by an invoke instruction (a possible callee).
struct CalledMethod {
  std::string owner;  // internal name: "com/example/Cache"
  std::string name;
  std::string descriptor;
  uint8_t opcode = 0;  // invokevirtual, invokespecial, invokestatic, invokeinterface
  bool operator==(const CalledMethod&) const = default;
};

// A method declared by a class file.
struct DeclaredMethod {
  std::string name;
  std::string descriptor;
  uint16_t access = 0;
  bool has_code = false;
};

struct ProbeResult {
  // The class with its probes; empty when nothing was changed (see error).
  std::vector<uint8_t> bytes;
  // Per method probed: its id and the methods it invokes (each once).
  struct Probed {
    int32_t id = 0;
    std::vector<CalledMethod> calls;
  };
  std::vector<Probed> probed;
  // Ids asked for that were not probed (absent, constructor, abstract,
  // native, or code that cannot be rewritten for sure).
  std::vector<int32_t> skipped;
  std::string error;  // why the class or a method was left alone ("" when all went in)
};

// Adds the probes to the methods `probes` names. Never fails: a class file
// it cannot read comes back unchanged (bytes empty, error set).
ProbeResult AddProbes(std::span<const uint8_t> class_file, std::span<const MethodProbe> probes,
                      std::string_view probe_class = kProbeClass);

// The methods a class file declares; false when it does not parse.
bool ListMethods(std::span<const uint8_t> class_file, std::vector<DeclaredMethod>* out);

// The methods a method of the class invokes; false when the class does not
// parse or has no such method with code.
bool CalledBy(std::span<const uint8_t> class_file, std::string_view name, std::string_view descriptor,
              std::vector<CalledMethod>* out);

}  // namespace arcprof::classfile
