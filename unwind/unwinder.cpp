#include "unwind/unwinder.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <gelf.h>
#include <libelf.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <cstring>
#include <unordered_map>
#include <unordered_set>

#include "spaces/address_spaces.h"
#include "spaces/jit_code.h"

namespace arcprof {

const char* UnwindStopName(UnwindStop stop) {
  switch (stop) {
    case UnwindStop::kComplete: return "complete";
    case UnwindStop::kNoUnwindInfo: return "no unwind info";
    case UnwindStop::kStackCopyTooSmall: return "stack copy too small";
    case UnwindStop::kUnmappedMemory: return "unmapped memory";
    case UnwindStop::kMaxDepth: return "max depth";
    case UnwindStop::kNoProcess: return "no process";
    case UnwindStop::kJitFrame: return "jit frame";
  }
  return "unknown";
}

namespace {

// What the libdwfl callbacks see for the sample being unwound.
struct SampleState {
  const UnwindInput* input = nullptr;
  bool read_beyond_copy = false;
};

// .debug_frame in separate debug files, for binaries without .eh_frame: local
// files only. libdwfl's standard search ends with a debuginfod request when
// DEBUGINFOD_URLS is set, which would stall sample processing on the network;
// debuginfod runs in the background instead (symbolize/debuginfod.h).
int FindLocalDebuginfo(Dwfl_Module* mod, void** userdata, const char* modname, Dwarf_Addr base,
                       const char* file_name, const char* debuglink_file, GElf_Word debuglink_crc,
                       char** debuginfo_file_name) {
  const int fd = dwfl_build_id_find_debuginfo(mod, userdata, modname, base, file_name,
                                              debuglink_file, debuglink_crc, debuginfo_file_name);
  if (fd >= 0) return fd;
  const char* urls = getenv("DEBUGINFOD_URLS");
  if (urls && urls[0] != '\0') return -1;
  return dwfl_standard_find_debuginfo(mod, userdata, modname, base, file_name, debuglink_file,
                                      debuglink_crc, debuginfo_file_name);
}

const Dwfl_Callbacks kDwflCallbacks = {
    // Modules are reported with open fds; nothing has to be found by name.
    .find_elf = nullptr,
    .find_debuginfo = FindLocalDebuginfo,
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
  std::vector<uint8_t>* activation;
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
  // libdwfl says which frames resume at pc itself: the signal trampoline and
  // the frame the signal interrupted (and the leaf).
  auto push = [&] {
    walk->pcs->push_back(pc);
    if (activation && walk->pcs->size() > 1) {
      walk->activation->resize(walk->pcs->size(), 0);
      walk->activation->back() = 1;
    }
  };
  if (!walk->pcs->empty() && dwfl_addrmodule(walk->dwfl, lookup) == nullptr) {
    // A frame outside every reported file: JIT code or garbage. In dwarf mode
    // there are no unwind tables to continue with.
    if (!walk->fp_fallback) {
      walk->stopped_no_info = true;
      push();
      return DWARF_CB_ABORT;
    }
  }
  push();
  if (walk->pcs->size() >= walk->max_frames) return DWARF_CB_ABORT;
  return DWARF_CB_OK;
}

}  // namespace

// One process's address space as libdwfl knows it: the modules reported so far
// (by mapping start) and the key of the address-space state they were read from.
struct Unwinder::Space {
  Dwfl* dwfl = nullptr;
  uint64_t key = 0;
  uint64_t generation = 0;
  std::unordered_set<uint64_t> reported;  // mapping starts
  SampleState sample;
  bool attached = false;
  uint64_t last_used = 0;
  uint64_t walks = 0;  // libdwfl walks done with this Dwfl

  ~Space() {
    if (dwfl) dwfl_end(dwfl);
  }
};

Unwinder::Unwinder(AddressSpaces& spaces, JitCodeLookup& jit, size_t cfi_budget_bytes)
    : address_spaces_(spaces), jit_(jit), cfi_budget_(cfi_budget_bytes) {}
Unwinder::~Unwinder() = default;

void Unwinder::Prune() {
  if (address_spaces_.forget_epoch() == forget_epoch_) return;
  forget_epoch_ = address_spaces_.forget_epoch();
  std::erase_if(spaces_, [&](const auto& e) { return !address_spaces_.KnowsProcess(e.first); });
  // Rules cached by file id need no pruning: ids of closed files never come back.
  std::erase_if(cfi_, [&](const auto& e) {
    if (address_spaces_.FileOpen(e.first)) return false;
    cfi_bytes_ -= e.second->bytes;
    return true;
  });
}

size_t Unwinder::ReleaseIdleSpaces() {
  const size_t n = std::erase_if(spaces_, [&](const auto& e) { return e.second->last_used <= space_clock_at_release_; });
  space_clock_at_release_ = space_clock_;
  return n;
}

Unwinder::Space* Unwinder::SpaceFor(uint32_t pid, uint64_t t_ns) {
  auto files = address_spaces_.MappedFiles(pid, t_ns);
  if (!files || files->files.empty()) return nullptr;
  if (spaces_.size() >= kMaxSpaces && !spaces_.count(pid)) {
    auto lru = spaces_.begin();
    for (auto it = spaces_.begin(); it != spaces_.end(); ++it)
      if (it->second->last_used < lru->second->last_used) lru = it;
    spaces_.erase(lru);
  }
  auto& slot = spaces_[pid];
  // libdwfl's frame state grows with every walk and is only given back by
  // dwfl_end: a long-lived process's Dwfl is rebuilt now and then.
  if (slot && ++slot->walks > kWalksPerDwfl) slot.reset();
  if (slot) slot->last_used = ++space_clock_;
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
    slot->last_used = ++space_clock_;
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
  ++stats_.unwinds;
  Prune();
  if (auto fast = FastUnwind(input, fp_fallback, max_frames)) {
    ++stats_.fast_unwinds;
    return std::move(*fast);
  }
  UnwindResult result = DwflUnwind(input, fp_fallback, max_frames);
  EndAtUnreliableJit(input, &result);
  return result;
}

// One Elf and its .eh_frame CFI per file, shared by every process mapping it.
struct Unwinder::FileCfi {
  Elf* elf = nullptr;
  Dwarf_CFI* cfi = nullptr;
  // CFI rules already interpreted, by the exact pc. Not by the row range that
  // dwarf_frame_info reports: around DW_CFA_remember_state/restore_state
  // (gcc's epilogues in functions with several exits) elfutils 0.188 reports
  // ranges that span rows with other rules, e.g. [pop %rbp, jmp, ..., the
  // restored body) as one. Caching a rule over such a range unwound about 1%
  // of samples of sqlite3, python3 and cc1plus with a wrong CFA right above
  // the leaf (the garbage "return address" then counted as unmapped memory).
  std::unordered_map<uint64_t, Rule> rows;
  size_t bytes = 0;        // counted in Unwinder::cfi_bytes_
  uint64_t last_used = 0;  // Unwinder::cfi_clock_
  ~FileCfi() {
    if (cfi) dwarf_cfi_end(cfi);
    if (elf) elf_end(elf);
  }
};

namespace {

// What a file's CFI costs, estimated: the handles; the sections libelf
// reads, twice over (libdw interns every FDE it passes on the way to the
// one looked up, about as many bytes again as the section: measured with
// heaptrack on a whole-machine daemon, libdw's caches were 25 MB next to
// 16 MB of sections); and per row interpreted, the cached rule.
constexpr size_t kCfiFileBytes = 4096;
constexpr size_t kCfiSectionFactor = 2;
constexpr size_t kCfiRowBytes = 96;

// The bytes libelf reads for dwarf_getcfi_elf: .eh_frame and .eh_frame_hdr.
size_t EhFrameBytes(Elf* elf) {
  size_t shstrndx = 0;
  if (elf_getshdrstrndx(elf, &shstrndx) != 0) return 0;
  size_t bytes = 0;
  for (Elf_Scn* scn = elf_nextscn(elf, nullptr); scn; scn = elf_nextscn(elf, scn)) {
    GElf_Shdr shdr;
    if (!gelf_getshdr(scn, &shdr) || shdr.sh_type == SHT_NOBITS) continue;
    const char* name = elf_strptr(elf, shstrndx, shdr.sh_name);
    if (name && (std::strcmp(name, ".eh_frame") == 0 || std::strcmp(name, ".eh_frame_hdr") == 0))
      bytes += shdr.sh_size;
  }
  return bytes;
}

// Reads "register + offset" from a CFA expression (DW_OP_bregN / DW_OP_bregx)
// for the registers a walk tracks: rsp, rbp and rbx.
bool SimpleCfa(const Dwarf_Op* ops, size_t nops, uint8_t* reg, int32_t* off) {
  if (nops != 1) return false;
  uint64_t r;
  int64_t o;
  if (ops[0].atom >= DW_OP_breg0 && ops[0].atom <= DW_OP_breg31) {
    r = ops[0].atom - DW_OP_breg0;
    o = static_cast<int64_t>(ops[0].number);
  } else if (ops[0].atom == DW_OP_bregx) {
    r = ops[0].number;
    o = static_cast<int64_t>(ops[0].number2);
  } else {
    return false;
  }
  if ((r != 7 && r != 6 && r != 3) || o < INT32_MIN || o > INT32_MAX) return false;
  *reg = static_cast<uint8_t>(r);
  *off = static_cast<int32_t>(o);
  return true;
}

// "Saved at CFA + off": [DW_OP_call_frame_cfa] or [.., DW_OP_plus_uconst off].
bool SavedAtCfa(const Dwarf_Op* ops, size_t nops, int16_t* off) {
  if (nops < 1 || ops[0].atom != DW_OP_call_frame_cfa) return false;
  if (nops == 1) {
    *off = 0;
    return true;
  }
  if (nops == 2 && ops[1].atom == DW_OP_plus_uconst) {
    const auto o = static_cast<int64_t>(ops[1].number);
    if (o < INT16_MIN || o > INT16_MAX) return false;
    *off = static_cast<int16_t>(o);
    return true;
  }
  return false;
}

// "Saved at rsp + off" as a DW_CFA_expression gives it: libdw puts the CFA
// first, as DWARF evaluates such an expression, then [DW_OP_breg7 off].
bool SavedAtSp(const Dwarf_Op* ops, size_t nops, int16_t* off) {
  if (nops == 2 && ops[0].atom == DW_OP_call_frame_cfa) {
    ++ops;
    --nops;
  }
  if (nops != 1 || ops[0].atom != DW_OP_breg7) return false;
  const auto o = static_cast<int64_t>(ops[0].number);
  if (o < 0 || o > INT16_MAX) return false;
  *off = static_cast<int16_t>(o);
  return true;
}

// The CFA of a PLT stub as binutils' linkers describe it, for the stub's
// address: [DW_OP_breg7 A; DW_OP_breg16 0; DW_OP_lit15; DW_OP_and; DW_OP_litN;
// DW_OP_ge; DW_OP_lit3; DW_OP_shl; DW_OP_plus], i.e. rsp + A, plus 8 once the
// stub has pushed its relocation index (at byte N and after of each 16-byte
// entry). Mappings are page-aligned, so the address's low bits are rip's.
bool PltCfa(const Dwarf_Op* ops, size_t nops, uint64_t vaddr, int32_t* off) {
  if (nops != 9 || ops[0].atom != DW_OP_breg7 || ops[1].atom != DW_OP_breg16 || ops[1].number != 0 ||
      ops[2].atom != DW_OP_lit15 || ops[3].atom != DW_OP_and || ops[4].atom < DW_OP_lit0 ||
      ops[4].atom > DW_OP_lit15 || ops[5].atom != DW_OP_ge || ops[6].atom != DW_OP_lit3 ||
      ops[7].atom != DW_OP_shl || ops[8].atom != DW_OP_plus)
    return false;
  const auto a = static_cast<int64_t>(ops[0].number);
  if (a < 0 || a > 64) return false;
  const uint64_t pushed_from = ops[4].atom - DW_OP_lit0;
  *off = static_cast<int32_t>(a + ((vaddr & 15) >= pushed_from ? 8 : 0));
  return true;
}

// A signal trampoline's row (glibc's __restore_rt on x86-64): the CFA is
// the interrupted rsp, read from the signal frame ([DW_OP_breg7 off;
// DW_OP_deref]), and the interrupted rip and rbp are saved in the signal
// frame at rsp + offset. Other registers do not matter to the walk.
bool SignalRule(Dwarf_Frame* frame, Unwinder::Rule* rule) {
  Dwarf_Op* ops = nullptr;
  size_t nops = 0;
  if (dwarf_frame_cfa(frame, &ops, &nops) != 0 || nops != 2 || ops[0].atom != DW_OP_breg7 ||
      ops[1].atom != DW_OP_deref)
    return false;
  const auto cfa_off = static_cast<int64_t>(ops[0].number);
  if (cfa_off < 0 || cfa_off > INT32_MAX) return false;
  Dwarf_Op mem[3];
  if (dwarf_frame_register(frame, 16, mem, &ops, &nops) != 0 || !SavedAtSp(ops, nops, &rule->ra_off))
    return false;
  if (dwarf_frame_register(frame, 6, mem, &ops, &nops) != 0) return false;
  if (nops != 0) {
    if (!SavedAtSp(ops, nops, &rule->bp_off)) return false;
    rule->bp_saved = true;
  }
  rule->cfa_reg = 7;
  rule->cfa_off = static_cast<int32_t>(cfa_off);
  rule->kind = Unwinder::Rule::kSignal;
  return true;
}

}  // namespace

void Unwinder::EnforceCfiBudget(uint32_t keep) {
  while (cfi_bytes_ > cfi_budget_ && cfi_.size() > 1) {
    auto lru = cfi_.end();
    for (auto it = cfi_.begin(); it != cfi_.end(); ++it) {
      if (it->first == keep) continue;
      if (lru == cfi_.end() || it->second->last_used < lru->second->last_used) lru = it;
    }
    if (lru == cfi_.end()) return;
    cfi_bytes_ -= lru->second->bytes;
    cfi_.erase(lru);
    ++stats_.cfi_released;
    stats_.cfi_bytes = cfi_bytes_;
  }
}

Unwinder::Rule Unwinder::RuleAt(uint32_t file_id, int fd, uint64_t vaddr) {
  // The slot keeps the file id and the vaddr apart: a key of both folded
  // into 64 bits confused ids 2^20 apart (a daemon opens that many files
  // over weeks; the vDSO's id is near the top).
  const uint64_t h = (vaddr ^ file_id * 0x9e3779b97f4a7c15ull) * 0xff51afd7ed558ccdull;
  RuleSlot& slot = rules_[h >> 48 & (rules_.size() - 1)];
  if (slot.used && slot.vaddr == vaddr && slot.file_id == file_id) return slot.rule;
  Rule rule;
  auto& file = cfi_[file_id];
  if (!file) {
    file = std::make_unique<FileCfi>();
    // ELF_C_READ: libelf reads the sections asked for (.eh_frame and its
    // header) into memory instead of mapping the whole file.
    file->elf = elf_begin(fd, ELF_C_READ, nullptr);
    if (file->elf) file->cfi = dwarf_getcfi_elf(file->elf);
    file->bytes = kCfiFileBytes + (file->elf ? kCfiSectionFactor * EhFrameBytes(file->elf) : 0);
    cfi_bytes_ += file->bytes;
  }
  file->last_used = ++cfi_clock_;
  if (auto row = file->rows.find(vaddr); row != file->rows.end()) {
    slot = RuleSlot{vaddr, file_id, true, row->second};
    return slot.rule;
  }
  Dwarf_Frame* frame = nullptr;
  if (file->cfi && dwarf_cfi_addrframe(file->cfi, vaddr, &frame) == 0) {
    ++stats_.rules_computed;
    rule.kind = Rule::kComplex;
    bool signal = false;
    Dwarf_Addr start = vaddr, end = vaddr + 1;
    const int ra_reg = dwarf_frame_info(frame, &start, &end, &signal);
    Dwarf_Op* ops = nullptr;
    size_t nops = 0;
    Dwarf_Op mem[3];
    if (signal) {
      if (ra_reg != 16 || !SignalRule(frame, &rule)) rule = Rule{Rule::kComplex};
    } else if (ra_reg == 16 && dwarf_frame_cfa(frame, &ops, &nops) == 0 &&
               (SimpleCfa(ops, nops, &rule.cfa_reg, &rule.cfa_off) || PltCfa(ops, nops, vaddr, &rule.cfa_off)) &&
               dwarf_frame_register(frame, 16, mem, &ops, &nops) == 0) {
      if (nops == 0 && ops == mem) {
        rule.kind = Rule::kOutermost;  // the return address is undefined: _start, clone3
      } else if (SavedAtCfa(ops, nops, &rule.ra_off) &&
                 dwarf_frame_register(frame, 6, mem, &ops, &nops) == 0) {
        if (nops == 0) {
          rule.kind = ops == nullptr ? Rule::kStep : Rule::kComplex;  // rbp unchanged
        } else if (SavedAtCfa(ops, nops, &rule.bp_off)) {
          rule.bp_saved = true;
          rule.kind = Rule::kStep;
        }
      }
      // rbx matters only to a caller whose CFA is kept in it.
      if (rule.kind == Rule::kStep) {
        if (dwarf_frame_register(frame, 3, mem, &ops, &nops) != 0) {
          rule.bx = Rule::kBxLost;
        } else if (nops == 0) {
          rule.bx = ops == nullptr ? Rule::kBxSame : Rule::kBxLost;
        } else {
          rule.bx = SavedAtCfa(ops, nops, &rule.bx_off) ? Rule::kBxSaved : Rule::kBxLost;
        }
      }
    }
    free(frame);
    file->rows.emplace(vaddr, rule);
    file->bytes += kCfiRowBytes;
    cfi_bytes_ += kCfiRowBytes;
    stats_.cfi_bytes = cfi_bytes_;
    if (cfi_bytes_ > cfi_budget_) {
      slot = RuleSlot{vaddr, file_id, true, rule};
      EnforceCfiBudget(file_id);  // may drop other files' CFI, never this one
      return rule;
    }
  }
  slot = RuleSlot{vaddr, file_id, true, rule};
  return rule;
}

std::optional<UnwindResult> Unwinder::FastUnwind(const UnwindInput& input, bool fp_fallback,
                                                 size_t max_frames) {
  UnwindResult result;
  uint64_t pc = input.regs[16], sp = input.regs[7], bp = input.regs[6], bx = input.regs[3];
  // Whether bx is this frame's rbx: lost after a frame without CFI (JIT,
  // frame pointers), a signal frame or CFI that says it is undefined.
  bool bx_known = true;
  const uint64_t stack_lo = input.regs[7];
  auto read = [&](uint64_t addr, uint64_t* out) -> bool {
    if (addr < stack_lo || addr - stack_lo + 8 > input.stack_len) return false;
    memcpy(out, input.stack + (addr - stack_lo), 8);
    return true;
  };
  // The rules of this walk's return addresses, by address: a deep recursion
  // returns to a few call sites thousands of times, and the mapping lookup
  // and rule cache cost more than the step itself.
  struct Memo {
    uint64_t lookup = 0;
    Rule rule;
  };
  std::array<Memo, 16> memo{};
  // The leaf, and a frame a signal interrupted, resume at pc itself; every
  // other frame at a return address.
  bool resumes = true;
  auto mark_activation = [&result] {
    result.activation.resize(result.pcs.size(), 0);
    result.activation.back() = 1;
  };
  while (true) {
    result.pcs.push_back(pc);
    if (result.pcs.size() >= max_frames) {
      result.stop = UnwindStop::kMaxDepth;
      return result;
    }
    const bool exact = resumes;
    if (exact && result.pcs.size() > 1) mark_activation();
    resumes = false;
    // Return addresses point after the call: look up the call itself.
    const uint64_t lookup = exact ? pc : pc - 1;
    Memo& memo_slot = memo[(lookup ^ lookup >> 4) & (memo.size() - 1)];
    bool file = false;  // a known file maps the pc
    Rule rule;
    if (memo_slot.lookup == lookup && lookup != 0) {
      file = true;
      rule = memo_slot.rule;
    } else if (auto mapped = address_spaces_.FindMappedFile(input.pid, lookup, input.t_ns)) {
      file = true;
      rule = RuleAt(mapped->file_id, mapped->fd, lookup - mapped->load_bias);
      if (rule.kind == Rule::kComplex) return std::nullopt;
      if (rule.kind == Rule::kStep) memo_slot = Memo{lookup, rule};
    }
    if (rule.kind == Rule::kOutermost) {
      result.stop = UnwindStop::kComplete;
      return result;
    }
    if (rule.kind == Rule::kSignal) {
      // The signal trampoline, which the handler returns to at its first
      // byte: the registers the signal interrupted are in the kernel's
      // signal frame right above sp, and that frame resumes at its rip.
      if (result.pcs.size() > 1) mark_activation();
      uint64_t next_sp, next_pc;
      if (!read(sp + static_cast<uint64_t>(rule.cfa_off), &next_sp) ||
          !read(sp + static_cast<uint64_t>(rule.ra_off), &next_pc) ||
          (rule.bp_saved && !read(sp + static_cast<uint64_t>(rule.bp_off), &bp))) {
        result.stop = UnwindStop::kStackCopyTooSmall;
        return result;
      }
      if (next_pc == 0) {
        result.stop = UnwindStop::kComplete;
        return result;
      }
      if (next_sp <= sp) {
        // On another stack (the handler ran on sigaltstack): not in the copy.
        result.stop = UnwindStop::kStackCopyTooSmall;
        return result;
      }
      sp = next_sp;
      pc = next_pc;
      resumes = true;
      bx_known = false;
      continue;
    }
    uint64_t ra, cfa;
    if (!file && rule.kind == Rule::kNoInfo) {
      uint64_t method = 0;
      const JitStep step = StepJit(input, exact, pc, &sp, &bp, &ra, &method);
      if (step == JitStep::kStop) {
        result.stop = UnwindStop::kJitFrame;
        return result;
      }
      if (method != 0) {
        result.methods.resize(result.pcs.size(), 0);
        result.methods.back() = method;
      }
      if (step == JitStep::kStepped) {
        bx_known = false;
        if (ra == 0) {
          result.stop = UnwindStop::kComplete;
          return result;
        }
        pc = ra;
        continue;
      }
    }
    if (rule.kind == Rule::kStep) {
      if (rule.cfa_reg == 3 && !bx_known) return std::nullopt;
      cfa = (rule.cfa_reg == 7 ? sp : rule.cfa_reg == 6 ? bp : bx) + static_cast<int64_t>(rule.cfa_off);
      if (!read(cfa + static_cast<int64_t>(rule.ra_off), &ra)) {
        result.stop = UnwindStop::kStackCopyTooSmall;
        return result;
      }
      if (rule.bp_saved) {
        // In an epilogue gcc's CFI still says "rbp saved at CFA-16" after
        // `pop %rbp` (or `leave`): the slot is then below the stack pointer,
        // the caller's rbp is already back in rbp, and the slot may hold
        // anything. Only a slot at or above sp is the saved value.
        const uint64_t slot = cfa + static_cast<int64_t>(rule.bp_off);
        if (slot >= sp && !read(slot, &bp)) {
          result.stop = UnwindStop::kStackCopyTooSmall;
          return result;
        }
      }
      if (rule.bx == Rule::kBxSaved) {
        // As for rbp: a slot below sp is an epilogue's stale claim.
        const uint64_t slot = cfa + static_cast<int64_t>(rule.bx_off);
        if (slot >= sp && !read(slot, &bx)) bx_known = false;
      } else if (rule.bx == Rule::kBxLost) {
        bx_known = false;
      }
      sp = cfa;
    } else {
      // No unwind table here (JIT code, or outside every file): hybrid steps
      // through the frame pointer, dwarf stops.
      if (!fp_fallback) {
        result.stop = file ? UnwindStop::kNoUnwindInfo : UnwindStop::kUnmappedMemory;
        return result;
      }
      uint64_t next_bp;
      bx_known = false;
      if (bp == 0 || bp < sp || !read(bp + 8, &ra) || !read(bp, &next_bp)) {
        result.stop = bp == 0 ? UnwindStop::kComplete
                              : (file ? UnwindStop::kNoUnwindInfo : UnwindStop::kUnmappedMemory);
        return result;
      }
      sp = bp + 16;
      bp = next_bp;
    }
    if (ra == 0) {
      result.stop = UnwindStop::kComplete;
      return result;
    }
    if (sp <= stack_lo && result.pcs.size() > 1) {
      result.stop = UnwindStop::kUnmappedMemory;  // not moving up the stack: garbage
      return result;
    }
    pc = ra;
  }
}

UnwindResult Unwinder::DwflUnwind(const UnwindInput& input, bool fp_fallback, size_t max_frames) {
  UnwindResult result;
  Space* space = SpaceFor(input.pid, input.t_ns);
  if (!space) {
    result.pcs.push_back(input.regs[16]);
    result.stop = UnwindStop::kNoProcess;
    return result;
  }
  space->sample.input = &input;
  space->sample.read_beyond_copy = false;
  WalkState walk{&result.pcs, &result.activation, max_frames, fp_fallback, space->dwfl};
  const int rc = dwfl_getthread_frames(space->dwfl, static_cast<pid_t>(input.tid), OnFrame, &walk);
  space->sample.input = nullptr;
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
    const uint64_t lookup = result.LookupPc(result.pcs.size() - 1);
    result.stop = dwfl_addrmodule(space->dwfl, lookup) == nullptr ? UnwindStop::kUnmappedMemory
                                                                  : UnwindStop::kNoUnwindInfo;
  }
  return result;
}

// The copied stack and the code of the walk's process, for a runtime's
// FrameStepper.
class Unwinder::StepContext : public FrameStepContext {
 public:
  StepContext(Unwinder& unwinder, const UnwindInput& input)
      : FrameStepContext(input.stack, input.regs[7], input.stack_len, unwinder.stats_),
        unwinder_(unwinder),
        input_(input) {}
  // A return address must be in code we know: a mapped file or JIT code.
  bool IsCode(uint64_t addr) const override {
    return addr != 0 && (unwinder_.address_spaces_.FindMappedFile(input_.pid, addr - 1, input_.t_ns) ||
                         unwinder_.jit_.FindJitCode(input_.pid, addr - 1, input_.t_ns));
  }

 private:
  Unwinder& unwinder_;
  const UnwindInput& input_;
};

void Unwinder::SetFrameSteppers(std::vector<std::unique_ptr<FrameStepper>> steppers) {
  steppers_ = std::move(steppers);
}

Unwinder::JitStep Unwinder::StepJit(const UnwindInput& input, bool leaf, uint64_t pc, uint64_t* sp, uint64_t* bp,
                                    uint64_t* ra, uint64_t* method) {
  const uint64_t lookup = leaf ? pc : pc - 1;
  std::optional<JitSymbol> code = jit_.FindJitCode(input.pid, lookup, input.t_ns);
  if (!code) return JitStep::kNotJit;
  if (!steppers_.empty()) {
    const StepContext context(*this, input);
    for (const auto& stepper : steppers_) {
      FrameStepper::Frame frame{*sp, *bp, 0, 0};
      switch (stepper->StepFrame(context, *code, leaf, lookup, &frame)) {
        case FrameStepper::Step::kNotMine: continue;
        case FrameStepper::Step::kStop: return JitStep::kStop;
        case FrameStepper::Step::kStepped:
          *sp = frame.sp;
          *bp = frame.bp;
          *ra = frame.ra;
          *method = frame.method;
          return JitStep::kStepped;
      }
    }
  }
  // No runtime stepped it: code whose rbp is no frame pointer ends the walk,
  // other code is stepped through rbp.
  return code->rbp_unreliable ? JitStep::kStop : JitStep::kNotJit;
}

void Unwinder::EndAtUnreliableJit(const UnwindInput& input, UnwindResult* result) {
  for (size_t i = 0; i + 1 < result->pcs.size(); ++i) {
    const uint64_t lookup = result->LookupPc(i);
    if (address_spaces_.FindMappedFile(input.pid, lookup, input.t_ns)) continue;
    std::optional<JitSymbol> code = jit_.FindJitCode(input.pid, lookup, input.t_ns);
    if (code && (code->rbp_unreliable || std::any_of(steppers_.begin(), steppers_.end(), [&](const auto& stepper) {
                   return stepper->EndsFramePointerWalk(*code);
                 }))) {
      result->pcs.resize(i + 1);
      if (result->activation.size() > i + 1) result->activation.resize(i + 1);
      result->stop = UnwindStop::kJitFrame;
      return;
    }
  }
}

std::optional<Unwinder::Caller> Unwinder::LeafCaller(const UnwindInput& input) {
  UnwindResult r = Unwind(input, /*fp_fallback=*/false, 3);
  if (r.pcs.size() < 2) return std::nullopt;
  return Caller{r.pcs[1], r.IsActivation(1)};
}

}  // namespace arcprof
