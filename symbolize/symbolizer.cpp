#include "symbolize/symbolizer.h"

#include <dirent.h>
#include <malloc.h>
#include <sys/stat.h>
#include <sys/mman.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <spdlog/spdlog.h>

#include "symbolize/elf_resolver.h"
#include "symbolize/jit_resolver.h"
#include "symbolize/kernel_resolver.h"
#include "symbolize/module_cache.h"
#include "symbolize/name_pool.h"
#include "symbolize/proc_parse.h"
#include "symbolize/process_registry.h"
#include "symbolize/timeline.h"
#include "symbolize/vdso_resolver.h"

namespace arcprof {
namespace {

constexpr std::string_view kUnknownModule = "[unknown]";

// What kind of code a mapping holds, from the name the kernel gives it. The
// anonymous names follow perf's (see docs/symbolization.md), plus named
// anonymous memory and memfd, which perf leaves alone but which are JIT code
// all the same.
MappingKind ClassifyMapping(std::string_view path) {
  if (path == kVdsoModule) return MappingKind::kVdso;
  if (path.empty() || path == "//anon" || path.starts_with("[anon:") || path.starts_with("/memfd:") ||
      path.starts_with("/dev/zero") || path.starts_with("/anon_hugepage") ||
      path.starts_with("/SYSV") || path.starts_with("["))
    return MappingKind::kAnonExec;
  if (path.front() != '/') return MappingKind::kAnonExec;
  return MappingKind::kFile;
}

uint64_t FileCacheSlot(uint32_t file_id, uint64_t offset, uint32_t bits) {
  uint64_t h = (offset ^ (uint64_t{file_id} * 0x9e3779b97f4a7c15ULL)) * 0xff51afd7ed558ccdULL;
  return h >> (64 - bits);
}

uint64_t CacheSlot(uint32_t pid, uint64_t addr, size_t bits) {
  uint64_t h = (addr ^ (uint64_t{pid} * 0x9e3779b97f4a7c15ULL)) * 0xff51afd7ed558ccdULL;
  return h >> (64 - bits);
}

DebugSearchOptions DebugOptions(const SymbolizerOptions& options) {
  DebugSearchOptions debug;
  debug.debug_dirs = options.debug_dirs;
  debug.verify_debuglink_crc = options.verify_debuglink_crc;
  debug.debuginfod = options.debuginfod;
  return debug;
}

}  // namespace

// The symbolizer composes a process registry (names, owners, threads), the
// mapping timeline (address spaces over time), the module cache (open ELF
// files) and one resolver per source of names; it routes each address to the
// resolver of the mapping's kind and caches user answers.
struct Symbolizer::Impl {
  struct UserCacheEntry {
    uint64_t addr = 0;
    uint64_t valid_from = 0;
    uint64_t valid_until = 0;  // 0: empty slot
    const TimelineProcess* process = nullptr;  // nullptr: cached "no process"
    uint64_t version = 0;
    uint32_t pid = 0;
    uint32_t epoch = 0;  // Impl::cache_epoch when filled (in pid's padding)
    SymbolizedFrame frame;
  };

  explicit Impl(SymbolizerOptions opts)
      : options(std::move(opts)),
        registry(options.proc_root),
        modules(options.proc_root, options.symbol_budget_bytes),
        elf(DebugOptions(options), names),
        kernel(options.kallsyms_path),
        jit(names),
        user_cache_bits(std::clamp<uint32_t>(options.answer_cache_bits, 8, 20)),
        user_cache(size_t{1} << user_cache_bits),
        file_cache_bits(std::max<uint32_t>(8, user_cache_bits - 3)),
        file_cache(size_t{1} << file_cache_bits) {}

  SymbolizerOptions options;
  SymbolizerStats stats;
  NamePool names;  // before the resolvers that hand them out
  ProcessRegistry registry;
  Timeline timeline;
  ModuleCache modules;
  ElfResolver elf;
  VdsoResolver vdso;
  KernelResolver kernel;
  JitResolver jit;
  uint32_t user_cache_bits;
  std::vector<UserCacheEntry> user_cache;
  // Named native answers by (file id, file offset). File ids are never
  // reused, so only a release of the name pool (names_epoch) drops them.
  struct FileCacheEntry {
    uint64_t offset = 0;
    uint64_t vaddr = 0;
    uint64_t address = 0;
    std::string_view symbol;
    uint32_t file_id = 0;
    uint32_t epoch = 0;  // names_epoch when filled; 0: empty
  };
  uint32_t file_cache_bits;  // an eighth of the answer cache's slots
  std::vector<FileCacheEntry> file_cache;
  std::vector<std::pair<const void*, Symbolizer::MappingObserver>> mapping_observers;  // by owner
  std::map<std::string, std::string, std::less<>> build_ids;  // module -> build-id, kept after files close
  uint64_t next_forget_ns = 0;
  uint64_t next_liveness_ns = 0;
  uint64_t next_trim_ns = 0;
  uint64_t forget_epoch = 0;
  // Bumped to drop every cached user answer at once (cheaper than touching
  // the 64 Ki slots: a forget pass runs every 5 s under churn).
  uint32_t cache_epoch = 1;
  uint32_t names_epoch = 1;

  // Every second of event time: forget processes that exited long enough ago.
  void MaybeForget(uint64_t t_ns) {
    if (t_ns < next_forget_ns) return;
    // Every 5 s: each pass walks every remembered process (and, when one was
    // forgotten, every mapping); once a second it was 6% of a whole-machine
    // daemon's own CPU on a busy build machine.
    next_forget_ns = t_ns + 5'000'000'000;
    Forget(t_ns);
  }

  void Forget(uint64_t t_ns) {
    std::vector<uint32_t> gone;
    // An exit whose event was lost (side-band overflow) is found by looking
    // at /proc now and then.
    if (next_liveness_ns == 0) next_liveness_ns = t_ns + 30'000'000'000;
    const bool check_alive = t_ns >= next_liveness_ns;
    if (check_alive) next_liveness_ns = t_ns + 30'000'000'000;
    size_t jit_released = 0;
    timeline.ForEachProcess([&](const TimelineProcess& p) {
      if (p.exited) {
        if (p.exit_ns + options.exited_jit_retention_ns <= t_ns) jit_released += jit.Release(p.pid);
        if (p.exit_ns + options.exited_retention_ns <= t_ns) gone.push_back(p.pid);
      } else if (check_alive) {
        struct stat st;
        if (stat(registry.ProcPath(p.pid, "").c_str(), &st) != 0 && errno == ENOENT)
          gone.push_back(p.pid);  // gone without an exit event: forget it the next time round
      }
    });
    size_t forgotten = 0;
    for (uint32_t pid : gone) {
      TimelineProcess* p = timeline.Find(pid);
      if (!p->exited) {
        timeline.Exit(pid, t_ns);
        continue;
      }
      timeline.Remove(pid);
      registry.Remove(pid);
      jit.Forget(pid);
      ++forgotten;
    }
    if (jit_released > 0) spdlog::debug("symbolizer: let go of {} JIT sources of exited processes", jit_released);
    if (forgotten == 0) return;
    stats.processes_forgotten += forgotten;
    std::unordered_set<uint32_t> live;
    timeline.ForEachProcess([&](const TimelineProcess& p) {
      for (const AddressSpaceGeneration& gen : p.generations)
        for (const TimelineMapping& m : gen.mappings)
          if (m.kind == MappingKind::kFile) live.insert(m.file_id);
    });
    const size_t closed = modules.CloseAllBut(live);
    stats.files_closed += closed;
    // Symbol tables and CFI of closed files are large, short-lived blocks:
    // give the freed pages back so that RSS follows what is held, not what
    // was held at the peak of the churn. At most every 30 s: under process
    // churn files close on almost every pass, and each trim's pages were
    // faulted back in by the next allocations (page faults and madvise were
    // ~10% of a whole-machine daemon's CPU; a daemon trims at every window
    // close too).
    if (closed > 0 && t_ns >= next_trim_ns) {
      next_trim_ns = t_ns + 30'000'000'000;
      malloc_trim(0);
    }
    spdlog::debug("symbolizer: forgot {} processes; {} remembered, {} registry records, {} open files, {} names, {} jit sources",
                  forgotten, timeline.size(), registry.size(), modules.open_files(), names.size(), jit.size());
    // Cached answers point at removed processes.
    ++cache_epoch;
    ++forget_epoch;
  }

  void AddMapping(uint32_t pid, uint64_t t_ns, const MappingEvent& m, bool dedupe) {
    // perf reports only executable mappings unless asked for data ones; prot 0
    // means the producer did not say.
    if (m.prot != 0 && !(m.prot & PROT_EXEC)) return;
    if (m.len == 0 || m.start + m.len < m.start) return;
    const std::string path(procfs::StripDeletedSuffix(m.path, nullptr));
    TimelineMapping mapping;
    mapping.start = m.start;
    mapping.end = m.start + m.len;
    mapping.pgoff = m.pgoff;
    mapping.kind = ClassifyMapping(path);
    switch (mapping.kind) {
      case MappingKind::kFile:
        mapping.module = modules.Intern(path);
        mapping.file_id = modules.FileFor(pid, m, path);
        // Looked up before inserting: every exec maps the same few files, and
        // emplace built two strings per mmap event to find them present.
        if (const ElfFile* file = modules.Get(mapping.file_id);
            file && !file->build_id().empty() && build_ids.find(mapping.module) == build_ids.end())
          build_ids.emplace(std::string(mapping.module), file->build_id());
        break;
      case MappingKind::kVdso:
        mapping.module = kVdsoModule;
        mapping.file_id = VdsoResolver::kFileId;
        break;
      case MappingKind::kAnonExec:
        mapping.module = kJitModule;
        break;
    }
    timeline.AddMapping(pid, t_ns, mapping, dedupe);
  }

  void Snapshot(uint32_t pid, uint64_t t_ns) {
    std::optional<std::string> maps = registry.Snapshot(pid);
    if (!maps) return;
    timeline.GetOrCreate(pid);
    for (const procfs::MapsEntry& entry : procfs::ParseMaps(*maps)) {
      if (!(entry.prot & procfs::kProtExec)) continue;
      MappingEvent m;
      m.start = entry.start;
      m.len = entry.end - entry.start;
      m.pgoff = entry.pgoff;
      m.prot = PROT_EXEC | (entry.prot & procfs::kProtRead ? PROT_READ : 0);
      m.maj = entry.dev_major;
      m.min = entry.dev_minor;
      m.ino = entry.inode;
      m.path = entry.path;
      AddMapping(pid, t_ns, m, /*dedupe=*/true);
    }
  }

  void EnsureKnown(uint32_t pid, uint64_t t_ns) {
    if (!timeline.Find(pid) && !registry.SnapshotAttempted(pid)) Snapshot(pid, t_ns);
  }

  SymbolizedFrame ResolveMapping(uint32_t pid, const TimelineMapping* m, uint64_t addr,
                                 uint64_t t_ns, bool* cacheable) {
    if (!m) {
      SymbolizedFrame frame;
      frame.offset = addr;
      frame.module = kUnknownModule;
      frame.reason = UnknownReason::kUnmapped;
      return frame;
    }
    switch (m->kind) {
      case MappingKind::kFile: {
        ElfFile* file = modules.Get(m->file_id);
        const bool was_loaded = file && file->symbols_loaded();
        // Named answers by (file, offset), shared by every process mapping
        // the file: a new process (hundreds a second under churn) misses
        // the per-process cache on every frame of its first samples.
        const uint64_t file_offset = addr - m->start + m->pgoff;
        FileCacheEntry& cached = file_cache[FileCacheSlot(m->file_id, file_offset, file_cache_bits)];
        if (cached.epoch == names_epoch && cached.file_id == m->file_id && cached.offset == file_offset) {
          ++stats.file_cache_hits;
          if (file) modules.NoteSymbolsUsed(m->file_id, was_loaded);
          SymbolizedFrame frame;
          frame.module = m->module;
          frame.kind = FrameKind::kNative;
          frame.symbol = cached.symbol;
          frame.address = cached.address;
          frame.offset = cached.vaddr;
          return frame;
        }
        SymbolizedFrame frame = elf.Resolve(file, *m, addr);
        if (file) modules.NoteSymbolsUsed(m->file_id, was_loaded);
        if (!frame.symbol.empty() && frame.reason == UnknownReason::kNone && frame.inlined == nullptr &&
            frame.kind == FrameKind::kNative) {
          cached = FileCacheEntry{file_offset, frame.offset, frame.address, frame.symbol, m->file_id, names_epoch};
        }
        return frame;
      }
      case MappingKind::kVdso:
        return vdso.Resolve(elf, *m, addr);
      case MappingKind::kAnonExec:
        break;
    }
    return jit.Resolve(registry.Get(pid).info, addr, t_ns, cacheable);
  }

  // The vDSO is described like a file: its image has a descriptor (a memfd)
  // and the unwinder steps through it with its own .eh_frame.
  std::optional<MappedFile> Describe(const TimelineMapping& m) {
    const ElfFile* file = m.kind == MappingKind::kFile   ? modules.Get(m.file_id)
                          : m.kind == MappingKind::kVdso ? vdso.Image()
                                                         : nullptr;
    if (!file) return std::nullopt;
    const uint64_t vaddr = file->OffsetToVaddr(m.pgoff).value_or(m.pgoff);
    return MappedFile{file->fd(), m.module, file->build_id(), m.start, m.end, m.pgoff,
                      m.start - vaddr, m.file_id};
  }
};

Symbolizer::Symbolizer(SymbolizerOptions options)
    : impl_(std::make_unique<Impl>(std::move(options))) {}

Symbolizer::~Symbolizer() = default;

void Symbolizer::SnapshotAllProcesses(uint64_t t_ns) {
  DIR* dir = opendir(impl_->options.proc_root.c_str());
  if (!dir) {
    spdlog::warn("cannot list {}: {}; processes will be learned from events only",
                 impl_->options.proc_root, std::strerror(errno));
    return;
  }
  std::vector<uint32_t> pids;
  while (dirent* entry = readdir(dir)) {
    char* end = nullptr;
    unsigned long pid = std::strtoul(entry->d_name, &end, 10);
    if (end != entry->d_name && *end == '\0' && pid > 0) pids.push_back(static_cast<uint32_t>(pid));
  }
  closedir(dir);
  for (uint32_t pid : pids) impl_->Snapshot(pid, t_ns);
  spdlog::debug("symbolizer: snapshot of {} processes, {} files open", pids.size(),
                impl_->modules.open_files());
}

void Symbolizer::SnapshotProcess(uint32_t pid, uint64_t t_ns) { impl_->Snapshot(pid, t_ns); }

void Symbolizer::OnMmap(uint32_t pid, uint64_t t_ns, const MappingEvent& mapping) {
  impl_->MaybeForget(t_ns);
  impl_->EnsureKnown(pid, t_ns);
  impl_->AddMapping(pid, t_ns, mapping, /*dedupe=*/false);
  for (auto& [owner, observer] : impl_->mapping_observers) observer(pid, mapping);
}

void Symbolizer::OnExec(uint32_t pid, uint64_t t_ns, std::string_view comm, bool exited) {
  impl_->MaybeForget(t_ns);
  impl_->timeline.Exec(pid, t_ns);
  impl_->registry.OnExec(pid, comm, exited);
  impl_->jit.Forget(pid);
}

void Symbolizer::OnComm(uint32_t pid, uint32_t tid, uint64_t, std::string_view comm) {
  impl_->registry.OnComm(pid, tid, comm);
}

void Symbolizer::OnFork(uint32_t parent_pid, uint32_t child_pid, uint64_t t_ns) {
  if (parent_pid == child_pid) return;  // a new thread, not a new address space
  impl_->MaybeForget(t_ns);
  impl_->EnsureKnown(parent_pid, t_ns);
  impl_->registry.MarkSnapshotAttempted(child_pid);
  impl_->timeline.Fork(parent_pid, child_pid, t_ns);
  impl_->registry.OnFork(parent_pid, child_pid);
  impl_->jit.Forget(child_pid);
}

void Symbolizer::OnExit(uint32_t pid, uint64_t t_ns) {
  impl_->MaybeForget(t_ns);
  impl_->timeline.Exit(pid, t_ns);
}

void Symbolizer::ForgetExited(uint64_t t_ns) { impl_->Forget(t_ns); }

uint64_t Symbolizer::forget_epoch() const { return impl_->forget_epoch; }

bool Symbolizer::KnowsProcess(uint32_t pid) const { return impl_->timeline.Find(pid) != nullptr; }

bool Symbolizer::ProcessExited(uint32_t pid) const {
  const TimelineProcess* p = impl_->timeline.Find(pid);
  return p != nullptr && p->exited;
}

bool Symbolizer::FileOpen(uint32_t file_id) const {
  if (file_id == VdsoResolver::kFileId) return impl_->vdso.loaded();
  return impl_->modules.Get(file_id) != nullptr;
}

const ProcessInfo* Symbolizer::Process(uint32_t pid) const {
  const ProcessRegistry::Record* record = impl_->registry.Find(pid);
  return record && record->seen ? &record->info : nullptr;
}

std::string_view Symbolizer::ThreadName(uint32_t pid, uint32_t tid) const {
  return impl_->registry.ThreadName(pid, tid);
}

SymbolizedFrame Symbolizer::ResolveUser(uint32_t pid, uint64_t addr, uint64_t t_ns) {
  Impl& impl = *impl_;
  ++impl.stats.lookups;
  Impl::UserCacheEntry& slot = impl.user_cache[CacheSlot(pid, addr, impl.user_cache_bits)];
  if (slot.valid_until != 0 && slot.epoch == impl.cache_epoch && slot.addr == addr && slot.pid == pid &&
      t_ns >= slot.valid_from &&
      t_ns < slot.valid_until &&
      (slot.process ? slot.process->version == slot.version
                    : impl.timeline.creations() == slot.version)) {
    ++impl.stats.cache_hits;
    return slot.frame;
  }

  impl.EnsureKnown(pid, t_ns);
  const TimelineProcess* process = impl.timeline.Find(pid);
  SymbolizedFrame frame;
  Timeline::Hit hit;
  bool cacheable = true;
  if (!process) {
    frame.module = kUnknownModule;
    frame.reason = UnknownReason::kNoProcess;
    frame.offset = addr;
  } else {
    hit = Timeline::Lookup(*process, addr, t_ns);
    frame = impl.ResolveMapping(pid, hit.mapping, addr, t_ns, &cacheable);
  }
  if (cacheable && hit.valid_until > hit.valid_from) {
    slot.addr = addr;
    slot.pid = pid;
    slot.valid_from = hit.valid_from;
    slot.valid_until = hit.valid_until;
    slot.epoch = impl.cache_epoch;
    slot.process = process;
    slot.version = process ? process->version : impl.timeline.creations();
    slot.frame = frame;
  }
  return frame;
}

SymbolizedFrame Symbolizer::ResolveKernel(uint64_t addr) {
  ++impl_->stats.lookups;
  bool cache_hit = false;
  SymbolizedFrame frame = impl_->kernel.Resolve(addr, &cache_hit);
  if (cache_hit) ++impl_->stats.cache_hits;
  return frame;
}

std::optional<MappedFile> Symbolizer::FindMappedFile(uint32_t pid, uint64_t addr, uint64_t t_ns) {
  impl_->EnsureKnown(pid, t_ns);
  const TimelineProcess* process = impl_->timeline.Find(pid);
  if (!process) return std::nullopt;
  const TimelineMapping* m = Timeline::Lookup(*process, addr, t_ns).mapping;
  if (!m) return std::nullopt;
  return impl_->Describe(*m);
}

std::optional<AddressSpaceFiles> Symbolizer::MappedFiles(uint32_t pid,
                                                                     uint64_t t_ns) {
  impl_->EnsureKnown(pid, t_ns);
  const TimelineProcess* process = impl_->timeline.Find(pid);
  if (!process || process->generations.empty()) return std::nullopt;
  const size_t gi = Timeline::LiveGeneration(*process, t_ns);
  AddressSpaceFiles out;
  out.generation = gi;
  // pid, generation and version together name one state of the address space.
  out.key = (static_cast<uint64_t>(pid) << 40) ^ (static_cast<uint64_t>(gi) << 32) ^
            (process->version * 0x9e3779b97f4a7c15ull);
  for (const TimelineMapping& m : process->generations[gi].mappings) {
    // Mappings added after t_ns are included too: the key must not depend on
    // t_ns, and unwinding only asks about addresses the sample touched.
    if (auto file = impl_->Describe(m)) out.files.push_back(*file);
  }
  return out;
}

uint64_t Symbolizer::ProcessVersion(uint32_t pid) const {
  const TimelineProcess* process = impl_->timeline.Find(pid);
  return process ? process->version + 1 : 0;
}

std::map<std::string, std::string> Symbolizer::ModuleBuildIds() const {
  return {impl_->build_ids.begin(), impl_->build_ids.end()};
}

std::optional<JitSymbol> Symbolizer::FindJitCode(uint32_t pid, uint64_t addr, uint64_t t_ns) {
  Impl& impl = *impl_;
  impl.EnsureKnown(pid, t_ns);
  const TimelineProcess* process = impl.timeline.Find(pid);
  if (!process) return std::nullopt;
  const Timeline::Hit hit = Timeline::Lookup(*process, addr, t_ns);
  if (!hit.mapping || hit.mapping->kind != MappingKind::kAnonExec) return std::nullopt;
  return impl.jit.Find(impl.registry.Get(pid).info, addr, t_ns);
}

std::optional<std::string_view> Symbolizer::JavaMethodName(uint32_t pid, uint64_t method, uint64_t t_ns) {
  Impl& impl = *impl_;
  if (!impl.timeline.Find(pid)) return std::nullopt;
  return impl.jit.MethodName(impl.registry.Get(pid).info, method, t_ns);
}

void Symbolizer::SetJitSymbolSourceFactory(JitSymbolSourceFactory factory) {
  impl_->jit.SetFactory(std::move(factory));
  // Cached kJitNoMap answers predate the source.
  ++impl_->cache_epoch;
}

void Symbolizer::SetMappingObserver(const void* owner, MappingObserver observer, bool replay_known) {
  auto& all = impl_->mapping_observers;
  std::erase_if(all, [owner](const auto& o) { return o.first == owner; });
  if (!observer) return;
  if (replay_known) {
    // The processes already known (a whole-machine or -p recording's snapshot
    // of /proc) are told their current file mappings, as if just mapped.
    impl_->timeline.ForEachProcess([&](const TimelineProcess& p) {
      if (p.exited || p.generations.empty()) return;
      for (const TimelineMapping& m : p.generations.back().mappings) {
        if (m.kind != MappingKind::kFile) continue;
        MappingEvent e;
        e.start = m.start;
        e.len = m.end - m.start;
        e.pgoff = m.pgoff;
        e.prot = PROT_EXEC;
        e.path = m.module;
        observer(p.pid, e);
      }
    });
  }
  all.emplace_back(owner, std::move(observer));
}

size_t Symbolizer::ReleaseNames(size_t budget_bytes) {
  if (impl_->names.bytes() <= budget_bytes)
    return 0;
  const size_t n = impl_->names.size();
  ++impl_->cache_epoch; // cached answers hold views into the pool
  ++impl_->names_epoch;
  impl_->names.Clear();
  impl_->stats.names_released += n;
  return n;
}

SymbolizerHeld Symbolizer::Held() const {
  const Impl& impl = *impl_;
  SymbolizerHeld h;
  h.symbol_bytes = impl.modules.symbol_bytes();
  h.kernel_bytes = impl.kernel.bytes();
  h.answer_cache_bytes = impl.user_cache.capacity() * sizeof(Impl::UserCacheEntry) +
                         impl.file_cache.capacity() * sizeof(Impl::FileCacheEntry);
  h.name_bytes = impl.names.bytes();
  h.process_bytes = impl.timeline.bytes() + impl.registry.bytes();
  h.jit_bytes = impl.jit.bytes();
  h.processes = impl.timeline.size();
  impl.timeline.ForEachProcess([&](const TimelineProcess& p) { h.exited_processes += p.exited; });
  h.jit_sources = impl.jit.live_sources();
  return h;
}

const SymbolizerStats& Symbolizer::stats() const {
  impl_->stats.name_bytes = impl_->names.bytes();
  impl_->stats.elf_files_loaded = impl_->elf.files_loaded();
  impl_->stats.open_files = impl_->modules.open_files();
  impl_->stats.processes = impl_->timeline.size();
  impl_->stats.symbol_bytes = impl_->modules.symbol_bytes();
  impl_->stats.symbol_tables_released = impl_->modules.symbol_tables_released();
  return impl_->stats;
}

}  // namespace arcprof
