#include "runtimes/java/java_runtime.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <future>
#include <map>
#include <mutex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <utility>

#include "common/text.h"
#include "runtimes/java/hotspot_stepper.h"
#include "runtimes/java/java_attach.h"
#include "spaces/address_spaces.h"
#include "symbolize/jit_process_source.h"
#include "symbolize/jitdump_format.h"

namespace arcprof::runtimes {
namespace {

// New JVMs are looked for on every drain tick: samples taken before the
// agent is in (its replay) cannot be named later. Whole-machine sessions learn
// of them from the side band (a process mapping libjvm.so: Recognize), which
// costs no /proc read. They also list /proc for mappings the side band lost:
// every kFullScanEveryNs after a loss (or when losses are not known), else
// every kQuietFullScanEveryNs. Each full scan reads the maps of every
// process not seen before: on a machine running builds it was 3.6% of a
// whole-machine daemon's CPU at a scan every 5 s.
constexpr uint64_t kScanEveryNs = 100'000'000;
constexpr uint64_t kFullScanEveryNs = 5'000'000'000;
constexpr uint64_t kQuietFullScanEveryNs = 30'000'000'000;
// A process that just exec'd java maps libjvm.so and installs its signal
// handlers within a fraction of a second; re-check it for this long.
constexpr uint64_t kStartupGraceNs = 10'000'000'000;

bool Gone(uint32_t pid) { return kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH; }

// Host tid -> tid in the innermost pid namespace, for pid's live tasks.
std::map<uint32_t, uint32_t> NamespaceTids(uint32_t pid) {
  std::map<uint32_t, uint32_t> out;
  const std::string dir = "/proc/" + std::to_string(pid) + "/task";
  for (uint32_t tid : ListPids(dir)) {
    std::ifstream in(dir + "/" + std::to_string(tid) + "/status");
    std::string line;
    while (std::getline(in, line)) {
      if (line.rfind("NSpid:", 0) != 0) continue;
      std::istringstream ids(line.substr(6));
      uint32_t id = 0, last = 0;
      while (ids >> id) last = id;
      if (last != 0) out[tid] = last;
      break;
    }
  }
  return out;
}

std::string ReadComm(uint32_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/comm");
  std::string comm;
  std::getline(in, comm);
  return comm;
}

class JavaRuntime final : public Runtime {
 public:
  ~JavaRuntime() override {
    for (auto& f : pending_) f.wait();
  }

  std::string_view name() const override { return "java"; }
  uint32_t id() const override { return ARCPROF_RUNTIME_NONE; }

  // The executable code of a JVM (HotSpot, or OpenJ9, which is counted but
  // not attached to).
  bool MayHost(std::string_view path) const override {
    const size_t slash = path.rfind('/');
    if (slash != std::string_view::npos) path = path.substr(slash + 1);
    return path == "libjvm.so" || path.starts_with("libj9vm");
  }
  // A process that maps a JVM is looked at by the next scan (the file itself
  // says nothing more: whether the JVM can be attached to is read from /proc).
  std::optional<runtime_proc> Recognize(uint32_t pid, const MappedFile&) override {
    mapped_jvm_.insert(pid);
    runtime_proc none{};
    none.runtime = ARCPROF_RUNTIME_NONE;
    return none;
  }
  bool IsHostFrame(uint32_t, std::string_view) const override { return false; }
  SymbolizedFrame Name(uint32_t, const runtime_frame&) override { return {}; }
  std::unique_ptr<FrameStepper> MakeFrameStepper() const override { return MakeHotSpotFrameStepper(); }

  void Start(RuntimeHost& host) override {
    if (!host.attach) return;
    quiet_ = host.quiet;
    // JVMs already running are attached before sampling goes on, so that the
    // replay of their existing code is stamped before the first sample.
    const uint64_t now = JitMonotonicNowNs();
    std::vector<std::future<void>> started;
    for (uint32_t pid : Candidates(host)) {
      auto jvm = InspectJvm(pid);
      if (!jvm.ok()) continue;
      if (jvm->hotspot && !jvm->catches_sigquit) {
        first_seen_.emplace(pid, now);  // still starting: the drain-tick scan retries it
        starting_.insert(pid);
        continue;
      }
      attempted_.insert(pid);
      if (host.hold) host.hold(pid);
      started.push_back(std::async(std::launch::async, [this, pid, jvm = *jvm] { AttachOne(pid, jvm); }));
    }
    // Sampling already runs: drain while the attaches take their time.
    for (auto& f : started) {
      while (f.wait_for(std::chrono::milliseconds(50)) != std::future_status::ready) {
        if (host.drain) host.drain();
      }
    }
    if (host.system_wide) {
      // Everything else running now is not a JVM; only a process that is
      // still becoming one (named java, libjvm.so not mapped yet) is looked at again.
      for (uint32_t pid : ListPids()) {
        if (attempted_.count(pid) || first_seen_.count(pid)) continue;
        if (ReadComm(pid) != "java") not_jvm_.insert(pid);
      }
    }
    last_scan_ns_ = now;
    last_full_scan_ns_ = now;
    if (host.sideband_lost) lost_at_full_scan_ = host.sideband_lost();
    FlushMessages();
  }

  void Poll(RuntimeHost& host, uint64_t) override {
    const uint64_t now = JitMonotonicNowNs();
    {
      // A JVM attached just now writes its jitdump: look for it at once
      // (a source that found nothing for a while looks seldom).
      std::lock_guard<std::mutex> lock(mu_);
      for (uint32_t pid : just_attached_) {
        if (auto it = sources_.find(pid); it != sources_.end()) it->second.source->Rediscover();
      }
      just_attached_.clear();
    }
    if (host.attach) {
      for (auto it = pending_.begin(); it != pending_.end();) {
        if (it->wait_for(std::chrono::seconds(0)) == std::future_status::ready) it = pending_.erase(it);
        else ++it;
      }
      if (now - last_scan_ns_ >= kScanEveryNs) {
        last_scan_ns_ = now;
        ScanForNewJvms(host, now);
      }
    }
    FlushMessages();
  }

  void CloseWindow(RuntimeHost& host, std::span<const WindowThread> threads, bool last) override {
    if (last) {
      for (auto& f : pending_) f.wait();
      pending_.clear();
    }
    Tally tally = std::move(retired_);
    retired_ = Tally();
    for (auto& [pid, entry] : sources_) Account(entry, last, tally);
    FlushMessages();
    // Java thread names: the agent knows them by the tid the JVM sees, which
    // is the host tid unless the JVM runs in its own pid namespace; there the
    // last NSpid of each live task maps one to the other.
    std::map<uint32_t, std::map<uint32_t, uint32_t>> ns_tids;  // pid -> host tid -> namespace tid
    for (const WindowThread& t : threads) {
      auto it = sources_.find(t.pid);
      if (it == sources_.end()) continue;
      const ProcessInfo* info = host.spaces.Process(t.pid);
      uint32_t tid = t.tid;
      if (info && info->ns_pid != 0 && info->ns_pid != t.pid) {
        auto [map, added] = ns_tids.try_emplace(t.pid);
        if (added) map->second = NamespaceTids(t.pid);
        auto ns = map->second.find(t.tid);
        if (ns == map->second.end()) continue;  // the thread is gone: its namespace tid is unknown
        tid = ns->second;
      }
      const auto& names = it->second.source->thread_names();
      if (auto name = names.find(tid); name != names.end()) *t.comm = name->second;
    }
    // JVMs that exited during the window: their thread names were kept.
    for (const WindowThread& t : threads) {
      auto it = tally.thread_names.find(t.pid);
      if (it == tally.thread_names.end() || sources_.count(t.pid)) continue;
      if (auto name = it->second.find(t.tid); name != it->second.end()) *t.comm = name->second;
    }
    int64_t attached, failed;
    {
      std::lock_guard<std::mutex> lock(mu_);
      attached = attached_ - reported_attached_;
      failed = failed_ - reported_failed_;
      reported_attached_ = attached_;
      reported_failed_ = failed_;
    }
    counters_["java.jvms_attached"] += attached;
    counters_["java.attach_failed"] += failed;
    counters_["java.jvms_with_agent"] += tally.jvms;
    counters_["java.jvms_without_preserve_frame_pointer"] += tally.without_fp;
    counters_["java.jvms_unwalkable"] += tally.unwalkable;
    if (tally.unwalkable > 0 && !host.quiet) {
      fprintf(stderr,
              "arcprof: %lld JVM(s) ran without -XX:+PreserveFramePointer and without the agent's frame sizes: "
              "their Java stacks end at the first JIT frame\n",
              static_cast<long long>(tally.unwalkable));
    }
    if (!last) ForgetExitedProcesses();
  }

  // Every process's JIT source (not only JVMs': a process that becomes a
  // JVM, a child of the command, is found among them).
  void JitSourceOpened(uint32_t pid, JitProcessSource& source) override { sources_[pid] = Source{&source}; }
  // The source of a JVM that exited (or exec'd): what the window still needs
  // of it (counts, thread names) is kept in retired_.
  void JitSourceClosing(uint32_t pid, JitProcessSource& source) override {
    auto it = sources_.find(pid);
    if (it == sources_.end() || it->second.source != &source) return;
    Account(it->second, /*last=*/true, retired_);
    const auto& names = source.thread_names();
    if (!names.empty()) retired_.thread_names[pid] = names;
    sources_.erase(it);
  }

  void Forget(uint32_t pid) override { mapped_jvm_.erase(pid); }
  void TakeCounters(const std::function<void(std::string_view, int64_t)>& add) override {
    for (const auto& [name, value] : counters_) add(name, value);
    counters_.clear();
  }
  size_t HeldBytes() const override {
    return (sources_.size() + attempted_.size() + first_seen_.size() + not_jvm_.size()) * 48;
  }

 private:
  std::vector<uint32_t> Candidates(const RuntimeHost& host) const {
    if (host.system_wide) return FindJvmPids();
    return host.target_pids;
  }

  void ScanForNewJvms(RuntimeHost& host, uint64_t now) {
    std::vector<uint32_t> pids;
    const std::optional<uint64_t> lost = host.sideband_lost ? std::optional(host.sideband_lost()) : std::nullopt;
    const uint64_t full_scan_every =
        !lost || *lost != lost_at_full_scan_ ? kFullScanEveryNs : kQuietFullScanEveryNs;
    if (host.system_wide && now - last_full_scan_ns_ < full_scan_every) {
      // Between full scans: the processes the side band saw mapping a JVM,
      // and JVMs still starting (not handling SIGQUIT yet).
      for (uint32_t pid : mapped_jvm_) pids.push_back(pid);
      mapped_jvm_.clear();
      for (uint32_t pid : starting_) pids.push_back(pid);
    } else if (host.system_wide) {
      // Only processes not looked at before: reading every process's maps
      // every second would cost more than the rest of the runtime.
      last_full_scan_ns_ = now;
      lost_at_full_scan_ = lost.value_or(0);
      mapped_jvm_.clear();
      std::set<uint32_t> alive;
      for (uint32_t pid : ListPids()) {
        alive.insert(pid);
        if (!not_jvm_.count(pid)) pids.push_back(pid);
      }
      for (auto it = not_jvm_.begin(); it != not_jvm_.end();) {
        it = alive.count(*it) ? std::next(it) : not_jvm_.erase(it);
      }
    } else {
      // The command and -p processes, and their children the symbolizer saw.
      pids = host.target_pids;
      for (auto& [pid, entry] : sources_) pids.push_back(pid);
    }
    std::sort(pids.begin(), pids.end());
    pids.erase(std::unique(pids.begin(), pids.end()), pids.end());
    const std::set<uint32_t> was_starting = std::exchange(starting_, {});
    for (uint32_t pid : pids) {
      if (attempted_.count(pid)) continue;
      // A HotSpot JVM seen starting: until it handles SIGQUIT only its status
      // is read, not its maps again (hundreds of lines, read on every drain
      // tick: a restarted JVM's start-up took most of the extension's CPU).
      if (was_starting.count(pid) && CatchesSigquit(pid) == false) {
        auto [it, added] = first_seen_.emplace(pid, now);
        if (now - it->second < kStartupGraceNs) {
          starting_.insert(pid);
          continue;
        }
      }
      auto jvm = Inspect(host, pid, now);
      if (!jvm.ok()) {
        // A process that just exec'd java maps libjvm.so a moment later.
        auto [it, added] = first_seen_.emplace(pid, now);
        if (now - it->second >= kStartupGraceNs) not_jvm_.insert(pid);
        continue;
      }
      if (jvm->hotspot && !jvm->catches_sigquit) {
        // Still starting: signalling now would kill it. Try again later.
        auto [it, added] = first_seen_.emplace(pid, now);
        if (now - it->second < kStartupGraceNs) {
          starting_.insert(pid);
          continue;
        }
      }
      attempted_.insert(pid);
      pending_.push_back(std::async(std::launch::async, [this, pid, jvm = *jvm] { AttachOne(pid, jvm); }));
    }
  }

  // What a window reports of its JVMs: JVMs counted, and the thread names of
  // JVMs that exited during the window.
  struct Tally {
    int64_t jvms = 0, without_fp = 0, unwalkable = 0;
    std::map<uint32_t, std::map<uint32_t, std::string>> thread_names;  // pid -> tid -> name
  };
  struct Source {
    JitProcessSource* source = nullptr;  // valid until JitSourceClosing
    bool counted = false;                // counted in java.jvms_with_agent
  };
  static void Account(Source& entry, bool last, Tally& tally) {
    const JitProcessSource& source = *entry.source;
    const JitSourceStats& s = source.stats();
    // A JVM counts in the first window that knows its flags and code, so
    // windows sum.
    if (source.vm_flags() && !entry.counted && (s.code_loads > 0 || last)) {
      entry.counted = true;
      ++tally.jvms;
      if (!(*source.vm_flags() & jitdump::kVmPreserveFramePointer)) {
        ++tally.without_fp;
        // Compiled frames are stepped by their frame sizes when the agent
        // could read them (HotSpot's CodeBlob layout known).
        if (s.frames == 0) ++tally.unwalkable;
      }
    }
  }

  // Between windows (a continuous session runs for days): processes that
  // exited are forgotten, so a later process with the same pid is a new
  // candidate (a restarted JVM is attached again).
  void ForgetExitedProcesses() {
    for (auto it = attempted_.begin(); it != attempted_.end();) it = Gone(*it) ? attempted_.erase(it) : std::next(it);
    for (auto it = first_seen_.begin(); it != first_seen_.end();) {
      it = Gone(it->first) ? first_seen_.erase(it) : std::next(it);
    }
  }

  // InspectJvm, with what the side band knows of pid's mappings when it lost
  // no record: then only the status of a JVM is read, and nothing of a
  // process that maps none (a JVM's maps are hundreds of lines, read twice
  // while it starts; with the full scans' new processes that was 1.3% of the
  // churn daemon). A process the side band does not know, or one whose
  // records may be lost, is read from /proc.
  static Result<JvmProcess> Inspect(RuntimeHost& host, uint32_t pid, uint64_t now) {
    if (host.sideband_lost && host.sideband_lost() == 0 && host.spaces.KnowsProcess(pid) &&
        !host.spaces.ProcessExited(pid)) {
      if (auto files = host.spaces.MappedFiles(pid, now)) {
        JvmMappings maps;
        for (const MappedFile& f : files->files) NoteJvmMapping(f.path, &maps);
        return InspectJvmWith(pid, maps);
      }
    }
    return InspectJvm(pid);
  }

  // `jvm`: the scan's InspectJvm of pid, a moment old.
  void AttachOne(uint32_t pid, const JvmProcess& jvm) {
    JavaAttachOptions options;
    // The files are ours to clean up: the agent removes them at VM death
    // (this session reads them through descriptors it holds open). Removed,
    // they never reach perf inject, the only reader of code bytes.
    options.agent_options = "unlink,nocode";
    options.inspected = jvm;
    std::string message;
    bool ok = false;
    if (jvm.agent_loaded) {
      ok = true;
      message = "JVM " + std::to_string(pid) + " already has the agent";
    } else {
      auto result = AttachAgent(pid, options);
      // A JVM caught during start-up says so; it is live within a second.
      for (int retry = 0; retry < 20 && !result.ok() &&
                          result.error().message.find(kJvmNotLiveYet) != std::string::npos;
           ++retry) {
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
        result = AttachAgent(pid, options);
      }
      ok = result.ok();
      message = ok ? "attached to JVM " + std::to_string(pid) : result.error().message;
      // Another arcprof (a continuous daemon, another user's recording)
      // attached its own agent build between our look and our request: that
      // agent refuses to start a second time, and its jitdump names the code.
      if (!ok) {
        auto again = InspectJvm(pid);
        if (again.ok() && again->agent_loaded) {
          ok = true;
          message = "JVM " + std::to_string(pid) + " already has the agent";
        }
      }
    }
    std::lock_guard<std::mutex> lock(mu_);
    (ok ? attached_ : failed_) += 1;
    if (ok) just_attached_.push_back(pid);
    messages_.push_back(message);
  }

  void FlushMessages() {
    std::lock_guard<std::mutex> lock(mu_);
    for (const std::string& m : messages_) {
      const bool attached = m.rfind("attached", 0) == 0 || m.find("already has") != std::string::npos;
      if (!attached || !quiet_) fprintf(stderr, "arcprof: java: %s\n", EscapeControl(m).c_str());
    }
    messages_.clear();
  }

  bool quiet_ = false;
  std::map<uint32_t, Source> sources_;
  std::map<std::string, int64_t> counters_;  // since TakeCounters
  std::set<uint32_t> attempted_;
  std::map<uint32_t, uint64_t> first_seen_;
  std::set<uint32_t> not_jvm_;     // looked at for longer than the start-up grace
  std::set<uint32_t> mapped_jvm_;  // mapped libjvm.so since the last scan (side band)
  std::set<uint32_t> starting_;    // JVMs not handling SIGQUIT yet: looked at every scan
  uint64_t last_full_scan_ns_ = 0;
  uint64_t lost_at_full_scan_ = 0;  // side-band records lost as of the last full scan
  uint64_t last_scan_ns_ = 0;
  Tally retired_;
  std::vector<std::future<void>> pending_;
  std::mutex mu_;  // attach threads report through messages_ and the counts
  int64_t attached_ = 0, failed_ = 0;
  int64_t reported_attached_ = 0, reported_failed_ = 0;
  std::vector<std::string> messages_;
  std::vector<uint32_t> just_attached_;  // by the attach threads, under mu_
};

}  // namespace

std::unique_ptr<Runtime> MakeJavaRuntime() { return std::make_unique<JavaRuntime>(); }

}  // namespace arcprof::runtimes
