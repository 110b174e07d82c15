#include "loader/continuous.h"

#include <fcntl.h>
#include <linux/capability.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <ctime>
#include <optional>

#include "loader/capabilities.h"
#include "loader/recording_session.h"
#include "model/profile_merge.h"
#include "model/value_types.h"
#include "store/atomic_file.h"
#include "store/window_store.h"
#include "common/clock.h"
#include "common/heap.h"
#include "common/scoped_fd.h"
#include "common/text.h"

#include <spdlog/spdlog.h>

namespace arcprof {
using namespace arcprof::model;
using namespace arcprof::store;
namespace {

// Points stderr at the log file (appending); on SIGHUP the file is reopened,
// so logrotate can move it away. Whoever can write the log's directory may put
// something else at its name before the reopen: a FIFO (open() would block
// until someone reads it, and so would every write), a device, a symbolic
// link. Opening never blocks (O_NONBLOCK, O_NOFOLLOW), and anything but a
// regular file with one link is refused: stderr stays where it was.
Result<void> OpenLog(const std::string& path) {
  if (path.empty()) return {};
  const int fd = open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0640);
  if (fd < 0) {
    if (errno == ENXIO) return MakeError(path + ": not a regular file (a FIFO); the log must be a file");
    if (errno == ELOOP) return MakeError(path + ": not a regular file (a symbolic link); the log must be a file");
    return MakeError(path + ": cannot open the log: " + std::strerror(errno));
  }
  ScopedFd file(fd);
  struct stat st {};
  if (fstat(fd, &st) != 0) return MakeError(path + ": cannot open the log: " + std::strerror(errno));
  if (!S_ISREG(st.st_mode)) {
    return MakeError(path + ": not a regular file (" + std::string(store::FileKind(st.st_mode)) + "); the log must be a file");
  }
  if (st.st_nlink > 1) {
    return MakeError(path + ": has " + std::to_string(st.st_nlink) +
                     " hard links; the log must be a file of its own");
  }
  if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK) != 0) {
    return MakeError(path + ": cannot open the log: " + std::strerror(errno));
  }
  fflush(stderr);
  dup2(fd, STDERR_FILENO);
  return {};
}

// The monotonic time of the next window boundary: windows end on multiples of
// the window length in Unix time (every minute on the minute), so windows of
// several machines line up.
uint64_t NextBoundary(uint64_t now_mono, uint64_t now_unix, uint64_t window_ns) {
  const uint64_t into = now_unix % window_ns;
  uint64_t wait = window_ns - into;
  if (wait < window_ns / 10) wait += window_ns;  // no sliver windows at the start
  return now_mono + wait;
}

}  // namespace

Result<void> CheckContinuousCapabilities(bool java_attach) {
  if (geteuid() == 0) return {};
  struct Needed {
    int cap;
    const char* name;
    const char* why;
    bool java_only;
  };
  // The set packaging/arcprof.service grants, in its order.
  const Needed needed[] = {
      {CAP_BPF, "CAP_BPF", "to load the sampling programs", false},
      {CAP_PERFMON, "CAP_PERFMON", "to open perf events on every CPU", false},
      {CAP_SYS_PTRACE, "CAP_SYS_PTRACE", "to read other processes' memory maps", false},
      {CAP_SETUID, "CAP_SETUID", "to attach to JVMs as their user (or pass --no-java)", true},
      {CAP_SETGID, "CAP_SETGID", "to attach to JVMs as their group (or pass --no-java)", true},
  };
  for (const Needed& n : needed) {
    if (n.java_only && !java_attach) continue;
    if (!HasEffectiveCap(n.cap)) {
      return MakeError(std::string("arcprof continuous needs ") + n.name + " " + n.why +
                       " (run it as root, or with the capabilities of packaging/arcprof.service)");
    }
  }
  // Without these it runs, with fewer names: say so once.
  if (!HasEffectiveCap(CAP_SYSLOG)) {
    fprintf(stderr, "arcprof: without CAP_SYSLOG kernel frames stay unnamed (/proc/kallsyms hides addresses)\n");
  }
  if (!HasEffectiveCap(CAP_DAC_READ_SEARCH)) {
    fprintf(stderr, "arcprof: without CAP_DAC_READ_SEARCH binaries this user cannot read stay unnamed\n");
  }
  return {};
}

Result<int> RunContinuous(const ContinuousOptions& opt) {
  if (opt.window_ns < 1000000000ull) return MakeError("--window must be at least 1s");
  if (auto ok = OpenLog(opt.log_path); !ok) return ok.error();
  if (auto ok = CheckContinuousCapabilities(JavaAttachEnabled(opt.record)); !ok) return ok.error();
  // The store is checked before sampling starts.
  auto opened = WindowStore::OpenForWriting(opt.store_dir);
  if (!opened) return opened.error();
  WindowStore& store = *opened;

  // The heap of a daemon follows what it holds, not its peaks (common/heap.h).
  heap::ConfigureForDaemon();

  RecordOptions record = opt.record;
  // A daemon wakes as seldom as its ring allows (about 3 times a second at
  // 49 Hz): every drain tick also polls side band, PTT and JIT sources.
  record.drain_interval_ms = 0;
  if (!record.ptt.has_value() && record.pids.empty()) record.ptt = true;
  // Interned frame names: released at a window close past 16 MiB (a build
  // machine adds ~800 distinct functions a minute, for days).
  if (record.names_budget_bytes == 0) record.names_budget_bytes = 16u << 20;
  // What else a daemon holds, by design rather than by the machine's load
  // (docs/design.md, "Memory and files over a long session"; the -v log
  // prints each holder at every window close):
  //  - an exited process's mappings and names for 3 s, not 10: samples are
  //    drained within a drain tick (~300 ms), and under 200 exits a second
  //    (plus a build machine's compilers) 10 s kept 2,000-7,000 processes;
  //  - 2^14 cached user answers (1.8 MiB) instead of 2^16 (7 MiB);
  //  - at most 4,096 PTT thread rows a window (the rest summed into one
  //    "[other threads]" row; 12,000 threads a minute under churn).
  if (record.exited_retention_ns == 0) record.exited_retention_ns = 3'000'000'000ull;
  if (record.answer_cache_bits == 0) record.answer_cache_bits = 14;
  if (record.ptt_max_window_rows == 0) record.ptt_max_window_rows = 4096;
  //  - a window keeps every thread: windows are bounded by their minute.
  record.max_thread_records = 0;
  StopSignals signals(/*hangup_reopens_log=*/true);
  auto started = RecordingSession::Start(record);
  if (!started) return started.error();
  RecordingSession& session = **started;

  StoreConfig config;
  {
    char host[256] = {};
    gethostname(host, sizeof(host) - 1);
    config.host = host;
  }
  config.window_s = opt.window_ns / 1000000000ull;
  config.retain_s = opt.retain_ns / 1000000000ull;
  config.max_bytes = opt.max_bytes;
  if (auto ok = store.WriteConfig(config); !ok) {
    fprintf(stderr, "arcprof: %s: %s\n", EscapeControl(store.dir()).c_str(), EscapeControl(ok.error().message).c_str());
  }
  fprintf(stderr, "arcprof: continuous capture of %s at %llu Hz, %llu s windows -> %s\n",
          EscapeControl(DescribeTarget(record)).c_str(), static_cast<unsigned long long>(record.frequency_hz),
          static_cast<unsigned long long>(opt.window_ns / 1000000000ull), EscapeControl(store.dir()).c_str());

  if (opt.on_start) {
    if (auto ok = opt.on_start(store.dir()); !ok) return ok.error();
  }
  struct StopHook {
    const std::function<void()>& hook;
    ~StopHook() {
      if (hook) hook();
    }
  } stop_hook{opt.on_stop};

  std::optional<Profile> pending;  // closed but not written yet (disk full, ...)
  uint64_t last_error_report = 0;
  uint64_t next_retry = UINT64_MAX;
  uint64_t windows_written = 0;
  constexpr uint64_t kErrorEveryNs = 60ull * 1000000000ull;

  auto flush = [&]() -> bool {
    if (!pending) return true;
    const uint64_t cpu0 = ThreadCpuNs();
    auto id = store.Append(*pending);
    const uint64_t cpu_written = ThreadCpuNs();
    const uint64_t now = RecordingSession::MonotonicNs();
    if (!id) {
      // One line a minute, not one a retry; the window stays in memory and
      // the next closed window is added to it until a write succeeds.
      if (last_error_report == 0 || now - last_error_report >= kErrorEveryNs) {
        last_error_report = now;
        fprintf(stderr,
                "arcprof: cannot write window (%s); keeping it in memory and retrying every "
                "%llu s\n",
                id.error().message.c_str(), static_cast<unsigned long long>(opt.retry_ns / 1000000000ull));
      }
      next_retry = now + opt.retry_ns;
      return false;
    }
    if (last_error_report != 0) {
      fprintf(stderr, "arcprof: window %s written; the store is writable again\n", EscapeControl(*id).c_str());
      last_error_report = 0;
    }
    // The sender may keep the window (at most the last one: it drops the
    // one it kept before, here, so that its pages are released below too).
    if (opt.on_window_written) opt.on_window_written(*id, std::move(*pending));
    pending.reset();
    // The window's trees and frames were freed just now; hand the heap's free
    // pages back, so RSS follows what is live rather than the largest window.
    heap::ReleaseFree();
    const uint64_t cpu_trimmed = ThreadCpuNs();
    next_retry = UINT64_MAX;
    ++windows_written;
    const RetentionResult r =
        store.ApplyRetention(opt.retain_ns / 1000000000ull, opt.max_bytes, RecordingSession::RealtimeNs());
    if (r.removed_unsent > 0) {
      fprintf(stderr, "arcprof: retention removed %zu window(s) that were never sent\n", r.removed_unsent);
    }
    spdlog::debug("window {} written, CPU (ms): store write {:.1f}, heap release {:.1f}, retention {:.1f}", *id,
                  (cpu_written - cpu0) / 1e6, (cpu_trimmed - cpu_written) / 1e6, (ThreadCpuNs() - cpu_trimmed) / 1e6);
    return true;
  };
  auto enqueue = [&](Profile&& window) {
    if (pending) {
      // In use as of the end of the window: the later one's.
      DropValuesAsOfEnd(*pending);
      MergeProfile(*pending, window);
    } else {
      pending = std::move(window);
    }
  };

  constexpr uint64_t kSizeCheckNs = 1000000000ull;
  uint64_t next_size_check = 0;
  uint64_t next_close = NextBoundary(RecordingSession::MonotonicNs(), RecordingSession::RealtimeNs(),
                                     opt.window_ns);
  session.SetWindowEnd(next_close);
  std::string stop_reason;
  while (true) {
    std::optional<std::string> ended = session.Tick(std::min(next_close, next_retry));
    if (int sig = StopSignals::stop_signal()) {
      stop_reason = std::string("stopped by ") + strsignal(sig);
      break;
    }
    if (StopSignals::TakeHangup()) {
      if (auto ok = OpenLog(opt.log_path); !ok) {
        fprintf(stderr, "arcprof: %s; still logging to the previous log\n",
                EscapeControl(ok.error().message).c_str());
      }
    }
    if (ended) {
      stop_reason = ended->empty() ? "the command exited" : *ended;
      break;
    }
    const uint64_t now = RecordingSession::MonotonicNs();
    bool window_full = false;
    if (opt.window_max_bytes != 0 && now >= next_size_check && now < next_close) {
      next_size_check = now + kSizeCheckNs;
      const size_t held = session.WindowBytes();
      if (held > opt.window_max_bytes) {
        window_full = true;
        fprintf(stderr,
                "arcprof: window closed early: it holds %zu KiB of frames and call trees (limit %llu KiB); "
                "the next one runs to the scheduled boundary\n",
                held >> 10, static_cast<unsigned long long>(opt.window_max_bytes >> 10));
      }
    }
    // Closes the window at `end`; the next one runs to next_close.
    auto close_window = [&](uint64_t end) -> Result<void> {
      auto window = session.CloseWindow(end);
      if (!window) return window.error();
      session.SetWindowEnd(next_close);
      enqueue(std::move(*window));
      flush();
      return {};
    };
    if (window_full) {
      // Early: ends now; the schedule (next_close) is unchanged.
      if (auto closed = close_window(now); !closed) return closed.error();
    } else if (now >= next_close) {
      // The window ends exactly on its boundary, even when closed late on a
      // busy machine; the next boundary is one window later (or, after a
      // stall longer than a window, the next one from now).
      const uint64_t end = next_close;
      next_close = end + opt.window_ns > now
                       ? end + opt.window_ns
                       : NextBoundary(now, RecordingSession::RealtimeNs(), opt.window_ns);
      if (auto closed = close_window(end); !closed) return closed.error();
    } else if (now >= next_retry) {
      flush();
    }
  }

  auto last = session.Stop();
  if (!last) return last.error();
  enqueue(std::move(*last));
  if (!flush()) {
    fprintf(stderr, "arcprof: the last window could not be written and is lost\n");
    return 1;
  }
  fprintf(stderr, "arcprof: %llu windows, %llu samples -> %s (%s)\n",
          static_cast<unsigned long long>(windows_written),
          static_cast<unsigned long long>(session.samples()), EscapeControl(store.dir()).c_str(),
          EscapeControl(stop_reason).c_str());
  return 0;
}

}  // namespace arcprof
