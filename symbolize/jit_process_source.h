// The JIT symbols of one process, read from the files its runtime writes
// while it runs: a jitdump (`jit-<nspid>.dump`, with arcprof's side file
// `jit-<nspid>.arcprof` next to it when our JVMTI agent wrote it) or else a
// perf map (`/tmp/perf-<nspid>.map`). Files are opened through
// /proc/PID/root (container-safe), never through a symlink, and only when
// owned by the process's user or root. They are tailed: Poll() reads what
// was appended since the last call; a truncated last record is simply read
// again next time.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <unordered_map>
#include <string>
#include <vector>

#include "common/scoped_fd.h"
#include "symbolize/jit_index.h"
#include "symbolize/jit_method_table.h"
#include "symbolize/jit_source.h"
#include "symbolize/jitdump.h"

namespace arcprof {

struct ProcessInfo;

struct JitSourceOptions {
  std::string proc_root = "/proc";
  bool accept_any_owner = false;  // trust files whatever their owner (--force)
  // A miss in Find() re-reads the files when the last read is older than this.
  uint64_t reread_on_miss_ns = 20'000'000;
  // Perf maps are written by the process, so by anyone: a user's map of
  // hundreds of MB must not cost root's whole-machine recording seconds and
  // GBs. Each read parses at most perf_map_bytes_per_read (so one drain tick
  // stays short), and a process's map is read up to perf_map_max_bytes and
  // perf_map_max_entries; all processes' maps together hold at most
  // perf_map_max_entries_total entries. Past a cap, one warning and the
  // rest of that map is ignored (its later JIT frames stay unknown).
  size_t perf_map_bytes_per_read = 2u << 20;
  uint64_t perf_map_max_bytes = 32ull << 20;
  uint64_t perf_map_max_entries = 200'000;
  uint64_t perf_map_max_entries_total = 1'000'000;
};

struct JitSourceStats {
  uint64_t code_loads = 0;
  uint64_t perf_map_entries = 0;
  uint64_t perf_map_malformed = 0;
  bool perf_map_capped = false;  // a cap stopped reading the perf map
  uint64_t unloads = 0;
  uint64_t inline_records = 0;
  uint64_t thread_names = 0;
  uint64_t methods = 0;  // Method* -> name records
  uint64_t frames = 0;   // frame-size records
  bool corrupt = false;
};

class JitProcessSource : public JitSymbolSource {
 public:
  JitProcessSource(const ProcessInfo& process, JitSourceOptions options = {});
  ~JitProcessSource() override;

  std::optional<JitSymbol> Find(uint64_t addr, uint64_t t_ns) override;
  std::optional<std::string_view> MethodName(uint64_t method, uint64_t t_ns) override;

  // Reads what was appended since the last call (and looks for files not
  // found yet). now_ns stamps perf-map lines read after the first read.
  void Poll(uint64_t now_ns);
  // Looks for the files eagerly again (an agent was just loaded into the
  // process): reads soon after find them.
  void Rediscover();

  uint32_t pid() const { return pid_; }
  bool has_jitdump() const { return dump_.fd.valid(); }
  bool has_perf_map() const { return map_.fd.valid(); }
  // The VM facts from our agent's side file (kVm* flags), when it wrote one.
  std::optional<uint32_t> vm_flags() const { return vm_flags_; }
  const std::string& vm_name() const { return vm_name_; }
  // Java thread names by the thread id as the process sees it; the first
  // name a tid had wins (HotSpot renames the finished main thread
  // "DestroyJavaVM").
  const std::map<uint32_t, std::string>& thread_names() const { return thread_names_; }
  // Warnings worth one line each (a file owned by someone else, corruption).
  std::vector<std::string> TakeWarnings();
  const JitSourceStats& stats() const { return stats_; }
  const JitCodeIndex& index() const { return index_; }
  size_t bytes() const override;

 private:
  struct Tail {
    ScopedFd fd;
    std::string path;
    uint64_t offset = 0;  // next byte to parse
    bool header_done = false;
    bool swapped = false;
    bool dead = false;    // corrupt: stop reading
  };

  void Discover(uint64_t now_ns);
  // When the process started, in CLOCK_MONOTONIC ns; 0 when /proc does not say.
  uint64_t StartMonotonicNs();
  void Warn(const std::string& path, std::string message);  // once per path
  bool OpenTrusted(const std::string& path, Tail* tail);
  // Reads [offset, EOF) of the file (at most a cap per call) into a buffer
  // that *data views until the next read (or into *own when large).
  bool ReadNew(Tail& tail, std::string_view* data, size_t max_bytes, std::unique_ptr<char[]>* own);
  void PollDump();
  void PollSide();
  void PollMap(uint64_t now_ns);

  uint32_t pid_ = 0;
  uint32_t ns_pid_ = 0;
  uint32_t uid_ = 0, euid_ = 0;
  std::string root_;  // /proc/PID/root
  JitSourceOptions options_;
  Tail dump_, side_, map_;
  bool map_read_once_ = false;
  uint64_t last_discover_ns_ = 0;
  uint64_t eager_since_ns_ = 0;  // 0: from the next read
  uint64_t discover_gap_ns_ = 0;
  bool discovered_once_ = false;
  uint64_t last_poll_ns_ = 0;
  std::optional<uint32_t> vm_flags_;
  std::string vm_name_;
  std::map<uint32_t, std::string> thread_names_;
  std::vector<std::string> warnings_;
  std::optional<uint64_t> start_monotonic_ns_;
  bool stale_dump_warned_ = false;
  // The stale jitdump last let go (inode, modification time): not opened again
  // until it changes.
  uint64_t stale_dump_ino_ = 0;
  int64_t stale_dump_mtime_ns_ = -1;
  std::set<std::string> warned_paths_;
  JitCodeIndex index_;
  JitSourceStats stats_;
  JitMethodTable methods_;  // Method* -> name from a time on
  // Reused from poll to poll: what each read of the files parses into
  // (their vectors keep their capacity).
  jitdump::Records dump_records_;
  jitdump::SideRecords side_records_;
};

// CLOCK_MONOTONIC now, the clock of samples and jitdump records.
uint64_t JitMonotonicNowNs();

}  // namespace arcprof
