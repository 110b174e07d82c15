// Shared helpers for runtime tests that run the real arcprof binary as root.
#pragma once

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <map>
#include <string>
#include <vector>

#include "store/capture_store.h"
#include "model/metric.h"
#include "model/profile.h"
#include "tests/loader/subprocess.h"
#include "tests/layer_names.h"

namespace arcprof::testing {

inline bool InCi() {
  const char* ci = getenv("CI");
  return ci && std::string(ci) == "true";
}

// Root and BTF are what this machine kind has: under CI=true their absence
// is a failure, elsewhere an explicit skip with the reason.
#define ARCPROF_REQUIRE_RECORD_CAPABLE()                                               \
  do {                                                                                 \
    std::string why;                                                                   \
    if (geteuid() != 0) why = "needs root to load BPF programs";                       \
    else if (access("/sys/kernel/btf/vmlinux", R_OK) != 0) why = "kernel has no BTF";  \
    if (!why.empty()) {                                                                \
      if (::arcprof::testing::InCi()) FAIL() << why << " (CI=true: must not skip)";     \
      GTEST_SKIP() << why;                                                             \
    }                                                                                  \
  } while (0)

// A tool the tests run (go, bpftool, ...): install-deps.sh installs it, so
// under CI=true its absence is a failure; elsewhere an explicit skip.
#define ARCPROF_REQUIRE_TOOL(path, package)                                                 \
  do {                                                                                      \
    if (access(std::string(path).c_str(), X_OK) != 0) {                                     \
      if (::arcprof::testing::InCi()) FAIL() << (path) << " is missing (Debian package " << (package) \
                                             << "; scripts/install-deps.sh)";               \
      GTEST_SKIP() << (path) << " is missing: install " << (package) << " (scripts/install-deps.sh)"; \
    }                                                                                       \
  } while (0)

class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/arcprof-test-XXXXXX";
    path_ = mkdtemp(tmpl);
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  std::string path(const std::string& name) const { return path_ + "/" + name; }
  const std::string& dir() const { return path_; }

 private:
  std::string path_;
};

// Which nodes of a thread's call tree lie under a frame named `root` (the
// root's own nodes included): trace captures hang their trees there.
inline std::vector<uint8_t> UnderRoot(const Profile& p, const ThreadRecord& t, const std::string& root) {
  const auto& nodes = t.tree.nodes();
  std::vector<uint8_t> under(nodes.size(), 0);
  for (uint32_t v = 1; v < nodes.size(); ++v) {
    under[v] = under[nodes[v].parent] || p.frames.at(nodes[v].frame).symbol == root;
  }
  return under;
}

// What a trace capture (`arcprof trace`, native or Java) holds under the
// frames named `root`, over every thread: per function name its calls and
// inclusive wall time, per thread the root calls; and the calls of nodes not
// under a root (which a trace must not count).
struct TraceCounts {
  std::map<std::string, uint64_t> calls;      // function -> calls under the root
  std::map<std::string, uint64_t> incl_wall;  // function -> wall ns of its subtrees under the root
  std::map<uint32_t, uint64_t> root_calls;    // tid -> root calls
  uint64_t calls_outside = 0;                 // calls on nodes not under a root
  uint64_t wall_under_root = 0;               // wall ns of the nodes under the root, each its own
};

inline TraceCounts CountUnderRoot(const Profile& p, const std::string& root) {
  TraceCounts out;
  const auto calls_type = p.ValueIndex("calls");
  const auto wall_type = p.ValueIndex("wall");
  if (!calls_type || !wall_type) return out;
  for (const ThreadRecord& t : p.threads) {
    const auto& nodes = t.tree.nodes();
    const std::vector<uint8_t> under = UnderRoot(p, t, root);
    std::vector<uint64_t> incl(nodes.size(), 0);
    for (uint32_t v = 1; v < nodes.size(); ++v) incl[v] = t.tree.value(v, *wall_type);
    for (uint32_t v = static_cast<uint32_t>(nodes.size()); v-- > 1;) incl[nodes[v].parent] += incl[v];
    for (uint32_t v = 1; v < nodes.size(); ++v) {
      const std::string& name = p.frames.at(nodes[v].frame).symbol;
      const uint64_t c = t.tree.value(v, *calls_type);
      if (under[v]) {
        out.calls[name] += c;
        out.incl_wall[name] += incl[v];
        out.wall_under_root += t.tree.value(v, *wall_type);
      } else {
        out.calls_outside += c;
      }
      if (name == root && !under[nodes[v].parent]) out.root_calls[t.tid] += c;
    }
  }
  return out;
}

inline Profile LoadCapture(const std::string& path) {
  auto p = ReadCapture(path);
  EXPECT_TRUE(p.ok()) << (p.ok() ? "" : p.error().message);
  return p.ok() ? std::move(p).value() : Profile{};
}

// Root-first symbol names of every sampled stack of threads matching `keep`, with counts.
// `metric` (model/metric.h) weighs them; samples by default.
template <typename Pred>
std::map<std::vector<std::string>, uint64_t> Stacks(const Profile& p, Pred keep,
                                                    const char* metric_name = "samples") {
  std::map<std::vector<std::string>, uint64_t> out;
  auto metric = arcprof::model::Metric::Select(p, metric_name);
  EXPECT_TRUE(metric.ok()) << (metric.ok() ? "" : metric.error().message);
  if (!metric.ok()) return out;
  for (size_t t = 0; t < p.threads.size(); ++t) {
    if (!keep(p.threads[t])) continue;
    const CallTree& tree = p.threads[t].tree;
    const auto& nodes = tree.nodes();
    const std::vector<uint64_t> values = metric->Values(p.threads[t]);
    for (size_t n = 1; n < nodes.size(); ++n) {
      const uint64_t value = values[n];
      if (value == 0) continue;
      std::vector<std::string> path;
      for (size_t cur = n; cur != 0; cur = nodes[cur].parent) {
        const FrameRecord& f = p.frames.at(nodes[cur].frame);
        path.push_back(f.symbol.empty() ? "[unknown]" : f.symbol);
      }
      std::reverse(path.begin(), path.end());
      out[path] += value;
    }
  }
  return out;
}

// Leaf symbol -> samples for threads matching `keep`.
template <typename Pred>
std::map<std::string, uint64_t> LeafCounts(const Profile& p, Pred keep) {
  std::map<std::string, uint64_t> out;
  for (const auto& [stack, n] : Stacks(p, keep)) out[stack.back()] += n;
  return out;
}

// Whether an arcprof's stderr says the JVM `pid` has its agent: attached by
// this arcprof, or found already there. Another arcprof on the machine (a
// continuous daemon attaches every JVM within a second of its start) may have
// attached it first; the names come from the same jitdump either way.
inline bool JvmHasAgent(const std::string& arcprof_stderr, pid_t pid) {
  const std::string id = std::to_string(pid);
  return arcprof_stderr.find("attached to JVM " + id + "\n") != std::string::npos ||
         arcprof_stderr.find("JVM " + id + " already has the agent") != std::string::npos;
}

// ------------------------------------------------------------ this run's BPF
// Another arcprof may run on the same machine: a `continuous` daemon, another
// user's recording, another engineer's soak. "Nothing stays attached" is then
// checked for THIS run's programs, not for every program with our names.

// id -> name of every loaded BPF program (`bpftool prog list`).
inline std::map<uint32_t, std::string> LoadedBpfPrograms() {
  std::map<uint32_t, std::string> out;
  auto [code, text] = RunCapture({"/usr/sbin/bpftool", "prog", "list"});
  EXPECT_EQ(code, 0) << "bpftool prog list failed (Debian package bpftool)";
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || !isdigit(static_cast<unsigned char>(line[0]))) continue;
    const uint32_t id = static_cast<uint32_t>(std::strtoul(line.c_str(), nullptr, 10));
    const size_t at = line.find(" name ");
    std::string name;
    if (at != std::string::npos) name = line.substr(at + 6, line.find(' ', at + 6) - (at + 6));
    out[id] = name;
  }
  return out;
}

// Whether a program name is one of arcprof's (bpf/sample.bpf.c, bpf/ptt.bpf.c).
inline bool IsArcprofProgramName(const std::string& name) {
  return name == "on_sample" || name == "on_fork" || name == "on_switch" || name.rfind("ptt_", 0) == 0;
}

// What the processes of this machine hold: program id -> holders (a program
// fd, or a link fd naming its program, in /proc/PID/fdinfo), and the number
// of perf event fds per process.
struct HeldBpf {
  std::map<uint32_t, std::set<pid_t>> programs;
  std::map<pid_t, int> perf_events;
};
inline HeldBpf ScanHeldBpf() {
  HeldBpf out;
  std::error_code ec;
  for (const auto& proc : std::filesystem::directory_iterator("/proc", ec)) {
    const std::string pid_text = proc.path().filename();
    if (pid_text.empty() || !isdigit(static_cast<unsigned char>(pid_text[0]))) continue;
    const pid_t pid = static_cast<pid_t>(std::stol(pid_text));
    std::error_code fd_ec;
    for (const auto& fd : std::filesystem::directory_iterator(proc.path() / "fd", fd_ec)) {
      std::error_code link_ec;
      const std::string target = std::filesystem::read_symlink(fd.path(), link_ec);
      if (link_ec) continue;
      if (target == "anon_inode:[perf_event]") {
        ++out.perf_events[pid];
        continue;
      }
      if (target != "anon_inode:bpf-prog" && target != "anon_inode:bpf_link") continue;
      std::ifstream info(proc.path() / "fdinfo" / fd.path().filename());
      for (std::string line; std::getline(info, line);) {
        if (line.rfind("prog_id:", 0) == 0) out.programs[static_cast<uint32_t>(std::stoul(line.substr(8)))].insert(pid);
      }
    }
  }
  return out;
}

inline pid_t ParentOf(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const size_t close = stat.rfind(')');
  if (close == std::string::npos) return 0;
  std::istringstream rest(stat.substr(close + 1));
  std::string state;
  pid_t ppid = 0;
  rest >> state >> ppid;
  return ppid;
}

inline bool DescendsFrom(pid_t pid, pid_t ancestor) {
  for (int depth = 0; depth < 256 && pid > 0; ++depth, pid = ParentOf(pid)) {
    if (pid == ancestor) return true;
    if (pid == 1) break;
  }
  return false;
}

inline std::string ProcessLabel(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/comm");
  std::string comm;
  std::getline(in, comm);
  return std::to_string(pid) + "(" + comm + ")";
}

// The BPF programs one test run of arcprof loads. Made before the run starts:
// programs loaded then are not this run's. Afterwards, a program with one of
// arcprof's names that appeared since is this run's unless every process
// holding it is another arcprof instance: one this test did not start (not
// its descendant; a daemon of the machine, another user's recording), or one
// it started on purpose beside the run (Beside). A program nobody holds
// (pinned, or held by a link nobody holds) or held by a process this test
// started (a command that inherited a descriptor) is a leak.
class ArcprofRunPrograms {
 public:
  ArcprofRunPrograms() {
    for (const auto& [id, name] : LoadedBpfPrograms()) before_.insert(id);
  }

  // An arcprof this test runs on purpose next to the one under test.
  void Beside(pid_t other) { beside_.insert(other); }

  // The programs `pid` (the arcprof under test, running) holds now; they are
  // remembered and must all be gone at the end.
  std::set<uint32_t> HeldBy(pid_t pid) {
    std::set<uint32_t> out;
    for (const auto& [id, holders] : ScanHeldBpf().programs) {
      if (holders.count(pid)) out.insert(id);
    }
    seen_.insert(out.begin(), out.end());
    return out;
  }

  // True when nothing of this run stays loaded or open: no program it was
  // seen holding, no new program of ours left behind, no perf event held by a
  // process this test started (other than the arcprofs Beside). The kernel
  // frees programs asynchronously after their last reference: allow it 3 s.
  bool NothingLeft(std::string* why) {
    for (int attempt = 0; attempt < 30; ++attempt) {
      *why = Leftovers();
      if (why->empty()) return true;
      usleep(100 * 1000);
    }
    return false;
  }

 private:
  bool OtherInstance(pid_t holder) const {
    if (beside_.count(holder)) return true;
    char exe[4096];
    const ssize_t n = readlink(("/proc/" + std::to_string(holder) + "/exe").c_str(), exe, sizeof(exe) - 1);
    if (n <= 0) return false;
    // Copies of the binary go by other names (dm_arcprof_base): the name
    // contains "arcprof". A command that outlived its arcprof does not.
    std::string path(exe, static_cast<size_t>(n));
    const std::string base = path.substr(path.rfind('/') + 1);
    return base.find("arcprof") != std::string::npos && !DescendsFrom(holder, getpid());
  }

  std::string Leftovers() const {
    std::ostringstream out;
    const auto loaded = LoadedBpfPrograms();
    const HeldBpf held = ScanHeldBpf();
    for (const auto& [id, name] : loaded) {
      const bool seen = seen_.count(id) > 0;
      if (!seen && (before_.count(id) || !IsArcprofProgramName(name))) continue;
      auto it = held.programs.find(id);
      std::string holders;
      bool all_other = it != held.programs.end() && !seen;
      if (it != held.programs.end()) {
        for (pid_t pid : it->second) {
          holders += " " + ProcessLabel(pid);
          all_other = all_other && OtherInstance(pid);
        }
      }
      if (all_other) continue;
      out << "program " << id << " " << name << " is still loaded, held by"
          << (holders.empty() ? " no process (pinned?)" : holders) << "\n";
    }
    const pid_t self = getpid();
    for (const auto& [pid, count] : held.perf_events) {
      if (pid == self || beside_.count(pid) || !DescendsFrom(pid, self)) continue;
      out << ProcessLabel(pid) << ", started by this test, holds " << count << " perf event(s)\n";
    }
    return out.str();
  }

  std::set<uint32_t> before_;
  std::set<uint32_t> seen_;
  std::set<pid_t> beside_;
};

// Another arcprof on the machine, as a user's `continuous` daemon would be:
// started detached (setsid, its parent exits), so it is not a descendant of
// the test and is told apart from the run under test the way a real daemon
// is. Its stderr goes to a file; it is stopped with SIGTERM at the end.
class DetachedArcprof {
 public:
  DetachedArcprof(const std::string& dir, std::vector<std::string> argv) : log_(dir + "/daemon.log") {
    const std::string pidfile = dir + "/daemon.pid";
    std::string cmd = "exec /usr/bin/setsid";
    for (const std::string& a : argv) cmd += " '" + a + "'";
    cmd = "(" + cmd + " </dev/null >'" + log_ + "' 2>&1 & echo $! >'" + pidfile + "')";
    RunCapture({"/bin/sh", "-c", cmd});
    std::ifstream in(pidfile);
    in >> pid_;
  }
  ~DetachedArcprof() { Stop(); }
  pid_t pid() const { return pid_; }
  std::string log() const {
    std::ifstream in(log_);
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  }
  template <typename Pred>
  bool WaitForLog(Pred done, double timeout_s) const {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
    while (std::chrono::steady_clock::now() < deadline) {
      if (done(log())) return true;
      usleep(50 * 1000);
    }
    return done(log());
  }
  bool Running() const {
    if (pid_ <= 0) return false;
    std::ifstream in("/proc/" + std::to_string(pid_) + "/stat");
    std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const size_t close = stat.rfind(')');
    return close != std::string::npos && close + 2 < stat.size() && stat[close + 2] != 'Z';
  }
  // SIGTERM, then waits (its parent is not this test: it cannot be reaped
  // here). True when it exited within the timeout.
  bool Stop(double timeout_s = 30) {
    if (pid_ <= 0) return true;
    kill(pid_, SIGTERM);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
    while (Running() && std::chrono::steady_clock::now() < deadline) usleep(50 * 1000);
    const bool stopped = !Running();
    if (!stopped) kill(pid_, SIGKILL);
    pid_ = -1;
    return stopped;
  }

 private:
  std::string log_;
  pid_t pid_ = -1;
};

}  // namespace arcprof::testing
