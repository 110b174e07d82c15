#include "loader/record.h"

#include <linux/capability.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <optional>
#include <string>
#include <vector>

#include "loader/debuginfod_naming.h"
#include "loader/launcher.h"
#include "loader/capabilities.h"
#include "loader/recording_session.h"
#include "store/atomic_file.h"
#include "store/capture_store.h"
#include "model/profile.h"
#include "common/text.h"

namespace arcprof {
using namespace arcprof::model;
using namespace arcprof::store;
namespace {

// After a stop signal, the command gets this long to exit before SIGKILL.
constexpr uint64_t kCommandGraceNs = 2'000'000'000;

// Whether PID is a kernel thread (PF_KTHREAD in the flags of /proc/PID/stat).
bool IsKernelThread(uint32_t pid) {
  FILE* f = fopen(("/proc/" + std::to_string(pid) + "/stat").c_str(), "re");
  if (!f) return false;
  char buf[1024];
  const size_t n = fread(buf, 1, sizeof(buf) - 1, f);
  fclose(f);
  buf[n] = 0;
  const char* close = strrchr(buf, ')');
  if (!close) return false;
  // Fields after the command name: state ppid pgrp session tty_nr tpgid flags.
  unsigned long flags = 0;
  char state;
  int ppid, pgrp, session, tty, tpgid;
  if (sscanf(close + 1, " %c %d %d %d %d %d %lu", &state, &ppid, &pgrp, &session, &tty, &tpgid,
             &flags) != 7) {
    return false;
  }
  constexpr unsigned long kPfKthread = 0x00200000;
  return (flags & kPfKthread) != 0;
}

// Checks before sampling starts that the capture can be created where -o
// says: the folder exists and is writable, and the name is a new one or a
// regular file, never a symbolic link, directory, device, FIFO or socket
// (AtomicFile refuses links). A temporary file is created and removed.
Result<void> CheckOutput(const std::string& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode) && !S_ISLNK(st.st_mode)) {
    const char* what = S_ISDIR(st.st_mode)    ? "a directory"
                       : S_ISCHR(st.st_mode)  ? "a character device"
                       : S_ISBLK(st.st_mode)  ? "a block device"
                       : S_ISFIFO(st.st_mode) ? "a FIFO"
                       : S_ISSOCK(st.st_mode) ? "a socket"
                                              : "not a regular file";
    return MakeError("-o " + path + ": is " + what +
                     "; a capture is written to a regular file: pass a file name");
  }
  auto probe = AtomicFile::Create(path);
  if (!probe) return MakeError("-o " + probe.error().message);
  return {};  // the probe's temporary file is removed here
}

// Writes the capture; when that fails (a full disk, a folder removed while
// recording) writes it to the first of a few other folders that takes it, so
// that a recording is never thrown away, and says where.
Result<void> WriteCaptureOrRescue(const std::string& path, const Profile& profile) {
  auto written = WriteCapture(path, profile);
  if (written) return written;
  std::vector<std::string> dirs;
  if (const char* tmpdir = getenv("TMPDIR"); tmpdir && *tmpdir == '/') dirs.push_back(tmpdir);
  for (const char* d : {"/var/tmp", "/dev/shm", "/tmp"}) dirs.push_back(d);
  const std::string name = "arcprof-rescued-" + std::to_string(getpid()) + "-" +
                           std::to_string(static_cast<long long>(time(nullptr))) + ".db";
  for (const std::string& dir : dirs) {
    const std::string rescue = dir + "/" + name;
    if (WriteCapture(rescue, profile)) {
      return MakeError(written.error().message + "\narcprof: the recording is kept in " + rescue +
                           " (move it where you want it)",
                       written.error().kind);
    }
  }
  return written;
}

}  // namespace

Result<void> CheckRecordPreconditions() {
  if (geteuid() != 0 && !(HasEffectiveCap(CAP_BPF) && HasEffectiveCap(CAP_PERFMON))) {
    return MakeError(
        "arcprof record needs root (or CAP_BPF and CAP_PERFMON) to load BPF programs: run it "
        "with sudo");
  }
  const char* btf = getenv("ARCPROF_KERNEL_BTF");  // tests point this elsewhere
  const std::string btf_path = btf ? btf : "/sys/kernel/btf/vmlinux";
  if (access(btf_path.c_str(), R_OK) != 0) {
    return MakeError("this kernel has no BTF (" + btf_path +
                     " is missing): arcprof needs a kernel built with CONFIG_DEBUG_INFO_BTF=y "
                     "(Linux 5.8 or later)");
  }
  return {};
}

Result<int> RunRecord(const RecordOptions& opt) {
  StopSignals signals;  // before the command starts: Ctrl-C stops the recording, not arcprof
  // Before sampling: a recording must never be thrown away for a bad -o.
  if (auto ok = CheckRecordPreconditions(); !ok) return ok.error();
  if (auto ok = CheckOutput(opt.output); !ok) return ok.error();
  auto started = RecordingSession::Start(opt);
  if (!started) return started.error();
  RecordingSession& session = **started;
  if (!opt.quiet) {
    if (opt.sample_period > 0) {
      fprintf(stderr, "arcprof: recording %s, one sample every %llu %s events (Ctrl-C to stop)\n",
              EscapeControl(DescribeTarget(opt)).c_str(), static_cast<unsigned long long>(opt.sample_period),
              EscapeControl(opt.event).c_str());
    } else {
      fprintf(stderr, "arcprof: recording %s at %llu Hz (Ctrl-C to stop)\n",
              EscapeControl(DescribeTarget(opt)).c_str(), static_cast<unsigned long long>(session.frequency_hz()));
    }
    for (uint32_t pid : opt.pids) {
      if (IsKernelThread(pid)) {
        fprintf(stderr,
                "arcprof: pid %u is a kernel thread: it has kernel stacks only, and samples "
                "only while it runs\n",
                pid);
      }
    }
  }
  const uint64_t start = RecordingSession::MonotonicNs();
  const uint64_t deadline =
      opt.duration_s > 0 ? start + static_cast<uint64_t>(opt.duration_s * 1e9) : UINT64_MAX;
  LaunchedCommand* command = session.command();
  // After a stop signal, a command gets kCommandGraceNs to exit before SIGKILL.
  uint64_t kill_deadline = UINT64_MAX;
  int handled_signals = 0;
  std::string stop_reason;
  // True when the command ended with no stop signal, deadline or kill of ours.
  bool command_ended_itself = false;
  while (true) {
    std::optional<std::string> ended = session.Tick(std::min(deadline, kill_deadline));
    const uint64_t now = RecordingSession::MonotonicNs();
    if (const int count = StopSignals::stop_count(); count != handled_signals) {
      const int sig = StopSignals::stop_signal();
      stop_reason = std::string("stopped by ") + strsignal(sig);
      if (!command || command->Exited()) break;
      if (handled_signals > 0) {
        command->Kill();  // a second signal: no more waiting
        break;
      }
      handled_signals = count;
      // The terminal signals the command itself (same process group); a kill
      // from another process reaches only arcprof: pass it on. Either way the
      // command gets a moment to exit, then it is killed.
      if (StopSignals::stop_from_process()) command->Signal(sig);
      kill_deadline = now + kCommandGraceNs;
    }
    if (now >= kill_deadline) {
      command->Kill();
      break;
    }
    if (ended) {
      if (!stop_reason.empty()) break;  // the command exited after a stop signal
      stop_reason = *ended;
      command_ended_itself = command != nullptr;
      break;
    }
    if (RecordingSession::MonotonicNs() >= deadline) break;
  }

  // One session, one window: the capture.
  auto profile = session.Stop();
  if (!profile) return profile.error();
  profile->meta.start_monotonic_ns = session.start_monotonic_ns();
  if (auto ok = WriteCaptureOrRescue(opt.output, *profile); !ok) return ok.error();

  const uint64_t lost = session.lost_samples();
  const uint64_t sideband_lost = session.lost_sideband_records();
  if (!opt.quiet) {
    const double secs = static_cast<double>(profile->meta.end_monotonic_ns -
                                            profile->meta.start_monotonic_ns) / 1e9;
    fprintf(stderr, "arcprof: %llu samples in %.1f s, %zu threads -> %s%s%s\n",
            static_cast<unsigned long long>(session.samples()), secs, profile->threads.size(),
            EscapeControl(opt.output).c_str(), stop_reason.empty() ? "" : " (",
            stop_reason.empty() ? "" : EscapeControl(stop_reason + ")").c_str());
  }
  if (!opt.quiet) {
    auto counter = [&](const char* name) {
      auto it = profile->counters.find(name);
      return it == profile->counters.end() ? int64_t{0} : it->second;
    };
    const std::string line = DebuginfodSummaryLine(counter("debuginfod.modules_named"),
                                                   counter("debuginfod.modules_not_found"));
    if (!line.empty()) fprintf(stderr, "arcprof: %s\n", EscapeControl(line).c_str());
  }
  if (lost > 0) {
    fprintf(stderr, "arcprof: lost %llu samples (ring buffer full): raise --buffer-mb\n",
            static_cast<unsigned long long>(lost));
  }
  if (auto it = profile->counters.find("offcpu_dropped_intervals");
      it != profile->counters.end() && it->second > 0) {
    fprintf(stderr,
            "arcprof: %lld off-CPU intervals had no slot and were dropped: raise "
            "--off-cpu-max-stacks\n",
            static_cast<long long>(it->second));
  }
  auto counter = [&](const char* name) {
    auto it = profile->counters.find(name);
    return it == profile->counters.end() ? int64_t{0} : it->second;
  };
  if (const int64_t lost_allocs = counter("alloc.lost_samples"); lost_allocs > 0) {
    fprintf(stderr,
            "arcprof: --alloc: %lld sampled allocations had no room in the ring (their bytes are missing): raise "
            "--buffer-mb or --alloc-rate\n",
            static_cast<long long>(lost_allocs));
  }
  if (const int64_t untracked = counter("alloc.blocks_untracked"); untracked > 0) {
    fprintf(stderr,
            "arcprof: --alloc: %lld sampled blocks were not tracked (in use unknown): raise --alloc-max-blocks\n",
            static_cast<long long>(untracked));
  }
  if (const uint64_t unprocessed = session.unprocessed_samples(); unprocessed > 0) {
    fprintf(stderr,
            "arcprof: %llu samples left unprocessed at exit (the final drain was cut short)\n",
            static_cast<unsigned long long>(unprocessed));
  }
  if (!opt.pids.empty() && session.samples() == 0) {
    fprintf(stderr,
            "arcprof: no samples of the target processes: they did not run on a CPU while "
            "recording\n");
  }
  if (sideband_lost > 0) {
    fprintf(stderr,
            "arcprof: lost %llu process events (side-band buffer full): some frames may be "
            "unknown\n",
            static_cast<unsigned long long>(sideband_lost));
  }
  // The profile is what matters: a command that failed is reported, not passed on.
  // A signal is reported only when it was not arcprof's doing (a stop signal
  // passed on, the kill after the grace period or at the deadline).
  if (command && command->Exited() && !opt.quiet) {
    const int status = command->exit_status();
    if (WIFEXITED(status) && WEXITSTATUS(status) != 0) {
      fprintf(stderr, "arcprof: the command exited with status %d\n", WEXITSTATUS(status));
    } else if (WIFSIGNALED(status) && command_ended_itself) {
      fprintf(stderr, "arcprof: the command was killed by signal %d (%s)%s\n", WTERMSIG(status),
              EscapeControl(strsignal(WTERMSIG(status))).c_str(), WCOREDUMP(status) ? ", core dumped" : "");
    }
  }
  return 0;
}

}  // namespace arcprof
