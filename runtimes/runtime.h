// One runtime seen from outside its processes, with no flag: how arcprof
// recognizes a process of it, what the sampler must read at sample time, how
// what was read becomes frames, where those frames go in the native stack,
// how the unwinder steps its JIT code, and what it does to its processes
// during a recording (loading an agent) (docs/design.md, "Runtimes"). A
// runtime is one folder here (its BPF side, if any, in bpf/, e.g.
// bpf/python.bpf.h) plus one line in MakeRuntimes() (registry.cpp). The
// generic unwinder knows no runtime.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "runtimes.h"  // bpf/: runtime_proc, runtime_frame
#include "symbolize/symbol_types.h"
#include "unwind/frame_stepper.h"

namespace arcprof {
class AddressSpaces;
class JitProcessSource;
}  // namespace arcprof

namespace arcprof::runtimes {

// What a recording gives its runtimes (loader/runtime_extension.cpp), for
// those that act on their processes besides naming samples (Java attaches
// its agent). Everything here outlives the calls it is passed to.
struct RuntimeHost {
  AddressSpaces& spaces;
  bool system_wide = true;            // false with -p or a command
  std::vector<uint32_t> target_pids;  // -p pids, or the launched command's pid
  // Whether runtimes may load an agent into their processes (--java/--no-java).
  bool attach = true;
  // No line per process attached (-q; continuous without --verbose-java).
  bool quiet = false;
  // Sampling runs while Start runs: one that blocks calls drain() meanwhile,
  // and hold(pid) keeps pid's samples aside until every runtime has started
  // (their code is named by what the attach brings).
  std::function<void()> drain;
  std::function<void(uint32_t pid)> hold;
  // Side-band records lost so far (the mmap events runtimes recognize
  // processes by); null when not known.
  std::function<uint64_t()> sideband_lost;
};

// A thread of the window being closed, whose name a runtime may know better
// than the kernel's 15 characters (Java's thread names).
struct WindowThread {
  uint32_t pid = 0;
  uint32_t tid = 0;
  std::string* comm = nullptr;
};

class Runtime {
 public:
  virtual ~Runtime() = default;
  virtual std::string_view name() const = 0;
  // ARCPROF_RUNTIME_*: the runtime a sample's frames were read for;
  // ARCPROF_RUNTIME_NONE for a runtime with nothing to read at sample time
  // (Java: the stack copy and its JIT records name its frames).
  virtual uint32_t id() const = 0;

  // Recognition, in two steps. A cheap test of a newly mapped file's path
  // (the side band reports every mapping of every process): whether it may be
  // this runtime's binary or library.
  virtual bool MayHost(std::string_view path) const = 0;
  // Then the file itself (symbols, version, constants; never the process's
  // memory, which may still be starting): what the sampler must read in pid,
  // or nothing when the file is not this runtime (a binary named python that
  // is not CPython) or a version it does not know. A runtime of id
  // ARCPROF_RUNTIME_NONE answers a runtime_proc of that id: recognized,
  // nothing for the sampler.
  virtual std::optional<runtime_proc> Recognize(uint32_t pid, const MappedFile& file) = 0;

  // Where its frames go: a native frame of this symbol runs interpreter
  // frames of pid (a recognized process; the symbol may depend on its
  // version). The frames a sample carries, cut at their markers
  // (runtime_frame code 0), replace such native frames one activation each,
  // innermost with innermost.
  virtual bool IsHostFrame(uint32_t pid, std::string_view symbol) const = 0;
  // Or, for a runtime whose frames are native frames themselves (V8 builds
  // them with a frame pointer): the pc of the native frame one frame stands
  // for, which it replaces; 0 for a runtime placed by IsHostFrame.
  virtual uint64_t NativePc(const runtime_frame&) const { return 0; }
  // Names one frame the sampler read (not a marker). Reads the process's
  // memory, bounded; the answer's views stay valid for the runtime's life.
  virtual SymbolizedFrame Name(uint32_t pid, const runtime_frame& frame) = 0;
  // The same with the frames the runtime's compiler inlined into it where
  // it records them (V8's optimized code): the frame's own function first,
  // then each inlined callee after its caller.
  virtual void NameInlined(uint32_t pid, const runtime_frame& frame, std::vector<SymbolizedFrame>& out) {
    out.assign(1, Name(pid, frame));
  }

  // A JIT symbol of pid (a perf map entry) that may be this runtime's own
  // code of a known shape: marks it for the runtime's FrameStepper (frame
  // size, rbp kept), so that the walk goes on past it with the caller's CFI.
  virtual void RefineJitFrame(uint32_t pid, JitSymbol& code) {}

  // How the unwinder steps a frame of this runtime's JIT code that neither
  // CFI nor rbp steps (unwind/frame_stepper.h); nullptr for none. Asked once
  // per recording, in registry order.
  virtual std::unique_ptr<FrameStepper> MakeFrameStepper() const { return nullptr; }

  // During a recording, for runtimes that act on their processes (all
  // optional). Start: once sampling runs, after the processes already
  // running were recognized. Poll: on every drain tick. CloseWindow: when a
  // window closes, its threads' names may be replaced; `last`: sampling has
  // stopped, finish what runs in the background.
  virtual void Start(RuntimeHost& host) {}
  virtual void Poll(RuntimeHost& host, uint64_t now_ns) {}
  virtual void CloseWindow(RuntimeHost& host, std::span<const WindowThread> threads, bool last) {}
  // A process's JIT symbols (perf map, jitdump and arcprof's side file:
  // symbolize/jit_process_source.h) were opened, or are let go (the process
  // exited or exec'd). The source stays valid from one call to the other.
  virtual void JitSourceOpened(uint32_t pid, JitProcessSource& source) {}
  virtual void JitSourceClosing(uint32_t pid, JitProcessSource& source) {}

  // The process exited: its state and cached names go.
  virtual void Forget(uint32_t pid) = 0;
  // Counters since the last call ("python.frames_named", ...), then reset.
  virtual void TakeCounters(const std::function<void(std::string_view, int64_t)>& add) = 0;
  virtual size_t HeldBytes() const = 0;
};

// Every runtime arcprof knows, one line each.
std::vector<std::unique_ptr<Runtime>> MakeRuntimes();

// The frame steppers of MakeRuntimes() (Runtime::MakeFrameStepper), in its
// order; the recording session gives them to its Unwinder.
std::vector<std::unique_ptr<FrameStepper>> MakeFrameSteppers();

}  // namespace arcprof::runtimes
