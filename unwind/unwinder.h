// DWARF CFI unwinding of user stacks copied by the sampler, with elfutils
// libdwfl: one Dwfl per process address space, reused across samples, whose
// memory callbacks serve the copied stack and whose initial registers are the
// sampled ones. In hybrid mode libdwfl's own frame-pointer step takes over for
// frames without unwind tables (JIT code), frame by frame.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <unordered_map>
#include <vector>

#include "unwind/frame_stepper.h"

namespace arcprof {

class AddressSpaces;
class JitCodeLookup;

inline constexpr int kUnwindRegs = 17;  // DWARF x86-64: rax rdx rcx rbx rsi rdi rbp rsp r8-r15 rip

struct UnwindInput {
  uint32_t pid = 0;
  uint32_t tid = 0;
  uint64_t t_ns = 0;
  const uint64_t* regs = nullptr;  // kUnwindRegs values
  const uint8_t* stack = nullptr;  // copy of user memory starting at regs[7] (rsp)
  size_t stack_len = 0;
};

// Why a walk ended. Values are stored in capture counters by name.
enum class UnwindStop : uint8_t {
  kComplete = 0,        // the outermost frame says there is no caller
  kNoUnwindInfo = 1,    // a frame without CFI (and no frame-pointer fallback)
  kStackCopyTooSmall = 2,  // the walk needed stack beyond the copy
  kUnmappedMemory = 3,  // a frame's pc is outside every known mapping
  kMaxDepth = 4,
  kNoProcess = 5,       // nothing known about the address space
  kJitFrame = 6,        // JIT code that cannot be stepped with confidence
};
inline constexpr size_t kUnwindStopCount = 7;
const char* UnwindStopName(UnwindStop stop);

struct UnwindResult {
  // Leaf first: pcs[0] is the sampled ip, the others are return addresses
  // except where `activation` says otherwise.
  std::vector<uint64_t> pcs;
  UnwindStop stop = UnwindStop::kComplete;
  // Parallel to pcs when not empty: the method an interpreted frame holds,
  // as its runtime's FrameStepper read it (HotSpot's Method*; 0 for every
  // other frame), for naming it.
  std::vector<uint64_t> methods;
  // Parallel to pcs when not empty: 1 for a frame whose pc is where it
  // resumes, not a return address after a call: the signal trampoline (a
  // handler returns to its first byte) and the frame the signal interrupted.
  // Such a pc is looked up as it is; a return address at pc - 1, inside the
  // call. The leaf (pcs[0]) is always such a frame.
  std::vector<uint8_t> activation;
  // Where to look pcs[i] up: the pc itself or the call before it.
  uint64_t LookupPc(size_t i) const { return IsActivation(i) ? pcs[i] : pcs[i] - 1; }
  bool IsActivation(size_t i) const { return i == 0 || (i < activation.size() && activation[i] != 0); }
};

struct UnwinderStats {
  uint64_t unwinds = 0;
  uint64_t fast_unwinds = 0;    // done with cached CFI rules
  uint64_t rules_computed = 0;  // CFI rows interpreted by libdw
  uint64_t dwfl_created = 0;
  uint64_t modules_reported = 0;
  uint64_t jit_frames_stepped = 0;   // by their frame size
  uint64_t interpreted_frames = 0;   // through rbp, the method read
  uint64_t cfi_released = 0;         // files' CFI dropped for the budget
  uint64_t cfi_bytes = 0;            // CFI held now (estimate)
};

class Unwinder {
 public:
  static constexpr size_t kCfiBudgetBytes = 32u << 20;  // the default
  // Reads the files of `spaces`; JIT code is stepped by what `jit` tells of it.
  Unwinder(AddressSpaces& spaces, JitCodeLookup& jit, size_t cfi_budget_bytes = kCfiBudgetBytes);
  ~Unwinder();
  Unwinder(const Unwinder&) = delete;
  Unwinder& operator=(const Unwinder&) = delete;

  // The runtimes that step their JIT code's frames (runtimes::MakeFrameSteppers),
  // asked in this order; without any, JIT code is stepped through rbp unless
  // its rbp is known to be no frame pointer.
  void SetFrameSteppers(std::vector<std::unique_ptr<FrameStepper>> steppers);

  // Walks the copied stack. With fp_fallback, frames without CFI are stepped
  // through rbp (hybrid); without, the walk stops there (dwarf).
  UnwindResult Unwind(const UnwindInput& input, bool fp_fallback, size_t max_frames);

  // The caller of the sampled function as the unwind tables place it: one CFI
  // step from the leaf. Used to repair frame-pointer stacks whose leaf has not
  // set up its own frame (it would otherwise skip its caller).
  struct Caller {
    uint64_t pc = 0;
    bool activation = false;  // resumes at pc (a signal trampoline): UnwindResult::activation
  };
  std::optional<Caller> LeafCaller(const UnwindInput& input);

  const UnwinderStats& stats() const { return stats_; }
  // The fixed rule cache's heap bytes (CFI itself is stats().cfi_bytes).
  size_t CacheBytes() const { return rules_.capacity() * sizeof(RuleSlot); }
  // Ends the libdwfl spaces no walk used since the previous call (a daemon
  // calls it at each window close): each maps every module of its process,
  // and a space idle for a whole window is cheaper to rebuild than to keep.
  // Returns how many were ended.
  size_t ReleaseIdleSpaces();

  // How to step out of the frame at one pc: where the CFA is and where the
  // caller's return address, rbp and rbx are saved (x86-64 CFI as compilers
  // emit it; a PLT stub's CFA expression is resolved for its pc, and a CFA
  // kept in rbx, as ld.so's lazy-binding trampoline keeps it, is followed by
  // tracking rbx through the walk). kSignal: a signal trampoline (glibc's
  // __restore_rt), whose CFI reads the interrupted registers from the
  // kernel's signal frame on the stack: rsp at sp + cfa_off, rip at sp +
  // ra_off, rbp at sp + bp_off. kComplex rows (other CFA expressions) are
  // left to the full libdwfl unwinder.
  struct Rule {
    enum Kind : uint8_t { kStep, kNoInfo, kOutermost, kComplex, kSignal };
    // What becomes of the caller's rbx: this frame left it alone, saved it
    // at CFA + bx_off, or lost it (CFI says undefined).
    enum Rbx : uint8_t { kBxSame, kBxSaved, kBxLost };
    Kind kind = kNoInfo;
    uint8_t cfa_reg = 7;  // DWARF register: 7 rsp, 6 rbp, 3 rbx
    bool bp_saved = false;
    Rbx bx = kBxSame;
    int32_t cfa_off = 0;
    int16_t ra_off = 0;   // return address saved at CFA + ra_off
    int16_t bp_off = 0;   // caller's rbp saved at CFA + bp_off (when bp_saved)
    int16_t bx_off = 0;   // caller's rbx saved at CFA + bx_off (when kBxSaved)
  };

 private:
  struct Space;
  struct FileCfi;
  Space* SpaceFor(uint32_t pid, uint64_t t_ns);
  // The walk with cached rules; nullopt when a frame needs the full unwinder.
  std::optional<UnwindResult> FastUnwind(const UnwindInput& input, bool fp_fallback,
                                         size_t max_frames);
  UnwindResult DwflUnwind(const UnwindInput& input, bool fp_fallback, size_t max_frames);
  Rule RuleAt(uint32_t file_id, int fd, uint64_t vaddr);
  // One step out of JIT code by its runtime's FrameStepper, which knows the
  // code's frame layout (HotSpot: runtimes/java/hotspot_stepper.cpp).
  // `leaf`: the frame resumes at pc (the sampled leaf, or a frame a signal
  // interrupted), so it may be stopped anywhere, in its prologue or epilogue
  // too. kNotJit: no JIT code, or code to step through rbp.
  enum class JitStep { kNotJit, kStepped, kStop };
  class StepContext;
  JitStep StepJit(const UnwindInput& input, bool leaf, uint64_t pc, uint64_t* sp, uint64_t* bp, uint64_t* ra,
                  uint64_t* method);
  // libdwfl steps JIT code through rbp: end a walk after the first JIT
  // frame whose rbp is no frame pointer (what followed it is not its caller).
  void EndAtUnreliableJit(const UnwindInput& input, UnwindResult* result);

  // Drops spaces and CFI of processes and files the address spaces forgot.
  void Prune();

  AddressSpaces& address_spaces_;
  JitCodeLookup& jit_;
  std::vector<std::unique_ptr<FrameStepper>> steppers_;
  uint64_t forget_epoch_ = 0;
  // At most kMaxSpaces libdwfl address spaces (each maps every module it
  // reports); the least recently used one goes first.
  // Few are needed: they serve only walks the cached rules cannot step
  // (about one new space every 10 s on a busy build machine), and each maps
  // every module of its process (file-backed RSS).
  static constexpr size_t kMaxSpaces = 4;
  static constexpr uint64_t kWalksPerDwfl = 2000;
  uint64_t space_clock_ = 0;
  uint64_t space_clock_at_release_ = 0;
  std::unordered_map<uint32_t, std::unique_ptr<Space>> spaces_;  // by pid
  std::unordered_map<uint32_t, std::unique_ptr<FileCfi>> cfi_;   // by file id (AddressSpaces)
  // CFI held at once (sections read, rows interpreted, libdw's caches, as
  // estimated in FileCfi::bytes): past this the least recently used files'
  // CFI is dropped and read again when needed, so memory does not follow
  // how many big binaries the machine runs.
  size_t cfi_budget_;
  size_t cfi_bytes_ = 0;
  uint64_t cfi_clock_ = 0;
  void EnforceCfiBudget(uint32_t keep);
  // Direct-mapped cache of rules by (file id, vaddr): the rows behind it are
  // in FileCfi::rows, so an eviction costs one map lookup, not libdw.
  struct RuleSlot {
    uint64_t vaddr = 0;
    uint32_t file_id = 0;
    bool used = false;
    Rule rule;
  };
  std::vector<RuleSlot> rules_ = std::vector<RuleSlot>(size_t{1} << 16);
  UnwinderStats stats_;
};

}  // namespace arcprof
