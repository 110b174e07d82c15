// One interpreted runtime seen from outside its processes, with no flag: how
// arcprof recognizes a process of it, what the sampler must read at sample
// time, how what was read becomes frames, and where those frames go in the
// native stack (docs/design.md, "Runtimes"). A runtime is one folder here
// (its BPF side in bpf/, e.g. bpf/python.bpf.h) plus one line in
// MakeRuntimes() (registry.cpp). The generic unwinder knows no runtime.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string_view>
#include <vector>

#include "runtimes.h"  // bpf/: runtime_proc, runtime_frame
#include "symbolize/symbol_types.h"
#include "unwind/frame_stepper.h"

namespace arcprof::runtimes {

class Runtime {
 public:
  virtual ~Runtime() = default;
  virtual std::string_view name() const = 0;
  // ARCPROF_RUNTIME_*: the runtime a sample's frames were read for.
  virtual uint32_t id() const = 0;

  // Recognition, in two steps. A cheap test of a newly mapped file's path
  // (the side band reports every mapping of every process): whether it may be
  // this runtime's binary or library.
  virtual bool MayHost(std::string_view path) const = 0;
  // Then the file itself (symbols, version, constants; never the process's
  // memory, which may still be starting): what the sampler must read in pid,
  // or nothing when the file is not this runtime (a binary named python that
  // is not CPython) or a version it does not know.
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

  // The process exited: its state and cached names go.
  virtual void Forget(uint32_t pid) = 0;
  // Counters since the last call ("python.frames_named", ...), then reset.
  virtual void TakeCounters(const std::function<void(std::string_view, int64_t)>& add) = 0;
  virtual size_t HeldBytes() const = 0;
};

// Every runtime arcprof knows, one line each.
std::vector<std::unique_ptr<Runtime>> MakeRuntimes();

// The runtimes whose JIT code's frames the unwinder cannot step by rbp or
// CFI (unwind/frame_stepper.h), one line each; the recording session gives
// them to its Unwinder.
std::vector<std::unique_ptr<FrameStepper>> MakeFrameSteppers();

}  // namespace arcprof::runtimes
