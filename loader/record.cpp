#include "loader/record.h"

#include <linux/capability.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <memory>
#include <optional>

#include "loader/launcher.h"
#include "loader/perf_events.h"
#include "loader/record_extension.h"
#include "loader/sample_processor.h"
#include "loader/sampler.h"
#include "loader/sideband.h"
#include "events.h"
#include "symbolize/unwinder.h"
#include "reports/capture_store.h"
#include "reports/profile.h"
#include "symbolize/symbolizer.h"

#ifndef ARCPROF_VERSION
#define ARCPROF_VERSION "0.0.0"
#endif

namespace arcprof {
namespace {

std::atomic<int> g_stop_signal{0};

void OnStopSignal(int sig) { g_stop_signal.store(sig); }

uint64_t NowNs(clockid_t clock) {
  timespec ts;
  clock_gettime(clock, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

bool HasEffectiveCap(int cap) {
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[2] = {};
  if (syscall(SYS_capget, &header, data) != 0) return false;
  return (data[cap / 32].effective >> (cap % 32)) & 1u;
}

// Installs SIGINT/SIGTERM handlers without SA_RESTART so that a blocking poll
// returns at once; restores the previous handlers on destruction.
class StopSignals {
 public:
  StopSignals() {
    g_stop_signal.store(0);
    struct sigaction sa {};
    sa.sa_handler = OnStopSignal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &old_int_);
    sigaction(SIGTERM, &sa, &old_term_);
    sigaction(SIGHUP, &sa, &old_hup_);
  }
  ~StopSignals() {
    sigaction(SIGINT, &old_int_, nullptr);
    sigaction(SIGTERM, &old_term_, nullptr);
    sigaction(SIGHUP, &old_hup_, nullptr);
  }

 private:
  struct sigaction old_int_ {}, old_term_ {}, old_hup_ {};
};

bool ProcessAlive(uint32_t pid) {
  return kill(static_cast<pid_t>(pid), 0) == 0 || errno == EPERM;
}

std::string DescribeTarget(const RecordOptions& o) {
  if (!o.command.empty()) {
    std::string s = "command";
    for (const std::string& a : o.command) s += " " + a;
    return s;
  }
  if (!o.pids.empty()) {
    std::string s = "pids";
    for (size_t i = 0; i < o.pids.size(); ++i) s += (i ? "," : " ") + std::to_string(o.pids[i]);
    return s;
  }
  return "system";
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
  if (auto ok = CheckRecordPreconditions(); !ok) return ok.error();
  auto event = ParseEvent(opt.event);
  if (!event) return event.error();
  if (opt.frequency_hz == 0) return MakeError("-F must be at least 1 Hz");
  CallGraphMode mode;
  uint32_t unwind_mode;
  if (opt.call_graph == "fp") {
    mode = CallGraphMode::kFramePointer;
    unwind_mode = ARCPROF_UNWIND_FP;
  } else if (opt.call_graph == "dwarf") {
    mode = CallGraphMode::kDwarf;
    unwind_mode = ARCPROF_UNWIND_DWARF;
  } else if (opt.call_graph == "hybrid") {
    mode = CallGraphMode::kHybrid;
    unwind_mode = ARCPROF_UNWIND_HYBRID;
  } else {
    return MakeError("--call-graph must be fp, dwarf or hybrid, not '" + opt.call_graph + "'");
  }
  if (opt.stack_kb == 0 || opt.stack_kb * 1024ull > ARCPROF_MAX_STACK_COPY) {
    return MakeError("--stack-kb must be between 1 and " +
                     std::to_string(ARCPROF_MAX_STACK_COPY / 1024));
  }
  for (uint32_t pid : opt.pids) {
    if (!ProcessAlive(pid)) return MakeError("no such process: " + std::to_string(pid));
  }

  std::optional<LaunchedCommand> command;
  if (!opt.command.empty()) {
    auto launched = LaunchedCommand::Fork(opt.command);
    if (!launched) return launched.error();
    command.emplace(std::move(*launched));
  }

  SamplerOptions sopt;
  sopt.event = *event;
  sopt.frequency_hz = opt.frequency_hz;
  sopt.buffer_mb = opt.buffer_mb;
  sopt.filter_pids = command.has_value() || !opt.pids.empty();
  sopt.self_pid = static_cast<uint32_t>(getpid());
  sopt.unwind_mode = unwind_mode;
  sopt.stack_copy_bytes = opt.stack_kb * 1024;
  auto loaded = Sampler::Load(sopt);
  if (!loaded) return loaded.error();
  std::unique_ptr<Sampler> sampler = std::move(*loaded);
  for (uint32_t pid : opt.pids) {
    if (auto ok = sampler->AddTargetPid(pid); !ok) return ok.error();
  }
  if (command) {
    if (auto ok = sampler->AddTargetPid(static_cast<uint32_t>(command->pid())); !ok) {
      return ok.error();
    }
  }

  Symbolizer symbolizer;
  Profile profile;
  Unwinder unwinder(symbolizer);
  SampleProcessor processor(symbolizer, profile, mode, &unwinder);
  SidebandQueue sideband;
  if (auto ok = sampler->OpenSideband([&](const perf_event_header* h) {
        if (auto ev = DecodeSidebandRecord(h, h->size)) sideband.Push(std::move(*ev));
      });
      !ok) {
    return ok.error();
  }

  profile.meta.start_unix_ns = NowNs(CLOCK_REALTIME);
  profile.meta.start_monotonic_ns = NowNs(CLOCK_MONOTONIC);
  // Side-band events are already flowing: the snapshot covers what ran before.
  if (command) {
    // The command has not exec'd yet; its exec and mmaps arrive as events.
  } else if (!opt.pids.empty()) {
    for (uint32_t pid : opt.pids) symbolizer.SnapshotProcess(pid, profile.meta.start_monotonic_ns);
  } else {
    symbolizer.SnapshotAllProcesses(profile.meta.start_monotonic_ns);
  }

  RecordContext context{opt, symbolizer, profile, profile.meta.start_monotonic_ns,
                        !command && opt.pids.empty(), opt.pids};
  if (command) context.target_pids.push_back(static_cast<uint32_t>(command->pid()));
  StopSignals signals;
  if (auto ok = sampler->Attach([&](const void* data, size_t size) {
        processor.Process(data, size);
      });
      !ok) {
    return ok.error();
  }
  // Extensions start once sampling works: a failure to attach the sampler
  // (no PMU for -e cycles, ...) then stays the only message.
  auto extensions = MakeRecordExtensions(opt);
  for (auto& ext : extensions) {
    if (auto ok = ext->Start(context); !ok) return ok.error();
  }

  if (command) {
    if (auto ok = command->Start(); !ok) return ok.error();
  }

  if (!opt.quiet) {
    fprintf(stderr, "arcprof: recording %s at %llu Hz (Ctrl-C to stop)\n",
            DescribeTarget(opt).c_str(), static_cast<unsigned long long>(opt.frequency_hz));
  }
  const uint64_t start = NowNs(CLOCK_MONOTONIC);
  const uint64_t deadline =
      opt.duration_s > 0 ? start + static_cast<uint64_t>(opt.duration_s * 1e9) : UINT64_MAX;
  const uint64_t drain_ns = static_cast<uint64_t>(opt.drain_interval_ms) * 1000000ull;
  uint64_t next_drain = start + drain_ns;
  uint64_t next_liveness = start + 200000000ull;
  std::string stop_reason;
  while (true) {
    uint64_t now = NowNs(CLOCK_MONOTONIC);
    const uint64_t wake = std::min(next_drain, deadline);
    const int timeout_ms = wake > now ? static_cast<int>((wake - now + 999999) / 1000000) : 0;
    sampler->PollSideband(timeout_ms);
    sideband.ApplyTo(symbolizer);
    now = NowNs(CLOCK_MONOTONIC);
    if (now >= next_drain) {
      // Samples up to `now` only: their processes' events are all read by then.
      sampler->DrainSideband();
      sideband.ApplyTo(symbolizer);
      sampler->DrainSamples(now);
      for (auto& ext : extensions) ext->Poll(context);
      next_drain = now + drain_ns;
    }
    if (int sig = g_stop_signal.load()) {
      stop_reason = std::string("stopped by ") + strsignal(sig);
      break;
    }
    if (now >= deadline) break;
    if (command && command->Exited()) break;
    if (!opt.pids.empty() && now >= next_liveness) {
      next_liveness = now + 200000000ull;
      bool any = false;
      for (uint32_t pid : opt.pids) any = any || ProcessAlive(pid);
      if (!any) {
        stop_reason = "all target processes exited";
        break;
      }
    }
  }

  profile.meta.end_monotonic_ns = NowNs(CLOCK_MONOTONIC);
  sampler->DrainSideband();
  sideband.ApplyTo(symbolizer);
  sampler->DrainSamples();
  const SamplerCounters counters = sampler->ReadCounters();
  const uint64_t sideband_lost = sampler->sideband_lost();
  sampler.reset();  // detach everything before the (slower) capture write

  processor.Finish();
  profile.build_ids = symbolizer.ModuleBuildIds();
  for (auto& ext : extensions) {
    if (auto ok = ext->Finish(context); !ok) return ok.error();
  }
  utsname uts{};
  uname(&uts);
  profile.meta.host = uts.nodename;
  profile.meta.kernel = uts.release;
  profile.meta.event = event->name;
  profile.meta.frequency_hz = opt.frequency_hz;
  profile.meta.command_line = opt.command_line;
  profile.meta.target = DescribeTarget(opt);
  profile.meta.call_graph = opt.call_graph;
  profile.meta.arcprof_version = ARCPROF_VERSION;
  profile.counters["lost_samples"] = static_cast<int64_t>(counters.lost_ringbuf);
  profile.counters["sideband_lost_records"] = static_cast<int64_t>(sideband_lost);
  profile.counters["bpf_samples"] = static_cast<int64_t>(counters.samples);
  profile.counters["followed_forks"] = static_cast<int64_t>(counters.followed_forks);
  profile.counters["stack_copy_faults"] = static_cast<int64_t>(counters.stack_faults);

  if (auto ok = WriteCapture(opt.output, profile); !ok) return ok.error();

  if (!opt.quiet) {
    const double secs = static_cast<double>(profile.meta.end_monotonic_ns -
                                            profile.meta.start_monotonic_ns) / 1e9;
    fprintf(stderr, "arcprof: %llu samples in %.1f s, %zu threads -> %s%s%s\n",
            static_cast<unsigned long long>(processor.samples()), secs, profile.threads.size(),
            opt.output.c_str(), stop_reason.empty() ? "" : " (", stop_reason.empty() ? "" : (stop_reason + ")").c_str());
  }
  if (counters.lost_ringbuf > 0) {
    fprintf(stderr, "arcprof: lost %llu samples (ring buffer full): raise --buffer-mb\n",
            static_cast<unsigned long long>(counters.lost_ringbuf));
  }
  if (sideband_lost > 0) {
    fprintf(stderr,
            "arcprof: lost %llu process events (side-band buffer full): some frames may be "
            "unknown\n",
            static_cast<unsigned long long>(sideband_lost));
  }
  // The profile is what matters: a command that failed is reported, not passed on.
  if (command && command->Exited() && WIFEXITED(command->exit_status()) &&
      WEXITSTATUS(command->exit_status()) != 0 && !opt.quiet) {
    fprintf(stderr, "arcprof: the command exited with status %d\n",
            WEXITSTATUS(command->exit_status()));
  }
  return 0;
}

}  // namespace arcprof
