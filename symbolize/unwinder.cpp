#include "symbolize/unwinder.h"

#include <elfutils/libdwfl.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <unordered_set>

#include "symbolize/symbolizer.h"

namespace arcprof {

const char* UnwindStopName(UnwindStop stop) {
  switch (stop) {
    case UnwindStop::kComplete: return "complete";
    case UnwindStop::kNoUnwindInfo: return "no unwind info";
    case UnwindStop::kStackCopyTooSmall: return "stack copy too small";
    case UnwindStop::kUnmappedMemory: return "unmapped memory";
    case UnwindStop::kMaxDepth: return "max depth";
    case UnwindStop::kNoProcess: return "no process";
  }
  return "unknown";
}

namespace {

// What the libdwfl callbacks see for the sample being unwound.
struct SampleState {
  const UnwindInput* input = nullptr;
  bool read_beyond_copy = false;
};

const Dwfl_Callbacks kDwflCallbacks = {
    // Modules are reported with open fds; nothing has to be found by name.
    .find_elf = nullptr,
    // .debug_frame in separate debug files, for binaries without .eh_frame.
    .find_debuginfo = dwfl_standard_find_debuginfo,
    .section_address = nullptr,
    .debuginfo_path = nullptr,
};

pid_t NextThread(Dwfl*, void* dwfl_arg, void** thread_argp) {
  // One thread per walk: the sampled one (its tid is set by GetThread).
  if (*thread_argp != nullptr) return 0;
  auto* state = static_cast<SampleState*>(dwfl_arg);
  *thread_argp = dwfl_arg;
  return static_cast<pid_t>(state->input->tid);
}

bool GetThread(Dwfl*, pid_t, void* dwfl_arg, void** thread_argp) {
  *thread_argp = dwfl_arg;
  return true;
}

bool MemoryRead(Dwfl*, Dwarf_Addr addr, Dwarf_Word* result, void* dwfl_arg) {
  auto* state = static_cast<SampleState*>(dwfl_arg);
  const UnwindInput& in = *state->input;
  const uint64_t sp = in.regs[7];
  if (addr >= sp && addr - sp + sizeof(Dwarf_Word) <= in.stack_len) {
    memcpy(result, in.stack + (addr - sp), sizeof(Dwarf_Word));
    return true;
  }
  // Above the copy: the walk wanted more stack than was copied. Below sp, or
  // far away: not stack memory we have.
  if (addr >= sp + in.stack_len && addr < sp + in.stack_len + (8u << 20)) {
    state->read_beyond_copy = true;
  }
  return false;
}

bool SetInitialRegisters(Dwfl_Thread* thread, void* thread_arg) {
  auto* state = static_cast<SampleState*>(thread_arg);
  Dwarf_Word regs[kUnwindRegs];
  for (int i = 0; i < kUnwindRegs; ++i) regs[i] = state->input->regs[i];
  return dwfl_thread_state_registers(thread, 0, kUnwindRegs, regs);
}

const Dwfl_Thread_Callbacks kThreadCallbacks = {
    .next_thread = NextThread,
    .get_thread = GetThread,
    .memory_read = MemoryRead,
    .set_initial_registers = SetInitialRegisters,
    .detach = nullptr,
    .thread_detach = nullptr,
};

struct WalkState {
  std::vector<uint64_t>* pcs;
  size_t max_frames;
  bool fp_fallback;
  Dwfl* dwfl;
  bool stopped_no_info = false;
  bool stopped_unmapped = false;
};

int OnFrame(Dwfl_Frame* frame, void* arg) {
  auto* walk = static_cast<WalkState*>(arg);
  Dwarf_Addr pc;
  bool activation = false;
  if (!dwfl_frame_pc(frame, &pc, &activation)) return DWARF_CB_ABORT;
  if (pc == 0) return DWARF_CB_ABORT;
  const Dwarf_Addr lookup = activation ? pc : pc - 1;
  if (!walk->pcs->empty() && dwfl_addrmodule(walk->dwfl, lookup) == nullptr) {
    // A frame outside every reported file: JIT code or garbage. In dwarf mode
    // there are no unwind tables to continue with.
    if (!walk->fp_fallback) {
      walk->stopped_no_info = true;
      walk->pcs->push_back(pc);
      return DWARF_CB_ABORT;
    }
  }
  walk->pcs->push_back(pc);
  if (walk->pcs->size() >= walk->max_frames) return DWARF_CB_ABORT;
  return DWARF_CB_OK;
}

}  // namespace

// One process's address space as libdwfl knows it: the modules reported so far
// (by mapping start) and the key of the symbolizer state they were read from.
struct Unwinder::Space {
  Dwfl* dwfl = nullptr;
  uint64_t key = 0;
  uint64_t generation = 0;
  std::unordered_set<uint64_t> reported;  // mapping starts
  SampleState sample;
  bool attached = false;

  ~Space() {
    if (dwfl) dwfl_end(dwfl);
  }
};

Unwinder::Unwinder(Symbolizer& symbolizer) : symbolizer_(symbolizer) {}
Unwinder::~Unwinder() = default;

Unwinder::Space* Unwinder::SpaceFor(uint32_t pid, uint64_t t_ns) {
  auto files = symbolizer_.MappedFiles(pid, t_ns);
  if (!files || files->files.empty()) return nullptr;
  auto& slot = spaces_[pid];
  if (slot && slot->key == files->key) return slot.get();
  // A changed key means new mappings (report them) or an exec (start over:
  // the old modules may overlap the new ones).
  if (slot && slot->generation != files->generation) slot.reset();
  const bool fresh = !slot;
  if (!fresh) {
    // Report only what is new, keeping libdwfl's per-module caches.
    dwfl_report_begin_add(slot->dwfl);
  } else {
    slot = std::make_unique<Space>();
    slot->dwfl = dwfl_begin(&kDwflCallbacks);
    if (!slot->dwfl) return nullptr;
    dwfl_report_begin(slot->dwfl);
    ++stats_.dwfl_created;
  }
  bool overlap = false;
  for (const MappedFile& f : files->files) {
    if (slot->reported.count(f.start)) continue;
    const int fd = dup(f.fd);  // libdwfl closes the fd it is given
    if (fd < 0) continue;
    std::string name(f.path);
    Dwfl_Module* mod =
        dwfl_report_elf(slot->dwfl, name.c_str(), name.c_str(), fd, f.load_bias, true);
    if (getenv("ARCPROF_UNWIND_DEBUG")) {
      fprintf(stderr, "report %s start=%lx bias=%lx -> %s\n", name.c_str(), (unsigned long)f.start,
              (unsigned long)f.load_bias, mod ? "ok" : dwfl_errmsg(-1));
    }
    if (!mod) {
      close(fd);
      // Adding to a live space most likely failed on an old module that
      // overlaps a new one; a fresh space just skips files libdwfl refuses.
      if (!fresh) overlap = true;
      slot->reported.insert(f.start);
      continue;
    }
    slot->reported.insert(f.start);
    ++stats_.modules_reported;
  }
  dwfl_report_end(slot->dwfl, nullptr, nullptr);
  if (overlap && !fresh) {
    // The address space was replaced (exec): rebuild from scratch once.
    slot.reset();
    return SpaceFor(pid, t_ns);
  }
  slot->key = files->key;
  slot->generation = files->generation;
  if (!slot->attached) {
    if (!dwfl_attach_state(slot->dwfl, nullptr, static_cast<pid_t>(pid), &kThreadCallbacks,
                           &slot->sample)) {
      spaces_.erase(pid);
      return nullptr;
    }
    slot->attached = true;
  }
  return slot.get();
}

UnwindResult Unwinder::Unwind(const UnwindInput& input, bool fp_fallback, size_t max_frames) {
  UnwindResult result;
  ++stats_.unwinds;
  Space* space = SpaceFor(input.pid, input.t_ns);
  if (!space) {
    result.pcs.push_back(input.regs[16]);
    result.stop = UnwindStop::kNoProcess;
    return result;
  }
  space->sample.input = &input;
  space->sample.read_beyond_copy = false;
  WalkState walk{&result.pcs, max_frames, fp_fallback, space->dwfl};
  const int rc = dwfl_getthread_frames(space->dwfl, static_cast<pid_t>(input.tid), OnFrame, &walk);
  space->sample.input = nullptr;
  if (getenv("ARCPROF_UNWIND_DEBUG") && rc != 0) {
    fprintf(stderr, "unwind pid %u: rc=%d err=%s frames=%zu last=%lx beyond=%d\n", input.pid, rc,
            dwfl_errmsg(-1), result.pcs.size(), (unsigned long)result.pcs.back(),
            (int)space->sample.read_beyond_copy);
  }
  if (result.pcs.empty()) result.pcs.push_back(input.regs[16]);
  if (walk.stopped_no_info) {
    result.stop = UnwindStop::kNoUnwindInfo;
  } else if (result.pcs.size() >= max_frames) {
    result.stop = UnwindStop::kMaxDepth;
  } else if (rc == 0) {
    result.stop = UnwindStop::kComplete;
  } else if (space->sample.read_beyond_copy) {
    result.stop = UnwindStop::kStackCopyTooSmall;
  } else {
    const uint64_t last = result.pcs.back();
    const uint64_t lookup = result.pcs.size() > 1 ? last - 1 : last;
    result.stop = dwfl_addrmodule(space->dwfl, lookup) == nullptr ? UnwindStop::kUnmappedMemory
                                                                  : UnwindStop::kNoUnwindInfo;
  }
  return result;
}

std::optional<uint64_t> Unwinder::LeafCaller(const UnwindInput& input) {
  UnwindResult r = Unwind(input, /*fp_fallback=*/false, 2);
  if (r.pcs.size() < 2) return std::nullopt;
  return r.pcs[1];
}

}  // namespace arcprof
