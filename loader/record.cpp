#include "loader/record.h"

#include <linux/capability.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>

#include "loader/launcher.h"
#include "loader/recording_session.h"
#include "reports/capture_store.h"
#include "reports/profile.h"

namespace arcprof {
namespace {

bool HasEffectiveCap(int cap) {
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[2] = {};
  if (syscall(SYS_capget, &header, data) != 0) return false;
  return (data[cap / 32].effective >> (cap % 32)) & 1u;
}

}  // namespace

Result<void> CheckRecordPreconditions() {
  constexpr int kCapPerfmon = 38, kCapBpf = 39;
  if (geteuid() != 0 && !(HasEffectiveCap(kCapBpf) && HasEffectiveCap(kCapPerfmon))) {
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
  auto started = RecordingSession::Start(opt);
  if (!started) return started.error();
  RecordingSession& session = **started;
  if (!opt.quiet) {
    fprintf(stderr, "arcprof: recording %s at %llu Hz (Ctrl-C to stop)\n",
            DescribeTarget(opt).c_str(), static_cast<unsigned long long>(opt.frequency_hz));
  }
  const uint64_t start = RecordingSession::MonotonicNs();
  const uint64_t deadline =
      opt.duration_s > 0 ? start + static_cast<uint64_t>(opt.duration_s * 1e9) : UINT64_MAX;
  std::string stop_reason;
  while (true) {
    std::optional<std::string> ended = session.Tick(deadline);
    if (int sig = StopSignals::stop_signal()) {
      stop_reason = std::string("stopped by ") + strsignal(sig);
      break;
    }
    if (ended) {
      stop_reason = *ended;
      break;
    }
    if (RecordingSession::MonotonicNs() >= deadline) break;
  }

  // One session, one window: the capture.
  auto profile = session.Stop();
  if (!profile) return profile.error();
  profile->meta.start_monotonic_ns = session.start_monotonic_ns();
  if (auto ok = WriteCapture(opt.output, *profile); !ok) return ok.error();

  const uint64_t lost = session.lost_samples();
  const uint64_t sideband_lost = session.lost_sideband_records();
  if (!opt.quiet) {
    const double secs = static_cast<double>(profile->meta.end_monotonic_ns -
                                            profile->meta.start_monotonic_ns) / 1e9;
    fprintf(stderr, "arcprof: %llu samples in %.1f s, %zu threads -> %s%s%s\n",
            static_cast<unsigned long long>(session.samples()), secs, profile->threads.size(),
            opt.output.c_str(), stop_reason.empty() ? "" : " (",
            stop_reason.empty() ? "" : (stop_reason + ")").c_str());
  }
  if (lost > 0) {
    fprintf(stderr, "arcprof: lost %llu samples (ring buffer full): raise --buffer-mb\n",
            static_cast<unsigned long long>(lost));
  }
  if (sideband_lost > 0) {
    fprintf(stderr,
            "arcprof: lost %llu process events (side-band buffer full): some frames may be "
            "unknown\n",
            static_cast<unsigned long long>(sideband_lost));
  }
  // The profile is what matters: a command that failed is reported, not passed on.
  LaunchedCommand* command = session.command();
  if (command && command->Exited() && WIFEXITED(command->exit_status()) &&
      WEXITSTATUS(command->exit_status()) != 0 && !opt.quiet) {
    fprintf(stderr, "arcprof: the command exited with status %d\n",
            WEXITSTATUS(command->exit_status()));
  }
  return 0;
}

}  // namespace arcprof
