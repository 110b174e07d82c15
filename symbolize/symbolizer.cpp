#include "symbolize/symbolizer.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <optional>
#include <spdlog/fmt/fmt.h>
#include <spdlog/spdlog.h>
#include <unordered_map>
#include <unordered_set>

#include "common/scoped_fd.h"
#include "symbolize/elf_file.h"
#include "symbolize/kallsyms.h"
#include "symbolize/proc_parse.h"
#include "symbolize/timeline.h"

namespace arcprof {
namespace {

constexpr std::string_view kUnknownModule = "[unknown]";
constexpr std::string_view kUnknownKernelModule = "[kernel]";
constexpr std::string_view kJitModule = "JITCODE";
constexpr std::string_view kVdsoModule = "[vdso]";

// Direct-mapped caches: a hit costs one multiply and a few compares, which is
// what makes ~20M frame lookups per capture cheap; collisions just evict.
constexpr size_t kUserCacheBits = 16;
constexpr size_t kKernelCacheBits = 14;

struct DevInode {
  uint64_t dev = 0;
  uint64_t inode = 0;
  bool operator==(const DevInode&) const = default;
};
struct DevInodeHash {
  size_t operator()(const DevInode& k) const { return std::hash<uint64_t>()(k.dev * 0x9e3779b97f4a7c15ULL ^ k.inode); }
};

Result<std::string> ReadWholeFile(const std::string& path) {
  ScopedFd fd(open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return MakeError(path + ": " + std::strerror(errno));
  std::string text;
  char buffer[65536];
  for (;;) {
    ssize_t n = read(fd.get(), buffer, sizeof(buffer));
    if (n < 0) {
      if (errno == EINTR) continue;
      return MakeError(path + ": " + std::strerror(errno));
    }
    if (n == 0) break;
    text.append(buffer, static_cast<size_t>(n));
  }
  return text;
}

// What kind of code a mapping holds, from the name the kernel gives it. The
// anonymous names follow perf's (formats.md §2.2), plus named anonymous memory
// and memfd, which perf leaves alone but which are JIT code all the same.
MappingKind ClassifyMapping(std::string_view path) {
  if (path == kVdsoModule) return MappingKind::kVdso;
  if (path.empty() || path == "//anon" || path.starts_with("[anon:") || path.starts_with("/memfd:") ||
      path.starts_with("/dev/zero") || path.starts_with("/anon_hugepage") ||
      path.starts_with("/SYSV") || path.starts_with("["))
    return MappingKind::kAnonExec;
  if (path.front() != '/') return MappingKind::kAnonExec;
  return MappingKind::kFile;
}

uint64_t CacheSlot(uint32_t pid, uint64_t addr, size_t bits) {
  uint64_t h = (addr ^ (uint64_t{pid} * 0x9e3779b97f4a7c15ULL)) * 0xff51afd7ed558ccdULL;
  return h >> (64 - bits);
}

}  // namespace

struct Symbolizer::Impl {
  struct ProcessRecord {
    ProcessInfo info;
    bool seen = false;
    std::unordered_map<uint32_t, std::string> thread_names;
    std::unique_ptr<JitSymbolSource> jit;
    bool jit_tried = false;
  };

  struct UserCacheEntry {
    uint64_t addr = 0;
    uint64_t valid_from = 0;
    uint64_t valid_until = 0;  // 0: empty slot
    const TimelineProcess* process = nullptr;  // nullptr: cached "no process"
    uint64_t version = 0;
    uint32_t pid = 0;
    SymbolizedFrame frame;
  };

  struct KernelCacheEntry {
    uint64_t addr = 0;
    bool used = false;
    SymbolizedFrame frame;
  };

  explicit Impl(SymbolizerOptions opts) : options(std::move(opts)) {
    debug.debug_dirs = options.debug_dirs;
    debug.verify_debuglink_crc = options.verify_debuglink_crc;
    user_cache.resize(size_t{1} << kUserCacheBits);
    kernel_cache.resize(size_t{1} << kKernelCacheBits);
  }

  SymbolizerOptions options;
  DebugSearchOptions debug;
  SymbolizerStats stats;
  Timeline timeline;
  std::unordered_map<uint32_t, ProcessRecord> processes;
  std::unordered_set<uint32_t> snapshot_attempted;

  std::vector<std::unique_ptr<ElfFile>> files;
  std::unordered_map<DevInode, uint32_t, DevInodeHash> files_by_inode;
  std::unordered_map<std::string, uint32_t> files_by_build_id;
  std::unordered_set<std::string> module_names;  // node-based: views stay valid

  std::unique_ptr<ElfFile> vdso;
  bool vdso_tried = false;

  std::optional<KernelSymbols> kernel;
  bool kernel_tried = false;

  std::vector<UserCacheEntry> user_cache;
  std::vector<KernelCacheEntry> kernel_cache;
  JitSymbolSourceFactory jit_factory;

  std::string ProcPath(uint32_t pid, std::string_view leaf) const {
    return fmt::format("{}/{}/{}", options.proc_root, pid, leaf);
  }

  std::string_view Intern(std::string_view name) {
    return *module_names.emplace(name).first;
  }

  ProcessRecord& Record(uint32_t pid) {
    ProcessRecord& record = processes[pid];
    record.info.pid = pid;
    return record;
  }

  // Reads what /proc tells about a live process: command line, uid, ns pid.
  void ReadProcessDetails(uint32_t pid, ProcessRecord& record) {
    if (auto raw = ReadWholeFile(ProcPath(pid, "cmdline")); raw.ok()) {
      std::string cmdline = procfs::ParseCmdline(*raw);
      if (!cmdline.empty()) record.info.cmdline = std::move(cmdline);
    }
    if (auto text = ReadWholeFile(ProcPath(pid, "status")); text.ok()) {
      if (auto status = procfs::ParseStatus(*text); status.ok()) {
        record.info.uid = status->uid;
        if (!status->nspid.empty()) record.info.ns_pid = status->nspid.back();
      }
    }
  }

  ScopedFd OpenMappedFile(uint32_t pid, uint64_t start, uint64_t end, const std::string& path,
                          uint64_t inode) {
    // map_files names the exact mapped inode, even if deleted or in another
    // mount namespace; the path fallbacks may name a different file by now,
    // so they must match the inode the kernel reported.
    ScopedFd fd(open(ProcPath(pid, fmt::format("map_files/{:x}-{:x}", start, end)).c_str(),
                     O_RDONLY | O_CLOEXEC));
    if (fd.valid()) return fd;
    for (const std::string& candidate : {ProcPath(pid, "root") + path, path}) {
      ScopedFd other(open(candidate.c_str(), O_RDONLY | O_CLOEXEC));
      if (!other.valid()) continue;
      struct stat st;
      if (fstat(other.get(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
      if (inode != 0 && st.st_ino != inode) continue;
      return other;
    }
    return ScopedFd();
  }

  uint32_t Register(std::unique_ptr<ElfFile> file, std::optional<DevInode> reported,
                    const std::string& reported_build_id) {
    const uint32_t id = static_cast<uint32_t>(files.size());
    files_by_inode.emplace(DevInode{file->dev(), file->inode()}, id);
    if (reported) files_by_inode.emplace(*reported, id);
    const std::string& build_id = file->build_id().empty() ? reported_build_id : file->build_id();
    if (!build_id.empty()) files_by_build_id.emplace(build_id, id);
    files.push_back(std::move(file));
    return id;
  }

  // The shared ElfFile for a mapping: found by (dev, inode) or build-id without
  // any system call when another mapping of the file was seen, else opened now.
  uint32_t FileFor(uint32_t pid, const MappingEvent& m, const std::string& path) {
    std::optional<DevInode> reported;
    if (m.ino != 0) reported = DevInode{makedev(m.maj, m.min), m.ino};
    auto compatible = [&](uint32_t id) {
      const std::string& known = files[id]->build_id();
      return m.build_id.empty() || known.empty() || known == m.build_id;
    };
    if (reported) {
      auto it = files_by_inode.find(*reported);
      if (it != files_by_inode.end() && compatible(it->second)) return it->second;
    }
    if (!m.build_id.empty()) {
      auto it = files_by_build_id.find(m.build_id);
      if (it != files_by_build_id.end()) {
        if (reported) files_by_inode.emplace(*reported, it->second);
        return it->second;
      }
    }
    ScopedFd fd = OpenMappedFile(pid, m.start, m.start + m.len, path, m.ino);
    if (!fd.valid()) {
      spdlog::debug("symbolizer: cannot open {} mapped by pid {}", path, pid);
      return TimelineMapping::kNoFile;
    }
    struct stat st;
    if (fstat(fd.get(), &st) == 0) {
      auto it = files_by_inode.find(DevInode{st.st_dev, st.st_ino});
      if (it != files_by_inode.end() && compatible(it->second)) {
        if (reported) files_by_inode.emplace(*reported, it->second);
        return it->second;
      }
    }
    std::unique_ptr<ElfFile> file = ElfFile::FromFd(std::move(fd), path);
    if (!m.build_id.empty() && !file->build_id().empty() && file->build_id() != m.build_id) {
      // The path now names another build than the one that was mapped.
      spdlog::debug("symbolizer: {} has build-id {}, pid {} mapped {}", path, file->build_id(), pid,
                    m.build_id);
      return TimelineMapping::kNoFile;
    }
    return Register(std::move(file), reported, m.build_id);
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
        mapping.module = Intern(path);
        mapping.file_id = FileFor(pid, m, path);
        break;
      case MappingKind::kVdso:
        mapping.module = kVdsoModule;
        break;
      case MappingKind::kAnonExec:
        mapping.module = kJitModule;
        break;
    }
    timeline.AddMapping(pid, t_ns, mapping, dedupe);
  }

  void Snapshot(uint32_t pid, uint64_t t_ns) {
    snapshot_attempted.insert(pid);
    auto maps = ReadWholeFile(ProcPath(pid, "maps"));
    if (!maps.ok()) return;  // gone, or not a process
    ProcessRecord& record = Record(pid);
    record.seen = true;
    if (auto comm = ReadWholeFile(ProcPath(pid, "comm")); comm.ok())
      record.info.comm = procfs::ParseComm(*comm);
    ReadProcessDetails(pid, record);
    if (DIR* dir = opendir(ProcPath(pid, "task").c_str())) {
      while (dirent* entry = readdir(dir)) {
        char* end = nullptr;
        unsigned long tid = std::strtoul(entry->d_name, &end, 10);
        if (end == entry->d_name || *end != '\0') continue;
        if (auto comm = ReadWholeFile(ProcPath(pid, fmt::format("task/{}/comm", tid))); comm.ok())
          record.thread_names[static_cast<uint32_t>(tid)] = procfs::ParseComm(*comm);
      }
      closedir(dir);
    }
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
    if (!timeline.Find(pid) && !snapshot_attempted.count(pid)) Snapshot(pid, t_ns);
  }

  ElfFile* Vdso() {
    if (vdso_tried) return vdso.get();
    vdso_tried = true;
    // The vDSO is the same image in every 64-bit process of this kernel; this
    // process's copy is read through the auxiliary vector, its size from maps.
    const uintptr_t base = getauxval(AT_SYSINFO_EHDR);
    if (base == 0) return nullptr;
    auto maps = ReadWholeFile("/proc/self/maps");
    if (!maps.ok()) return nullptr;
    for (const procfs::MapsEntry& e : procfs::ParseMaps(*maps)) {
      if (e.start == base && e.path == kVdsoModule) {
        const char* bytes = reinterpret_cast<const char*>(base);
        vdso = ElfFile::FromImage(std::vector<char>(bytes, bytes + (e.end - e.start)),
                                  std::string(kVdsoModule));
        break;
      }
    }
    return vdso.get();
  }

  SymbolizedFrame ResolveInFile(ElfFile* file, const TimelineMapping& m, uint64_t addr) {
    SymbolizedFrame frame;
    frame.module = m.module;
    frame.kind = FrameKind::kNative;
    const uint64_t file_offset = addr - m.start + m.pgoff;
    frame.offset = file_offset;
    if (!file) {
      frame.reason = UnknownReason::kFileUnavailable;
      return frame;
    }
    if (file->LoadSymbols(debug)) ++stats.elf_files_loaded;
    std::optional<uint64_t> vaddr = file->OffsetToVaddr(file_offset);
    if (!vaddr) {
      frame.reason = UnknownReason::kNoSymbols;
      return frame;
    }
    frame.offset = *vaddr;
    ElfFile::Lookup found = file->Find(*vaddr, debug);
    if (!found.symbol) {
      frame.reason = found.reason;
      return frame;
    }
    frame.symbol = found.symbol->name;
    frame.address = found.symbol->start;
    return frame;
  }

  SymbolizedFrame ResolveMapping(uint32_t pid, const TimelineMapping* m, uint64_t addr,
                                 uint64_t t_ns, bool* cacheable) {
    SymbolizedFrame frame;
    frame.offset = addr;
    if (!m) {
      frame.module = kUnknownModule;
      frame.reason = UnknownReason::kUnmapped;
      return frame;
    }
    switch (m->kind) {
      case MappingKind::kFile:
        return ResolveInFile(m->file_id == TimelineMapping::kNoFile ? nullptr : files[m->file_id].get(),
                             *m, addr);
      case MappingKind::kVdso:
        return ResolveInFile(Vdso(), *m, addr);
      case MappingKind::kAnonExec:
        break;
    }
    frame.module = kJitModule;
    frame.kind = FrameKind::kJit;
    frame.reason = UnknownReason::kJitNoMap;
    if (!jit_factory) return frame;
    ProcessRecord& record = Record(pid);
    if (!record.jit_tried) {
      record.jit_tried = true;
      record.jit = jit_factory(record.info);
    }
    if (!record.jit) return frame;
    // A JIT source grows while the process runs: its answers are not cached.
    *cacheable = false;
    if (std::optional<JitSymbol> symbol = record.jit->Find(addr, t_ns)) {
      frame.symbol = symbol->name;
      frame.address = symbol->start;
      frame.reason = UnknownReason::kNone;
      frame.kind = symbol->kind;
      frame.inlined = symbol->inlined;
    }
    return frame;
  }

  const KernelSymbols* Kernel() {
    if (kernel_tried) return kernel ? &*kernel : nullptr;
    kernel_tried = true;
    auto text = ReadWholeFile(options.kallsyms_path);
    if (!text.ok()) {
      spdlog::warn("kernel frames will be unknown: cannot read {}", text.error().message);
      return nullptr;
    }
    auto parsed = KernelSymbols::Parse(*text);
    if (!parsed.ok()) {
      spdlog::warn("kernel frames will be unknown: {}: {}", options.kallsyms_path, parsed.error().message);
      return nullptr;
    }
    if (parsed->addresses_hidden()) {
      spdlog::warn(
          "kernel frames will be unknown: {} shows only zero addresses (kernel.kptr_restrict); "
          "run as root or set sysctl kernel.kptr_restrict=0",
          options.kallsyms_path);
    }
    kernel.emplace(std::move(parsed).value());
    return &*kernel;
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
  spdlog::debug("symbolizer: snapshot of {} processes, {} files open", pids.size(), impl_->files.size());
}

void Symbolizer::SnapshotProcess(uint32_t pid, uint64_t t_ns) { impl_->Snapshot(pid, t_ns); }

void Symbolizer::OnMmap(uint32_t pid, uint64_t t_ns, const MappingEvent& mapping) {
  impl_->EnsureKnown(pid, t_ns);
  impl_->AddMapping(pid, t_ns, mapping, /*dedupe=*/false);
}

void Symbolizer::OnExec(uint32_t pid, uint64_t t_ns, std::string_view comm) {
  impl_->snapshot_attempted.insert(pid);
  impl_->timeline.Exec(pid, t_ns);
  Impl::ProcessRecord& record = impl_->Record(pid);
  record.seen = true;
  record.info.comm = std::string(comm);
  record.info.cmdline.clear();
  impl_->ReadProcessDetails(pid, record);
  record.thread_names.clear();  // exec kills every other thread
  record.thread_names[pid] = std::string(comm);
  record.jit.reset();
  record.jit_tried = false;
}

void Symbolizer::OnComm(uint32_t pid, uint32_t tid, uint64_t t_ns, std::string_view comm) {
  Impl::ProcessRecord& record = impl_->Record(pid);
  record.seen = true;
  record.thread_names[tid] = std::string(comm);
  if (tid == pid) record.info.comm = std::string(comm);
}

void Symbolizer::OnFork(uint32_t parent_pid, uint32_t child_pid, uint64_t t_ns) {
  if (parent_pid == child_pid) return;  // a new thread, not a new address space
  impl_->EnsureKnown(parent_pid, t_ns);
  impl_->snapshot_attempted.insert(child_pid);
  impl_->timeline.Fork(parent_pid, child_pid, t_ns);
  ProcessInfo parent_info = impl_->Record(parent_pid).info;
  Impl::ProcessRecord& child = impl_->Record(child_pid);
  child.seen = true;
  child.info = parent_info;
  child.info.pid = child_pid;
  child.info.ns_pid = 0;
  impl_->ReadProcessDetails(child_pid, child);
  child.thread_names.clear();
  child.thread_names[child_pid] = child.info.comm;
  child.jit.reset();
  child.jit_tried = false;
}

void Symbolizer::OnExit(uint32_t pid, uint64_t t_ns) { impl_->timeline.Exit(pid, t_ns); }

const ProcessInfo* Symbolizer::Process(uint32_t pid) const {
  auto it = impl_->processes.find(pid);
  return it != impl_->processes.end() && it->second.seen ? &it->second.info : nullptr;
}

std::string_view Symbolizer::ThreadName(uint32_t pid, uint32_t tid) const {
  auto it = impl_->processes.find(pid);
  if (it == impl_->processes.end()) return "";
  auto thread = it->second.thread_names.find(tid);
  if (thread != it->second.thread_names.end()) return thread->second;
  return it->second.info.comm;
}

SymbolizedFrame Symbolizer::ResolveUser(uint32_t pid, uint64_t addr, uint64_t t_ns) {
  Impl& impl = *impl_;
  ++impl.stats.lookups;
  Impl::UserCacheEntry& slot = impl.user_cache[CacheSlot(pid, addr, kUserCacheBits)];
  if (slot.valid_until != 0 && slot.addr == addr && slot.pid == pid && t_ns >= slot.valid_from &&
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
    slot.process = process;
    slot.version = process ? process->version : impl.timeline.creations();
    slot.frame = frame;
  }
  return frame;
}

SymbolizedFrame Symbolizer::ResolveKernel(uint64_t addr) {
  Impl& impl = *impl_;
  ++impl.stats.lookups;
  Impl::KernelCacheEntry& slot = impl.kernel_cache[CacheSlot(0, addr, kKernelCacheBits)];
  if (slot.used && slot.addr == addr) {
    ++impl.stats.cache_hits;
    return slot.frame;
  }
  SymbolizedFrame frame;
  frame.kind = FrameKind::kKernel;
  frame.offset = addr;
  frame.module = kUnknownKernelModule;
  frame.reason = UnknownReason::kKernelUnknown;
  if (const KernelSymbols* kernel = impl.Kernel()) {
    if (const KernelSymbol* symbol = kernel->Find(addr)) {
      frame.module = symbol->module;
      frame.symbol = symbol->name;
      frame.address = symbol->start;
      frame.reason = UnknownReason::kNone;
    }
  }
  slot.used = true;
  slot.addr = addr;
  slot.frame = frame;
  return frame;
}

std::optional<MappedFile> Symbolizer::FindMappedFile(uint32_t pid, uint64_t addr, uint64_t t_ns) {
  impl_->EnsureKnown(pid, t_ns);
  const TimelineProcess* process = impl_->timeline.Find(pid);
  if (!process) return std::nullopt;
  const TimelineMapping* m = Timeline::Lookup(*process, addr, t_ns).mapping;
  if (!m || m->kind != MappingKind::kFile || m->file_id == TimelineMapping::kNoFile) return std::nullopt;
  const ElfFile& file = *impl_->files[m->file_id];
  const uint64_t vaddr = file.OffsetToVaddr(m->pgoff).value_or(m->pgoff);
  return MappedFile{file.fd(), m->module, file.build_id(), m->start, m->end, m->pgoff,
                    m->start - vaddr, m->file_id};
}

std::optional<Symbolizer::AddressSpaceFiles> Symbolizer::MappedFiles(uint32_t pid,
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
    if (m.kind != MappingKind::kFile || m.file_id == TimelineMapping::kNoFile) continue;
    // Mappings added after t_ns are included too: the key must not depend on
    // t_ns, and unwinding only asks about addresses the sample touched.
    const ElfFile& file = *impl_->files[m.file_id];
    const uint64_t vaddr = file.OffsetToVaddr(m.pgoff).value_or(m.pgoff);
    out.files.push_back(MappedFile{file.fd(), m.module, file.build_id(), m.start, m.end, m.pgoff,
                                   m.start - vaddr, m.file_id});
  }
  return out;
}

uint64_t Symbolizer::ProcessVersion(uint32_t pid) const {
  const TimelineProcess* process = impl_->timeline.Find(pid);
  return process ? process->version + 1 : 0;
}

std::map<std::string, std::string> Symbolizer::ModuleBuildIds() const {
  std::map<std::string, std::string> out;
  impl_->timeline.ForEachProcess([&](const TimelineProcess& process) {
    for (const AddressSpaceGeneration& gen : process.generations) {
      for (const TimelineMapping& m : gen.mappings) {
        if (m.kind != MappingKind::kFile || m.file_id == TimelineMapping::kNoFile) continue;
        const std::string& id = impl_->files[m.file_id]->build_id();
        if (!id.empty()) out.emplace(std::string(m.module), id);
      }
    }
  });
  return out;
}

void Symbolizer::SetJitSymbolSourceFactory(JitSymbolSourceFactory factory) {
  impl_->jit_factory = std::move(factory);
  for (auto& [pid, record] : impl_->processes) {
    record.jit.reset();
    record.jit_tried = false;
  }
  // Cached kJitNoMap answers predate the source.
  for (auto& slot : impl_->user_cache) slot.valid_until = 0;
}

const SymbolizerStats& Symbolizer::stats() const { return impl_->stats; }

}  // namespace arcprof
