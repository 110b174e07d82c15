#include "spaces/address_spaces.h"

#include <dirent.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <unordered_set>

#include <spdlog/spdlog.h>

#include "common/heap.h"
#include "spaces/file_table.h"
#include "spaces/mapped_elf.h"
#include "spaces/proc_parse.h"
#include "spaces/process_registry.h"
#include "spaces/timeline.h"
#include "spaces/vdso_image.h"

namespace arcprof {
namespace {

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

}  // namespace

// The address spaces compose a process registry (names, owners, threads),
// the mapping timeline (address spaces over time) and the file table (open
// ELF files).
struct AddressSpaces::Impl {
  explicit Impl(AddressSpacesOptions opts)
      : options(std::move(opts)), registry(options.proc_root), files(options.proc_root) {}

  AddressSpacesOptions options;
  AddressSpacesStats stats;
  ProcessRegistry registry;
  Timeline timeline;
  FileTable files;
  VdsoImage vdso;
  Listener* listener = nullptr;
  std::vector<std::pair<const void*, AddressSpaces::MappingObserver>> mapping_observers;  // by owner
  std::map<std::string, std::string, std::less<>> build_ids;  // module -> build-id, kept after files close
  std::unordered_set<const char*> build_id_modules;  // interned module names (FileTable::Intern) in build_ids
  uint64_t next_forget_ns = 0;
  uint64_t next_liveness_ns = 0;
  uint64_t next_trim_ns = 0;
  uint64_t forget_epoch = 0;

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
    std::vector<std::pair<uint32_t, uint64_t>> exited;
    timeline.ForEachProcess([&](const TimelineProcess& p) {
      if (p.exited) {
        if (listener) exited.emplace_back(p.pid, p.exit_ns);
        if (p.exit_ns + options.exited_retention_ns <= t_ns) gone.push_back(p.pid);
      } else if (check_alive) {
        struct stat st;
        if (stat(registry.ProcPath(p.pid, "").c_str(), &st) != 0 && errno == ENOENT)
          gone.push_back(p.pid);  // gone without an exit event: forget it the next time round
      }
    });
    if (listener && !exited.empty()) listener->Exited(exited, t_ns);
    std::vector<uint32_t> forgotten;
    for (uint32_t pid : gone) {
      TimelineProcess* p = timeline.Find(pid);
      if (!p->exited) {
        timeline.Exit(pid, t_ns);
        continue;
      }
      for (const AddressSpaceGeneration& gen : p->generations)
        for (const TimelineMapping& m : gen.mappings)
          if (m.kind == MappingKind::kFile) files.RemoveMapping(m.file_id);
      timeline.Remove(pid);
      registry.Remove(pid);
      forgotten.push_back(pid);
    }
    if (forgotten.empty()) return;
    stats.processes_forgotten += forgotten.size();
    // The files no remembered process maps: the file table counts the
    // mappings of each (walking every remembered mapping and sorting their
    // file ids each pass was a third of the pass without the listener).
    const size_t closed = files.CloseUnmapped();
    stats.files_closed += closed;
    // Symbol tables and CFI of closed files are large, short-lived blocks:
    // their freed pages go back so that RSS follows what is held, not what
    // was held at the peak of the churn. jemalloc (the arcprof executable's
    // heap) does it by itself after its decay time (10 s; a daemon's 30 s,
    // common/heap.h): a trim here handed back pages the next JVM's tables
    // faulted in again (the churn daemon took half the page faults and 0.93x
    // the CPU without it and with the longer decay). The C library's heap
    // (tests) is trimmed at most every 30 s. A daemon trims at every window
    // close too. The listener lets go of its tables first.
    if (listener) listener->Forgot(forgotten);
    if (!heap::IsJemalloc() && closed > 0 && t_ns >= next_trim_ns) {
      next_trim_ns = t_ns + 30'000'000'000;
      heap::ReleaseFree();
    }
    spdlog::debug("symbolizer: forgot {} processes; {} remembered, {} registry records, {} open files",
                  forgotten.size(), timeline.size(), registry.size(), files.open_files());
    ++forget_epoch;
  }

  void AddMapping(uint32_t pid, uint64_t t_ns, const MappingEvent& m, bool dedupe) {
    // perf reports only executable mappings unless asked for data ones; prot 0
    // means the producer did not say.
    if (m.prot != 0 && !(m.prot & PROT_EXEC)) return;
    if (m.len == 0 || m.start + m.len < m.start) return;
    const std::string_view path = procfs::StripDeletedSuffix(m.path, nullptr);
    TimelineMapping mapping;
    mapping.start = m.start;
    mapping.end = m.start + m.len;
    mapping.pgoff = m.pgoff;
    mapping.kind = ClassifyMapping(path);
    switch (mapping.kind) {
      case MappingKind::kFile:
        mapping.file_id = files.FileFor(pid, m, path);
        mapping.module = files.ModuleOf(mapping.file_id, path);
        // Once per module name: every exec maps the same few files, and the
        // map's string compares were per mmap event. Interned names are
        // stable, so their address is the module.
        if (!build_id_modules.contains(mapping.module.data())) {
          if (const MappedElf* file = files.Get(mapping.file_id); file && !file->build_id().empty()) {
            build_ids.emplace(std::string(mapping.module), file->build_id());
            build_id_modules.insert(mapping.module.data());
          }
        }
        break;
      case MappingKind::kVdso:
        mapping.module = kVdsoModule;
        mapping.file_id = VdsoImage::kFileId;
        break;
      case MappingKind::kAnonExec:
        mapping.module = kJitModule;
        break;
    }
    if (timeline.AddMapping(pid, t_ns, mapping, dedupe) && mapping.kind == MappingKind::kFile)
      files.AddMapping(mapping.file_id);
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
      // Observers hear of it as of a side-band mapping: a process whose
      // mmap records the side band lost (a busy machine) is known from
      // /proc only, and its runtime must still be recognized.
      for (auto& [owner, observer] : mapping_observers) observer(pid, m);
    }
  }

  void EnsureKnown(uint32_t pid, uint64_t t_ns) {
    if (!timeline.Find(pid) && !registry.SnapshotAttempted(pid)) Snapshot(pid, t_ns);
  }

  const MappedElf* File(uint32_t file_id) {
    return file_id == VdsoImage::kFileId ? vdso.Get() : files.Get(file_id);
  }

  // The vDSO is described like a file: its image has a descriptor (a memfd)
  // and the unwinder steps through it with its own .eh_frame.
  std::optional<MappedFile> Describe(const TimelineMapping& m) {
    const MappedElf* file = m.kind == MappingKind::kFile   ? files.Get(m.file_id)
                            : m.kind == MappingKind::kVdso ? vdso.Get()
                                                           : nullptr;
    if (!file) return std::nullopt;
    const uint64_t vaddr = file->OffsetToVaddr(m.pgoff).value_or(m.pgoff);
    return MappedFile{file->fd(), m.module, file->build_id(), m.start, m.end, m.pgoff,
                      m.start - vaddr, m.file_id};
  }
};

AddressSpaces::AddressSpaces(AddressSpacesOptions options)
    : impl_(std::make_unique<Impl>(std::move(options))) {}

AddressSpaces::~AddressSpaces() = default;

void AddressSpaces::SnapshotAllProcesses(uint64_t t_ns) {
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
                impl_->files.open_files());
}

void AddressSpaces::SnapshotProcess(uint32_t pid, uint64_t t_ns) { impl_->Snapshot(pid, t_ns); }

void AddressSpaces::EnsureKnown(uint32_t pid, uint64_t t_ns) { impl_->EnsureKnown(pid, t_ns); }

void AddressSpaces::OnMmap(uint32_t pid, uint64_t t_ns, const MappingEvent& mapping) {
  impl_->MaybeForget(t_ns);
  impl_->EnsureKnown(pid, t_ns);
  impl_->AddMapping(pid, t_ns, mapping, /*dedupe=*/false);
  for (auto& [owner, observer] : impl_->mapping_observers) observer(pid, mapping);
}

void AddressSpaces::OnExec(uint32_t pid, uint64_t t_ns, std::string_view comm, bool exited) {
  impl_->MaybeForget(t_ns);
  impl_->timeline.Exec(pid, t_ns);
  impl_->registry.OnExec(pid, comm, exited);
  if (impl_->listener) impl_->listener->ImageReplaced(pid);
}

void AddressSpaces::OnComm(uint32_t pid, uint32_t tid, uint64_t, std::string_view comm) {
  impl_->registry.OnComm(pid, tid, comm);
}

void AddressSpaces::OnFork(uint32_t parent_pid, uint32_t child_pid, uint64_t t_ns) {
  if (parent_pid == child_pid) return;  // a new thread, not a new address space
  impl_->MaybeForget(t_ns);
  impl_->EnsureKnown(parent_pid, t_ns);
  // The registry's OnFork marks the child snapshot-attempted.
  if (const AddressSpaceGeneration* gen = impl_->timeline.Fork(parent_pid, child_pid, t_ns)) {
    for (const TimelineMapping& m : gen->mappings)
      if (m.kind == MappingKind::kFile) impl_->files.AddMapping(m.file_id);
  }
  impl_->registry.OnFork(parent_pid, child_pid, StartNsOfMonotonic(t_ns));
  if (impl_->listener) impl_->listener->ImageReplaced(child_pid);
}

void AddressSpaces::OnExit(uint32_t pid, uint64_t t_ns) {
  impl_->MaybeForget(t_ns);
  impl_->timeline.Exit(pid, t_ns);
}

void AddressSpaces::ForgetExited(uint64_t t_ns) { impl_->Forget(t_ns); }

uint64_t AddressSpaces::forget_epoch() const { return impl_->forget_epoch; }

bool AddressSpaces::KnowsProcess(uint32_t pid) const { return impl_->timeline.Find(pid) != nullptr; }

bool AddressSpaces::ProcessExited(uint32_t pid) const {
  const TimelineProcess* p = impl_->timeline.Find(pid);
  return p != nullptr && p->exited;
}

bool AddressSpaces::FileOpen(uint32_t file_id) const {
  if (file_id == VdsoImage::kFileId) return impl_->vdso.loaded();
  return impl_->files.Get(file_id) != nullptr;
}

const ProcessInfo* AddressSpaces::Process(uint32_t pid) const {
  const ProcessRegistry::Record* record = impl_->registry.Find(pid);
  return record && record->seen ? &record->info : nullptr;
}

const ProcessInfo& AddressSpaces::Info(uint32_t pid) { return impl_->registry.Get(pid).info; }

void AddressSpaces::CorrectStart(uint32_t pid, uint64_t late_ns, uint64_t start_ns) {
  const ProcessRegistry::Record* record = impl_->registry.Find(pid);
  if (record && record->info.start_ns == late_ns) impl_->registry.Get(pid).info.start_ns = start_ns;
}

std::string_view AddressSpaces::ThreadName(uint32_t pid, uint32_t tid) const {
  return impl_->registry.ThreadName(pid, tid);
}

std::optional<MappedFile> AddressSpaces::FindMappedFile(uint32_t pid, uint64_t addr, uint64_t t_ns) {
  impl_->EnsureKnown(pid, t_ns);
  const TimelineProcess* process = impl_->timeline.Find(pid);
  if (!process) return std::nullopt;
  const TimelineMapping* m = Timeline::Lookup(*process, addr, t_ns).mapping;
  if (!m) return std::nullopt;
  return impl_->Describe(*m);
}

std::optional<AddressSpaceFiles> AddressSpaces::MappedFiles(uint32_t pid, uint64_t t_ns) {
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

uint64_t AddressSpaces::ProcessVersion(uint32_t pid) const {
  const TimelineProcess* process = impl_->timeline.Find(pid);
  return process ? process->version + 1 : 0;
}

uint64_t AddressSpaces::Incarnation(uint32_t pid, uint64_t t_ns) const {
  const TimelineProcess* process = impl_->timeline.Find(pid);
  if (!process || process->generations.empty()) return 0;
  // Execs keep the process; the generation before them is its birth.
  size_t i = Timeline::LiveGeneration(*process, t_ns);
  while (i > 0 && process->generations[i].from_exec) --i;
  return process->generations[i].start_ns;
}

std::map<std::string, std::string> AddressSpaces::ModuleBuildIds() const {
  return {impl_->build_ids.begin(), impl_->build_ids.end()};
}

const TimelineProcess* AddressSpaces::TimelineOf(uint32_t pid) const { return impl_->timeline.Find(pid); }

uint64_t AddressSpaces::creations() const { return impl_->timeline.creations(); }

const MappedElf* AddressSpaces::File(uint32_t file_id) { return impl_->File(file_id); }

void AddressSpaces::SetMappingObserver(const void* owner, MappingObserver observer, bool replay_known) {
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

void AddressSpaces::SetListener(Listener* listener) { impl_->listener = listener; }

const AddressSpacesStats& AddressSpaces::stats() const { return impl_->stats; }

size_t AddressSpaces::open_files() const { return impl_->files.open_files(); }

size_t AddressSpaces::processes() const { return impl_->timeline.size(); }

size_t AddressSpaces::exited_processes() const {
  size_t n = 0;
  impl_->timeline.ForEachProcess([&](const TimelineProcess& p) { n += p.exited; });
  return n;
}

size_t AddressSpaces::bytes() const { return impl_->timeline.bytes() + impl_->registry.bytes(); }

const std::string& AddressSpaces::proc_root() const { return impl_->options.proc_root; }

}  // namespace arcprof
