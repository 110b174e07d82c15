// The plain types the symbolizer's parts and callers share: a named frame,
// a mapping event, what is known of a process, a mapped file and an address
// space's files, JIT code facts. No behaviour: the parts include this, the
// facade (symbolizer.h) sits above them.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/frame.h"
#include "symbolize/cgroup_parse.h"

namespace arcprof {

struct SymbolizedFrame {
  std::string_view module;  // stable for the Symbolizer's lifetime
  std::string_view symbol;  // "" when unknown
  // Symbol start: file virtual address for ELF, absolute for kernel. For an
  // unnamed ELF frame the start of its function from .eh_frame_hdr, 0 when
  // the file has none.
  uint64_t address = 0;
  FrameKind kind = FrameKind::kUnknown;
  UnknownReason reason = UnknownReason::kNone;
  // The instruction itself in the module's terms: the ELF vaddr for files and
  // the vDSO, the absolute address otherwise. Set for unknown frames too, so a
  // later offline pass can still name them.
  uint64_t offset = 0;
  // JIT code only: the methods inlined at this address, outermost first
  // (JitSymbol::inlined); nullptr when none.
  const std::vector<std::string_view>* inlined = nullptr;
};

struct MappingEvent {
  uint64_t start = 0;
  uint64_t len = 0;
  uint64_t pgoff = 0;
  uint32_t prot = 0;       // PROT_* bits
  uint32_t flags = 0;      // MAP_* bits
  uint32_t maj = 0, min = 0;
  uint64_t ino = 0;
  std::string build_id;    // lowercase hex, "" when unknown
  std::string path;        // as the kernel reports it ("//anon", "[vdso]", "/usr/lib/...")
};

struct ProcessInfo {
  uint32_t pid = 0;
  std::string comm;
  std::string cmdline;
  uint32_t uid = 0;
  uint32_t ns_pid = 0;  // pid in its innermost pid namespace (perf maps in containers); 0 unknown
  // Its container, pod and systemd unit from /proc/PID/cgroup, and
  // OTEL_SERVICE_NAME from its environment when no unit names it (read at
  // exec and snapshot, a fork's copied; kept after exit like the rest).
  procfs::CgroupIdentity cgroup;
  std::string otel_service_name;
};

// A mapped file as the symbolizer holds it open, for a DWARF unwinder.
struct MappedFile {
  int fd = -1;                 // owned by the Symbolizer; open while FileOpen(file_id)
  std::string_view path;       // as the kernel named it
  std::string_view build_id;   // lowercase hex, "" when none
  uint64_t start = 0, end = 0, pgoff = 0;
  uint64_t load_bias = 0;      // runtime address - ELF vaddr for this mapping
  uint32_t file_id = 0;        // stable identity of the open file (shared across processes)
};

// Every open file mapped in a process's address space live at one time, with
// a key that identifies this state of the address space (it changes at exec
// and with every new mapping): the unwinder keeps one Dwfl per key.
struct AddressSpaceFiles {
  uint64_t key = 0;
  uint64_t generation = 0;  // index of the live generation (changes at exec)
  std::vector<MappedFile> files;
};

struct JitSymbol {
  std::string_view name;  // must stay valid for the Symbolizer's lifetime
  uint64_t start = 0;     // absolute code address
  FrameKind kind = FrameKind::kJit;  // kInterpreted for a runtime's interpreter
  // Methods the JIT inlined into `name` at this address, outermost first
  // (`name` itself not repeated); nullptr when none. Stays valid for the
  // Symbolizer's lifetime, like `name`.
  const std::vector<std::string_view>* inlined = nullptr;
  // How to step out of this code's frame without a frame pointer (HotSpot
  // compiled methods and stubs, from the agent): the frame's size in bytes
  // (0 unknown) and the code offset from which it is set up (-1 never).
  int32_t frame_size = 0;
  int32_t frame_complete = -1;
  // rbp is not a frame pointer here (compiled Java code in a JVM without
  // -XX:+PreserveFramePointer): step by frame_size or not at all.
  bool rbp_unreliable = false;
  // rbp is this code's frame pointer (compiled Java code in a JVM with
  // -XX:+PreserveFramePointer): inside the body it points frame_size - 16
  // above the stack pointer, which tells the body from its prologue and
  // epilogue.
  bool rbp_frame_pointer = false;
};

}  // namespace arcprof
