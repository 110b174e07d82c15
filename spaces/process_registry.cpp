#include "spaces/process_registry.h"

#include <dirent.h>
#include <fcntl.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <spdlog/fmt/fmt.h>

#include "common/scoped_fd.h"
#include "spaces/proc_parse.h"

namespace arcprof {

ProcessRegistry::Record& ProcessRegistry::Get(uint32_t pid) {
  Record& record = records_[pid];
  record.info.pid = pid;
  return record;
}

const ProcessRegistry::Record* ProcessRegistry::Find(uint32_t pid) const {
  auto it = records_.find(pid);
  return it == records_.end() ? nullptr : &it->second;
}

bool ProcessRegistry::SnapshotAttempted(uint32_t pid) const {
  const Record* record = Find(pid);
  return (record && record->snapshot_attempted) || snapshot_attempted_.count(pid) != 0;
}

void ProcessRegistry::MarkSnapshotAttempted(uint32_t pid) {
  if (auto it = records_.find(pid); it != records_.end()) {
    it->second.snapshot_attempted = true;
  } else {
    snapshot_attempted_.insert(pid);
  }
}

std::string ProcessRegistry::ProcPath(uint32_t pid, std::string_view leaf) const {
  return fmt::format("{}/{}/{}", proc_root_, pid, leaf);
}

namespace {

// At most `max` bytes of a file (never through a symbolic link as its last
// component); past `max`, an error when `whole`, else the start.
Result<std::string> ReadBounded(const std::string& path, size_t max, bool whole) {
  ScopedFd fd(open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
  if (!fd.valid()) return MakeError(path + ": " + std::strerror(errno));
  // Read in steps into a buffer that is not zeroed: a /proc file is a few
  // hundred bytes to a few KiB, kallsyms several MiB. Not on the stack: a
  // 64 KiB frame is the whole stack copy of a sample (bpf/stack_record.bpf.h),
  // and arcprof's own samples in here lost every caller.
  std::string text;
  static thread_local char buffer[65536];
  for (;;) {
    const size_t room = max - text.size();
    ssize_t n = read(fd.get(), buffer, std::min(sizeof(buffer), whole ? room + 1 : room));
    if (n < 0) {
      if (errno == EINTR) continue;
      return MakeError(path + ": " + std::strerror(errno));
    }
    if (n == 0) break;
    if (static_cast<size_t>(n) > room) return MakeError(path + ": larger than " + std::to_string(max >> 20) + " MiB");
    text.append(buffer, static_cast<size_t>(n));
    if (text.size() == max && !whole) break;
  }
  return text;
}

}  // namespace

Result<std::string> ReadWholeFile(const std::string& path) { return ReadBounded(path, kWholeFileMax, true); }

namespace {

uint64_t TickNs() {
  static const uint64_t tick = [] {
    const long hz = sysconf(_SC_CLK_TCK);
    return hz > 0 && hz <= 1'000'000'000 ? 1'000'000'000ull / static_cast<uint64_t>(hz) : 10'000'000ull;
  }();
  return tick;
}

uint64_t ClockNs(clockid_t clock) {
  timespec ts{};
  clock_gettime(clock, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000ull + static_cast<uint64_t>(ts.tv_nsec);
}

}  // namespace

uint64_t StartNsOfTicks(uint64_t ticks) {
  // Beyond 2^62 ns (146 years) it is no start a process can have.
  return ticks > (uint64_t{1} << 62) / TickNs() ? 0 : ticks * TickNs();
}

uint64_t StartNsOfBoottime(uint64_t boottime_ns) { return StartNsOfTicks(boottime_ns / TickNs()); }

uint64_t StartNsOfMonotonic(uint64_t monotonic_ns) {
  // CLOCK_BOOTTIME runs ahead of CLOCK_MONOTONIC by the time suspended.
  const uint64_t monotonic_now = ClockNs(CLOCK_MONOTONIC);
  const uint64_t boot_now = ClockNs(CLOCK_BOOTTIME);
  const uint64_t offset = boot_now > monotonic_now ? boot_now - monotonic_now : 0;
  return (monotonic_ns + offset) / TickNs() * TickNs();
}

Result<std::string> ReadFileStart(const std::string& path, size_t max) { return ReadBounded(path, max, false); }

void ProcessRegistry::ReadIdentity(uint32_t pid, Record& record) {
  auto cgroup = ReadFileStart(ProcPath(pid, "cgroup"), procfs::kCgroupFileMax);
  if (!cgroup.ok()) return;
  record.info.cgroup = procfs::ParseProcCgroup(*cgroup);
  record.info.otel_service_name.clear();
  if (procfs::HasServiceUnit(record.info.cgroup)) return;
  // Readable where arcprof may read it (root: always); the first 64 KiB only.
  if (auto env = ReadFileStart(ProcPath(pid, "environ"), procfs::kEnvironReadMax); env.ok()) {
    record.info.otel_service_name = procfs::EnvironValue(*env, "OTEL_SERVICE_NAME");
  }
}

void ProcessRegistry::ReadStart(uint32_t pid, Record& record) {
  // A few hundred bytes; the name in it is the process's own text.
  auto text = ReadFileStart(ProcPath(pid, "stat"), 4096);
  if (!text.ok()) return;
  if (auto ticks = procfs::ParseStatStartTicks(*text); ticks.ok()) record.info.start_ns = StartNsOfTicks(*ticks);
}

void ProcessRegistry::ReadDetails(uint32_t pid, Record& record, bool with_status) {
  auto raw = ReadWholeFile(ProcPath(pid, "cmdline"));
  // Gone already (a short process whose exec event is applied after its
  // exit, hundreds a second on a build machine): no status to read either.
  if (!raw.ok()) return;
  {
    std::string cmdline = procfs::ParseCmdline(*raw);
    if (!cmdline.empty()) record.info.cmdline = std::move(cmdline);
  }
  // Who it is (container, pod, unit): once per exec, where a runtime has
  // placed the process before it runs the payload.
  ReadIdentity(pid, record);
  if (!with_status) return;
  if (auto text = ReadWholeFile(ProcPath(pid, "status")); text.ok()) {
    if (auto status = procfs::ParseStatus(*text); status.ok()) {
      record.info.uid = status->uid;
      if (!status->nspid.empty()) record.info.ns_pid = status->nspid.back();
      record.owner_known = true;
    }
  }
}

std::optional<std::string> ProcessRegistry::Snapshot(uint32_t pid) {
  auto maps = ReadWholeFile(ProcPath(pid, "maps"));
  if (!maps.ok()) {
    MarkSnapshotAttempted(pid);
    return std::nullopt;  // gone, or not a process
  }
  Record& record = Get(pid);
  record.snapshot_attempted = true;
  record.seen = true;
  if (auto comm = ReadWholeFile(ProcPath(pid, "comm")); comm.ok())
    record.info.comm = procfs::ParseComm(*comm);
  ReadDetails(pid, record, /*with_status=*/true);
  ReadStart(pid, record);
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
  return std::move(maps).value();
}

void ProcessRegistry::OnExec(uint32_t pid, std::string_view comm, bool exited) {
  Record& record = Get(pid);
  record.snapshot_attempted = true;
  record.seen = true;
  record.info.comm = std::string(comm);
  record.info.cmdline.clear();
  // Only the command line changes at exec: the real uid and the pid
  // namespace stay (uid and ns_pid are hints; a JIT source reads the
  // process's status itself). A process whose exit is already known has
  // nothing left to read.
  if (!exited) ReadDetails(pid, record, /*with_status=*/!record.owner_known);
  // Exec keeps the process: its start is known unless nothing was seen of it.
  if (!exited && record.info.start_ns == 0) ReadStart(pid, record);
  record.thread_names.clear();  // exec kills every other thread; the main one is info.comm
}

void ProcessRegistry::OnComm(uint32_t pid, uint32_t tid, std::string_view comm) {
  Record& record = Get(pid);
  record.seen = true;
  if (tid == pid) {
    record.info.comm = std::string(comm);
    record.thread_names.erase(pid);  // named by info.comm (ThreadName)
    return;
  }
  record.thread_names[tid] = std::string(comm);
}

void ProcessRegistry::OnFork(uint32_t parent_pid, uint32_t child_pid, uint64_t start_ns) {
  // Both records by reference: an unordered_map's elements stay where they
  // are when it grows, and the child's info is copied once, into strings
  // a reused record already has.
  const Record& parent = Get(parent_pid);
  Record& child = Get(child_pid);
  child.snapshot_attempted = true;
  child.seen = true;
  child.info = parent.info;
  child.info.pid = child_pid;
  child.info.start_ns = start_ns;
  // A child of a process in the initial pid namespace is there too (a new
  // namespace's init is what a container runtime execs into, and a JIT
  // source reads the status itself).
  child.info.ns_pid = parent.info.ns_pid == parent_pid ? child_pid : 0;
  // A fork copies the parent's command line and owner: nothing to read
  // when the parent is known (hundreds of forks a second on a build
  // machine cost two /proc reads each before).
  child.owner_known = parent.owner_known && child.info.ns_pid != 0;
  if (!parent.seen) ReadDetails(child_pid, child, /*with_status=*/true);
  // The main thread is named by info.comm (ThreadName): no entry of its own.
  child.thread_names.clear();
}

std::string_view ProcessRegistry::ThreadName(uint32_t pid, uint32_t tid) const {
  const Record* record = Find(pid);
  if (!record) return "";
  auto thread = record->thread_names.find(tid);
  if (thread != record->thread_names.end()) return thread->second;
  return record->info.comm;
}

size_t ProcessRegistry::bytes() const {
  auto str = [](const std::string& s) { return s.size() > 15 ? s.capacity() + 1 : 0; };
  constexpr size_t kNode = 2 * sizeof(void*);
  size_t n = snapshot_attempted_.size() * (kNode + sizeof(uint32_t));
  for (const auto& [pid, record] : records_) {
    const procfs::CgroupIdentity& c = record.info.cgroup;
    n += kNode + sizeof(pid) + sizeof(Record) + str(record.info.comm) + str(record.info.cmdline) +
         str(record.info.otel_service_name) + str(c.container_id) + str(c.container_runtime) + str(c.pod_uid) +
         str(c.qos_class) + str(c.unit) + str(c.cgroup);
    for (const auto& [tid, name] : record.thread_names) n += kNode + sizeof(tid) + sizeof(name) + str(name);
  }
  return n;
}

void ProcessRegistry::Remove(uint32_t pid) {
  records_.erase(pid);
  snapshot_attempted_.erase(pid);
}

}  // namespace arcprof
