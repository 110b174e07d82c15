#include "symbolize/jit_process_source.h"
#include "common/clock.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <ctime>
#include <sstream>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <iterator>
#include <tuple>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <memory>
#include <spdlog/fmt/fmt.h>

#include "symbolize/jitdump_format.h"
#include "symbolize/perf_map.h"
#include "spaces/proc_parse.h"
#include "symbolize/symbol_types.h"

namespace arcprof {
namespace {

constexpr size_t kMaxReadPerPoll = 256u << 20;
// Perf-map entries held by all sources of this process (JitSourceOptions caps).
std::atomic<uint64_t> g_perf_map_entries{0};
// Looking for files that are not there yet costs a few syscalls (a path walk
// through /proc/PID/root per place, a read of /proc/PID/maps). For a while
// after a source is made (or Rediscover()) our agent's place is tried on
// every read and the others every kDiscoverEveryNs; then, while nothing is
// found, every place is looked at with gaps doubling up to kDiscoverMaxGapNs
// (a process whose code lives in memfd or anonymous memory without a JIT
// file was looked at ~10 times a second, by every drain and sample miss).
constexpr uint64_t kDiscoverEveryNs = 500'000'000;
constexpr uint64_t kEagerDiscoverNs = 2'000'000'000;
constexpr uint64_t kDiscoverMaxGapNs = 8'000'000'000;

// What was appended to a JIT file is read into one buffer per thread, kept
// between reads up to kKeptReadBufferBytes: a JVM's first reads are 1-2 MB,
// and a fresh std::string each time was zero-filled and faulted in page by
// page (8% of a whole-machine daemon's CPU under a JVM restarted every 4 s).
// A larger read gets a buffer of its own, freed after it.
constexpr size_t kKeptReadBufferBytes = 4u << 20;

char* ReadBufferFor(size_t n, std::unique_ptr<char[]>* own) {
  thread_local std::unique_ptr<char[]> kept;
  thread_local size_t kept_bytes = 0;
  if (n > kKeptReadBufferBytes) {
    *own = std::make_unique_for_overwrite<char[]>(n);
    return own->get();
  }
  if (kept_bytes < n) {
    kept_bytes = std::min(kKeptReadBufferBytes, std::max({n, 2 * kept_bytes, size_t{256} << 10}));
    kept = std::make_unique_for_overwrite<char[]>(kept_bytes);
  }
  return kept.get();
}

std::string ReadSmallFile(const std::string& path) {
  ScopedFd fd(open(path.c_str(), O_RDONLY | O_CLOEXEC));
  std::string out;
  if (!fd.valid()) return out;
  char buf[8192];
  ssize_t n;
  while ((n = read(fd.get(), buf, sizeof(buf))) > 0 && out.size() < (4u << 20)) out.append(buf, static_cast<size_t>(n));
  return out;
}

// "jit-<digits>.dump", perf's rule for a jitdump's name (docs/formats.md §1.1).
bool IsJitdumpName(std::string_view path) {
  const size_t slash = path.rfind('/');
  std::string_view base = slash == std::string_view::npos ? path : path.substr(slash + 1);
  if (!base.starts_with("jit-") || !base.ends_with(".dump")) return false;
  std::string_view digits = base.substr(4, base.size() - 9);
  if (digits.empty()) return false;
  for (char c : digits) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}

// Java's interpreter is one code blob; other runtimes have no such name.
FrameKind KindOf(std::string_view name) {
  return name == "Interpreter" ? FrameKind::kInterpreted : FrameKind::kJit;
}

}  // namespace

uint64_t JitMonotonicNowNs() { return MonotonicNs(); }

JitProcessSource::JitProcessSource(const ProcessInfo& process, JitSourceOptions options)
    : pid_(process.pid), ns_pid_(process.ns_pid ? process.ns_pid : process.pid), uid_(process.uid),
      euid_(process.uid), options_(std::move(options)) {
  root_ = fmt::format("{}/{}/root", options_.proc_root, pid_);
  // The status file is the authority on the owner and the namespaced pid.
  auto status = procfs::ParseStatus(ReadSmallFile(fmt::format("{}/{}/status", options_.proc_root, pid_)));
  if (status.ok()) {
    uid_ = status->uid;
    euid_ = status->euid;
    if (!status->nspid.empty()) ns_pid_ = status->nspid.back();
  }
}

JitProcessSource::~JitProcessSource() {
  g_perf_map_entries.fetch_sub(stats_.perf_map_entries, std::memory_order_relaxed);
}

std::vector<std::string> JitProcessSource::TakeWarnings() { return std::exchange(warnings_, {}); }

void JitProcessSource::Warn(const std::string& path, std::string message) {
  if (warned_paths_.insert(path).second) warnings_.push_back(std::move(message));
}

bool JitProcessSource::OpenTrusted(const std::string& path, Tail* tail) {
  ScopedFd fd(open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK));
  if (!fd.valid()) {
    if (errno == ELOOP) Warn(path, fmt::format("ignoring {}: it is a symbolic link", path));
    return false;
  }
  struct stat st {};
  if (fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) {
    Warn(path, fmt::format("ignoring {}: not a regular file", path));
    return false;
  }
  if (!options_.accept_any_owner && st.st_uid != 0 && st.st_uid != uid_ && st.st_uid != euid_) {
    Warn(path, fmt::format("ignoring {}: owned by uid {}, not by the process's uid {} or root", path, st.st_uid,
                           uid_));
    return false;
  }
  tail->fd = std::move(fd);
  tail->path = path;
  return true;
}

void JitProcessSource::Rediscover() { eager_since_ns_ = 0; }

uint64_t JitProcessSource::StartMonotonicNs() {
  if (start_monotonic_ns_) return *start_monotonic_ns_;
  start_monotonic_ns_ = 0;
  // Field 22 of /proc/PID/stat, after the ")" that ends the command name:
  // clock ticks since boot (CLOCK_BOOTTIME), moved to CLOCK_MONOTONIC.
  const std::string stat = ReadSmallFile(fmt::format("{}/{}/stat", options_.proc_root, pid_));
  const size_t paren = stat.rfind(')');
  if (paren == std::string::npos) return 0;
  std::istringstream in(stat.substr(paren + 1));
  std::string field;
  for (int i = 3; i <= 22 && (in >> field); ++i) {
    if (i != 22) continue;
    char* end = nullptr;
    const unsigned long long ticks = strtoull(field.c_str(), &end, 10);
    const long hz = sysconf(_SC_CLK_TCK);
    if (end == field.c_str() || *end != '\0' || hz <= 0) return 0;
    timespec boot{}, mono{};
    clock_gettime(CLOCK_BOOTTIME, &boot);
    clock_gettime(CLOCK_MONOTONIC, &mono);
    const uint64_t boot_ns = uint64_t(boot.tv_sec) * 1000000000ull + uint64_t(boot.tv_nsec);
    const uint64_t mono_ns = uint64_t(mono.tv_sec) * 1000000000ull + uint64_t(mono.tv_nsec);
    const uint64_t start_boot = ticks * (1000000000ull / uint64_t(hz));
    const uint64_t suspended = boot_ns > mono_ns ? boot_ns - mono_ns : 0;
    start_monotonic_ns_ = start_boot > suspended ? start_boot - suspended : 0;
  }
  return *start_monotonic_ns_;
}

void JitProcessSource::Discover(uint64_t now_ns) {
  if (dump_.fd.valid()) return;
  if (eager_since_ns_ == 0 || now_ns < eager_since_ns_) {
    eager_since_ns_ = now_ns;
    discover_gap_ns_ = kDiscoverEveryNs;
  }
  const bool eager = now_ns - eager_since_ns_ < kEagerDiscoverNs;
  const bool due = !discovered_once_ || now_ns - last_discover_ns_ >= discover_gap_ns_;
  if (!eager && !due) return;
  // Our agent's place is tried on every read while eager: the sooner the
  // file is found after an attach, the fewer samples stay unnamed. The maps
  // scan for other places and the perf map come less often.
  std::string dump_path = fmt::format("{}/tmp/jit-{}.dump", root_, ns_pid_);
  bool found = OpenTrusted(dump_path, &dump_);
  if (found && stale_dump_mtime_ns_ >= 0) {
    struct stat st {};
    if (fstat(dump_.fd.get(), &st) == 0 && st.st_ino == stale_dump_ino_ &&
        int64_t(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec == stale_dump_mtime_ns_) {
      dump_ = Tail{};  // the same stale file: look for the process's own files
      found = false;
    }
  }
  if (!found) {
    if (!due) return;
    if (discovered_once_ && !eager) discover_gap_ns_ = std::min(2 * discover_gap_ns_, kDiscoverMaxGapNs);
    discovered_once_ = true;
    last_discover_ns_ = now_ns;
    // Any executable jit-N.dump mapping (perf's discovery rule: node
    // --perf-prof, wasmtime and others write elsewhere).
    const std::string maps = ReadSmallFile(fmt::format("{}/{}/maps", options_.proc_root, pid_));
    for (const procfs::MapsEntry& e : procfs::ParseMaps(maps)) {
      if ((e.prot & procfs::kProtExec) && IsJitdumpName(e.path)) {
        dump_path = root_ + e.path;
        found = OpenTrusted(dump_path, &dump_);
        break;
      }
    }
  }
  if (found) {
    OpenTrusted(dump_path.substr(0, dump_path.size() - 5) + ".arcprof", &side_);  // other runtimes write none
    return;
  }
  // A jitdump says everything a perf map would, with times: prefer it.
  if (!map_.fd.valid()) {
    if (!OpenTrusted(fmt::format("{}/tmp/perf-{}.map", root_, ns_pid_), &map_) && ns_pid_ != pid_) {
      OpenTrusted(fmt::format("/tmp/perf-{}.map", pid_), &map_);
    }
  }
}

bool JitProcessSource::ReadNew(Tail& tail, std::string_view* data, size_t max_bytes,
                               std::unique_ptr<char[]>* own) {
  *data = {};
  struct stat st {};
  if (fstat(tail.fd.get(), &st) != 0) return false;
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  if (size <= tail.offset) return false;
  const size_t want = static_cast<size_t>(std::min<uint64_t>(size - tail.offset, max_bytes));
  char* buf = ReadBufferFor(want, own);
  size_t got = 0;
  while (got < want) {
    ssize_t n = pread(tail.fd.get(), buf + got, want - got, static_cast<off_t>(tail.offset + got));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got += static_cast<size_t>(n);
  }
  *data = std::string_view(buf, got);
  return got > 0;
}

void JitProcessSource::PollDump() {
  if (!dump_.fd.valid() || dump_.dead) return;
  std::string_view view;
  std::unique_ptr<char[]> own;
  if (!ReadNew(dump_, &view, kMaxReadPerPoll, &own)) return;
  if (!dump_.header_done) {
    if (view.size() < jitdump::kFileHeaderSize) return;  // header still being written
    auto header = jitdump::ParseFileHeader(view);
    if (!header.ok()) {
      warnings_.push_back(fmt::format("ignoring {}: {}", dump_.path, header.error().message));
      dump_.dead = true;
      stats_.corrupt = true;
      return;
    }
    // A jitdump made before this process started is an earlier process's with
    // the same pid (pids wrap at 32768 on a small machine) left in /tmp: its
    // code is not this process's. Let it go; a runtime of this process that
    // rewrites the file is found again by Discover().
    const uint64_t start = StartMonotonicNs();
    if (start != 0 && header->timestamp_ns + 50'000'000 < start) {
      if (!stale_dump_warned_) {
        warnings_.push_back(fmt::format("ignoring {}: made before process {} started (an earlier process's)",
                                        dump_.path, pid_));
        stale_dump_warned_ = true;
      }
      struct stat st {};
      if (fstat(dump_.fd.get(), &st) == 0) {
        stale_dump_ino_ = st.st_ino;
        stale_dump_mtime_ns_ = int64_t(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
      }
      dump_ = Tail{};
      side_ = Tail{};
      return;
    }
    dump_.header_done = true;
    dump_.swapped = header->swapped;
    dump_.offset = header->header_size;
    if (view.size() < header->header_size) return;
    view.remove_prefix(header->header_size);
  }
  jitdump::Records& records = dump_records_;
  records.Clear();
  jitdump::ParseProgress p = jitdump::ParseRecords(view, dump_.swapped, &records);
  dump_.offset += p.consumed;
  for (const jitdump::CodeLoad& load : records.loads) {
    index_.AddCode(load.t_ns, load.addr, load.size, load.name, load.index, KindOf(load.name));
  }
  for (const jitdump::CodeMove& move : records.moves) index_.AddMove(move.t_ns, move.new_addr, move.size, move.index);
  stats_.code_loads += records.loads.size();
  if (p.corrupt) {
    warnings_.push_back(fmt::format("{}: {}; records after it are ignored", dump_.path, p.error));
    dump_.dead = true;
    stats_.corrupt = true;
  }
}

void JitProcessSource::PollSide() {
  if (!side_.fd.valid() || side_.dead) return;
  std::string_view view;
  std::unique_ptr<char[]> own;
  if (!ReadNew(side_, &view, kMaxReadPerPoll, &own)) return;
  if (!side_.header_done) {
    if (view.size() < jitdump::kSideHeaderSize) return;
    auto header = jitdump::ParseSideHeader(view);
    if (!header.ok()) {
      warnings_.push_back(fmt::format("ignoring {}: {}", side_.path, header.error().message));
      side_.dead = true;
      return;
    }
    side_.header_done = true;
    side_.offset = *header;
    if (view.size() < *header) return;
    view.remove_prefix(*header);
  }
  jitdump::SideRecords& records = side_records_;
  records.Clear();
  jitdump::ParseProgress p = jitdump::ParseSideRecords(view, &records);
  side_.offset += p.consumed;
  for (const jitdump::VmInfo& vm : records.vm) {
    vm_flags_ = vm.flags;
    vm_name_ = vm.vm;
  }
  for (const jitdump::ThreadName& t : records.threads) {
    if (!t.name.empty()) thread_names_.emplace(t.tid, t.name);
  }
  stats_.thread_names += records.threads.size();
  for (const jitdump::InlineBlock& info : records.inlines) index_.AddInlineRecord(info.index, info.record);
  stats_.inline_records += records.inlines.size();
  for (const jitdump::Unload& u : records.unloads) index_.AddUnload(u.t_ns, u.addr, u.index);
  for (const jitdump::FrameInfo& f : records.frames) index_.AddFrame(f.index, f.frame_size, f.frame_complete);
  stats_.frames += records.frames.size();
  for (const jitdump::MethodBlock& b : records.methods) {
    methods_.Add(b);
    stats_.methods += b.count;
  }
  stats_.unloads += records.unloads.size();
  if (p.corrupt) {
    warnings_.push_back(fmt::format("{}: {}; records after it are ignored", side_.path, p.error));
    side_.dead = true;
  }
}

void JitProcessSource::PollMap(uint64_t now_ns) {
  if (!map_.fd.valid() || map_.dead) return;
  // A file shorter than what was read was rewritten from its start: a perf map
  // left in /tmp by an earlier process with the same pid (pids wrap at 32768
  // on a small machine), truncated when the new process opened its own. Read
  // it again from the start; its lines win from their read time, as any later
  // line does, over what the stale file said.
  if (struct stat st {}; fstat(map_.fd.get(), &st) == 0 && static_cast<uint64_t>(st.st_size) < map_.offset) {
    map_.offset = 0;
  }
  const uint64_t total = g_perf_map_entries.load(std::memory_order_relaxed);
  const char* cap = nullptr;
  if (map_.offset >= options_.perf_map_max_bytes) cap = "bytes";
  else if (stats_.perf_map_entries >= options_.perf_map_max_entries) cap = "entries";
  else if (total >= options_.perf_map_max_entries_total) cap = "entries of all processes' perf maps";
  std::string_view data;
  std::unique_ptr<char[]> own;
  if (!cap) {
    const size_t want = static_cast<size_t>(
        std::min<uint64_t>(options_.perf_map_bytes_per_read, options_.perf_map_max_bytes - map_.offset));
    if (!ReadNew(map_, &data, want, &own)) return;
  }
  std::vector<perfmap::Entry> entries;
  perfmap::ParseProgress p;
  if (!cap) {
    p = perfmap::ParseLines(data, /*at_end=*/false, &entries);
    if (p.consumed == 0 && data.size() >= options_.perf_map_bytes_per_read) cap = "line length";
  }
  const uint64_t room = std::min(options_.perf_map_max_entries - std::min(options_.perf_map_max_entries, stats_.perf_map_entries),
                                 options_.perf_map_max_entries_total - std::min(options_.perf_map_max_entries_total, total));
  if (entries.size() > room) {
    entries.resize(room);
    cap = "entries";
  }
  if (cap) {
    map_.dead = true;
    stats_.perf_map_capped = true;
    Warn(map_.path, fmt::format("{}: stopped reading after {} bytes and {} entries (cap on {}); later JIT "
                                "frames of pid {} stay unknown",
                                map_.path, map_.offset + (entries.empty() ? 0 : p.consumed),
                                stats_.perf_map_entries + entries.size(), cap, pid_));
  }
  map_.offset += p.consumed;
  g_perf_map_entries.fetch_add(entries.size(), std::memory_order_relaxed);
  // Lines present at the first read describe code from before it; later
  // lines win from the time they were read (the format has no times).
  const uint64_t stamp = map_read_once_ ? now_ns : 0;
  map_read_once_ = true;
  for (const perfmap::Entry& e : entries) index_.AddCode(stamp, e.start, e.size, e.name);
  stats_.perf_map_entries += entries.size();
  stats_.perf_map_malformed += p.malformed;
}

void JitProcessSource::Poll(uint64_t now_ns) {
  last_poll_ns_ = now_ns;
  Discover(now_ns);
  // The dump first: side records refer to its code indexes (the index also
  // copes with the other order).
  PollDump();
  PollSide();
  PollMap(now_ns);
}

std::optional<JitSymbol> JitProcessSource::Find(uint64_t addr, uint64_t t_ns) {
  std::optional<JitSymbol> found = index_.Find(addr, t_ns);
  if (!found) {
    // The record may have been appended after our last read.
    const uint64_t now = JitMonotonicNowNs();
    if (now - last_poll_ns_ < options_.reread_on_miss_ns) return std::nullopt;
    Poll(now);
    found = index_.Find(addr, t_ns);
  }
  // In a JVM without -XX:+PreserveFramePointer, compiled code uses rbp as a
  // general register; the interpreter and the stubs that set up frames of
  // their own (call_stub, ...) keep it a frame pointer. Java methods are
  // named Class.method, stubs are not.
  if (found && vm_flags_ && found->kind == FrameKind::kJit && found->name.find('.') != std::string_view::npos &&
      found->name.find(' ') == std::string_view::npos) {
    if (*vm_flags_ & jitdump::kVmPreserveFramePointer) found->rbp_frame_pointer = true;
    else found->rbp_unreliable = true;
  }
  return found;
}

std::optional<std::string_view> JitProcessSource::MethodName(uint64_t method, uint64_t t_ns) {
  // Class unloading frees Method*s and new classes reuse them: a sample taken
  // after our last read may belong to a record not read yet, even when the
  // address already has a name.
  std::optional<std::string_view> name = methods_.Find(method, t_ns);
  if (!name || t_ns >= last_poll_ns_) {
    const uint64_t now = JitMonotonicNowNs();
    if (now - last_poll_ns_ >= options_.reread_on_miss_ns) {
      Poll(now);
      name = methods_.Find(method, t_ns);
    }
  }
  return name;
}

size_t JitProcessSource::bytes() const {
  size_t n = index_.bytes();
  n += methods_.bytes();
  for (const auto& [tid, name] : thread_names_) n += 3 * sizeof(void*) + sizeof(tid) + sizeof(name) + (name.size() > 15 ? name.capacity() : 0);
  return n;
}

}  // namespace arcprof
