#include "loader/java_trace.h"

#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cinttypes>
#include <cstdio>
#include <cstring>

#include "common/scoped_fd.h"
#include "common/text.h"
#include "loader/sample_processor.h"
#include "loader/trace_tree.h"
#include "model/profile.h"
#include "model/value_types.h"
#include "runtimes/java/java_attach.h"

namespace arcprof {
namespace {

using model::CallTree;
using model::FrameRecord;
using model::Profile;

uint64_t NowNs() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

// The control connection: a socket the agent connects to, in a folder of the
// JVM's /tmp (reached through /proc/PID/root) that only the JVM's user opens.
class ControlSocket {
 public:
  ~ControlSocket() { RemoveFiles(); }

  // Listens; *inside is the path the agent sees.
  Result<void> Listen(uint32_t pid, uint32_t uid, uint32_t gid, std::string* inside) {
    const std::string root = "/proc/" + std::to_string(pid) + "/root";
    std::string dir = root + "/tmp/.arcprof-trace-XXXXXX";
    if (!mkdtemp(dir.data())) return MakeError("trace: cannot make a folder in the JVM's /tmp: " + std::string(strerror(errno)));
    dir_ = dir;
    path_ = dir + "/s";
    inside_ = dir.substr(root.size()) + "/s";
    listen_ = ScopedFd(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    if (path_.size() >= sizeof(addr.sun_path) || inside_.size() >= sizeof(addr.sun_path)) {
      return MakeError("trace: the control socket's path is too long");
    }
    memcpy(addr.sun_path, path_.c_str(), path_.size());
    if (!listen_.valid() || bind(listen_.get(), reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
        listen(listen_.get(), 4) != 0) {
      return MakeError("trace: cannot listen on " + path_ + ": " + strerror(errno));
    }
    // Only the JVM's user (and root) may connect; the peer's pid is checked too.
    if (chown(dir_.c_str(), uid, gid) != 0 || chown(path_.c_str(), uid, gid) != 0 || chmod(path_.c_str(), 0600) != 0) {
      return MakeError("trace: cannot give the control socket to the JVM's user: " + std::string(strerror(errno)));
    }
    *inside = inside_;
    return {};
  }

  // The agent's connection from process pid, within timeout_s.
  Result<ScopedFd> Accept(uint32_t pid, double timeout_s, const std::function<void()>& drain) {
    const uint64_t until = NowNs() + static_cast<uint64_t>(timeout_s * 1e9);
    while (NowNs() < until) {
      if (drain) drain();
      pollfd p{listen_.get(), POLLIN, 0};
      if (poll(&p, 1, 100) <= 0) continue;
      ScopedFd conn(accept4(listen_.get(), nullptr, nullptr, SOCK_CLOEXEC));
      if (!conn.valid()) continue;
      ucred cred{};
      socklen_t len = sizeof(cred);
      if (getsockopt(conn.get(), SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0 || static_cast<uint32_t>(cred.pid) != pid) {
        continue;  // somebody else's connection
      }
      RemoveFiles();
      return conn;
    }
    return MakeError("trace: the agent in JVM " + std::to_string(pid) + " did not connect (see the JVM's stderr)");
  }

  void RemoveFiles() {
    if (!path_.empty()) unlink(path_.c_str());
    if (!dir_.empty()) rmdir(dir_.c_str());
    path_.clear();
    dir_.clear();
  }

 private:
  ScopedFd listen_;
  std::string dir_, path_, inside_;
};

class JavaTraceExtension final : public RecordExtension {
 public:
  JavaTraceExtension(TraceOptions options, bool launched, bool quiet)
      : options_(std::move(options)), launched_(launched), quiet_(quiet) {}

  std::string_view name() const override { return "java-trace"; }

  Result<void> Start(RecordContext& context) override {
    if (context.system_wide || context.target_pids.size() != 1) {
      return MakeError("trace: give one process (-p PID) or a command (-- CMD)");
    }
    pid_ = context.target_pids[0];
    auto root = ParseJavaRoot(options_.root);
    if (!root) return MakeError("trace: " + options_.root + " does not name a Java method (pkg.Class.method)");
    root_ = *root;
    // A launched JVM is let run once every extension started: attached
    // from Poll when its signal handlers are in.
    if (launched_) {
      pending_ = true;
      waiting_since_ = NowNs();
      return {};
    }
    return Connect(context);
  }

  void Poll(RecordContext& context) override {
    if (!pending_) return;
    auto jvm = InspectJvm(pid_);
    const bool ready = jvm.ok() && jvm->hotspot && jvm->catches_sigquit;
    if (!ready) {
      if (NowNs() - waiting_since_ > 60'000'000'000ull) {
        pending_ = false;
        failed_ = "trace: process " + std::to_string(pid_) + " did not become an attachable HotSpot JVM in 60 s";
      }
      return;
    }
    pending_ = false;
    if (auto ok = Connect(context); !ok) {
      failed_ = ok.error().message;
      fprintf(stderr, "arcprof: %s\n", EscapeControl(failed_).c_str());
    }
  }

 private:
  // Attaches the agent with the control socket and waits for the root's probes.
  Result<void> Connect(RecordContext& context) {
    auto jvm = InspectJvm(pid_);
    if (!jvm.ok()) return MakeError("trace: process " + std::to_string(pid_) + " is not a JVM: " + jvm.error().message);
    if (!jvm->hotspot || !jvm->catches_sigquit) {
      return MakeError("trace: process " + std::to_string(pid_) + " is not a HotSpot JVM that can be attached to");
    }
    std::string inside;
    if (auto ok = socket_.Listen(pid_, jvm->uid, jvm->gid, &inside); !ok) return ok.error();
    JavaAttachOptions attach;
    attach.agent_options = "trace=" + inside;
    auto attached = AttachAgent(pid_, attach);
    for (int retry = 0; !attached && retry < 100 && attached.error().message.find(kJvmNotLiveYet) != std::string::npos;
         ++retry) {
      if (context.drain) context.drain();
      timespec pause{0, 100'000'000};
      nanosleep(&pause, nullptr);
      attached = AttachAgent(pid_, attach);
    }
    if (!attached) return MakeError("trace: " + attached.error().message);
    auto conn = socket_.Accept(pid_, 10, context.drain);
    if (!conn) return conn.error();
    conn_ = std::move(*conn);
    std::string line;
    if (!ReadLine(&line, 10, context.drain) || line.rfind("hello ", 0) != 0) {
      return MakeError("trace: the agent in JVM " + std::to_string(pid_) + " did not answer");
    }
    Send("root " + root_.klass + " " + root_.method);
    // Calibration and the root's probes: a few seconds on a busy machine.
    while (true) {
      if (!ReadLine(&line, 60, context.drain)) {
        return MakeError("trace: the agent in JVM " + std::to_string(pid_) + " stopped answering");
      }
      if (line.rfind("error ", 0) == 0) return MakeError("trace: " + EscapeControl(line.substr(6)));
      if (line.rfind("calib ", 0) == 0) {
        double in = 0, out = 0;
        // Taken out unless --no-calibration; a value no probe can cost is ignored.
        if (options_.calibrate && sscanf(line.c_str(), "calib %lf %lf", &in, &out) == 2 && in >= 0 && in < 1e6 &&
            out >= 0 && out < 1e6) {
          o_in_ = in;
          o_out_ = out;
        }
        continue;
      }
      if (line.rfind("started ", 0) == 0) {
        root_methods_ = strtoul(line.c_str() + 8, nullptr, 10);
        break;
      }
    }
    start_ns_ = NowNs();
    if (!quiet_) {
      if (root_methods_ == 0) {
        fprintf(stderr, "arcprof: tracing %s in JVM %u: its class is not loaded yet; probed when it loads\n",
                EscapeControl(options_.root).c_str(), pid_);
      } else {
        fprintf(stderr, "arcprof: tracing %s in JVM %u: %zu root methods probed, callees probed as they are reached\n",
                EscapeControl(options_.root).c_str(), pid_, root_methods_);
      }
    }
    return {};
  }

  Result<void> CloseWindow(RecordContext& context, Profile& window, bool last) override {
    if (!last) return {};
    if (!failed_.empty()) return MakeError(failed_);
    if (!conn_.valid()) {
      return MakeError("trace: " + options_.root + " was not called: JVM " + std::to_string(pid_) +
                       " could not be attached to before it ended");
    }
    end_ns_ = NowNs();
    Send("stop");
    JavaTraceReply reply;
    std::string line;
    // Taking the probes out retransforms every probed class: seconds at most.
    while (!reply.end && ReadLine(&line, 60, nullptr)) ParseJavaTraceLine(line, &reply);
    conn_ = ScopedFd();
    if (!reply.end && kill(static_cast<pid_t>(pid_), 0) != 0 && errno == ESRCH && !launched_) {
      options_.outcome->process_exited = true;
      options_.outcome->exited_pid = pid_;
    }
    uint64_t root_calls = 0;
    for (const JavaTraceNode& n : reply.nodes) {
      if (n.parent == 0) root_calls += n.calls;
    }
    if (root_calls == 0) {
      char secs[32];
      snprintf(secs, sizeof(secs), "%.1f", static_cast<double>(end_ns_ - start_ns_) / 1e9);
      std::string why = "trace: " + options_.root + " was not called in the " + secs + " s traced";
      if (options_.outcome->process_exited) why += " (process " + std::to_string(pid_) + " exited)";
      if (root_methods_ == 0) why += " (no class " + root_.klass + " was loaded)";
      return MakeError(why);
    }
    BuildTree(context, window, reply);
    return {};
  }

  void Send(const std::string& line) {
    const std::string out = line + "\n";
    size_t done = 0;
    while (done < out.size()) {
      const ssize_t n = send(conn_.get(), out.data() + done, out.size() - done, MSG_NOSIGNAL);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return;
      done += static_cast<size_t>(n);
    }
  }

  bool ReadLine(std::string* line, double timeout_s, const std::function<void()>& drain) {
    const uint64_t until = NowNs() + static_cast<uint64_t>(timeout_s * 1e9);
    while (true) {
      if (const size_t nl = in_.find('\n'); nl != std::string::npos) {
        *line = in_.substr(0, nl);
        in_.erase(0, nl + 1);
        return true;
      }
      if (in_.size() > kMaxJavaTraceLine || NowNs() > until) return false;
      if (drain) drain();
      pollfd p{conn_.get(), POLLIN, 0};
      const int r = poll(&p, 1, 100);
      if (r < 0 && errno != EINTR) return false;
      if (r <= 0) continue;
      // 8 KiB, not 64: drain() above runs the session's work under this
      // frame, and a 64 KiB frame was a sample's whole stack copy.
      char buf[8192];
      const ssize_t n = recv(conn_.get(), buf, sizeof(buf), 0);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return false;
      in_.append(buf, static_cast<size_t>(n));
    }
  }

  void BuildTree(RecordContext& context, Profile& window, const JavaTraceReply& reply) {
    const size_t calls_type = window.DeclareValue(model::kTraceCalls.type());
    const size_t wall_type = window.DeclareValue(model::kTraceWallNs.type());
    std::unordered_map<uint32_t, uint32_t> frames;
    auto frame_of = [&](uint32_t method) {
      auto it = frames.find(method);
      if (it != frames.end()) return it->second;
      FrameRecord r;
      auto name = reply.names.find(method);
      r.symbol = name != reply.names.end() ? name->second : "[method " + std::to_string(method) + "]";
      r.kind = FrameKind::kJit;
      return frames.emplace(method, window.frames.Intern(r)).first->second;
    };
    // The root's frames as sampled: JIT and interpreted frames of its name.
    std::vector<uint8_t> is_root(window.frames.size(), 0);
    for (uint32_t i = 0; i < window.frames.size(); ++i) {
      const FrameRecord& f = window.frames.at(i);
      if ((f.kind == FrameKind::kJit || f.kind == FrameKind::kInterpreted) && f.symbol == options_.root) is_root[i] = 1;
    }
    // Per thread: (node index) -> tree node; nodes arrive parents first.
    std::map<std::pair<uint32_t, uint32_t>, size_t> by_key;
    for (size_t i = 0; i < reply.nodes.size(); ++i) by_key[{reply.nodes[i].tid, reply.nodes[i].index}] = i;
    std::vector<double> child_calls(reply.nodes.size(), 0);
    for (const JavaTraceNode& n : reply.nodes) {
      if (n.parent == 0) continue;
      auto p = by_key.find({n.tid, n.parent - 1});
      if (p != by_key.end()) child_calls[p->second] += static_cast<double>(n.calls);
    }
    std::unordered_map<uint32_t, TraceThread> threads;
    std::vector<uint32_t> tree_node(reply.nodes.size(), CallTree::kNoNode);
    std::vector<uint32_t> thread_of(reply.nodes.size(), 0);
    TraceTotals totals;
    uint64_t thrown = 0;
    std::vector<size_t> order(reply.nodes.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
      return std::pair(reply.nodes[a].tid, reply.nodes[a].index) < std::pair(reply.nodes[b].tid, reply.nodes[b].index);
    });
    for (size_t i : order) {
      const JavaTraceNode& n = reply.nodes[i];
      if (n.calls == 0) continue;
      uint32_t parent_tree = 0, t = 0;
      if (n.parent == 0) {
        auto it = threads.find(n.tid);
        if (it == threads.end()) it = threads.emplace(n.tid, TraceThreadOf(context, window, pid_, n.tid, is_root)).first;
        t = it->second.index;
        for (uint32_t frame : it->second.context) parent_tree = window.threads[t].tree.Child(parent_tree, frame);
      } else {
        auto p = by_key.find({n.tid, n.parent - 1});
        if (p == by_key.end() || tree_node[p->second] == CallTree::kNoNode) continue;
        t = thread_of[p->second];
        parent_tree = tree_node[p->second];
      }
      CallTree& tree = window.threads[t].tree;
      const uint32_t v = tree.Child(parent_tree, frame_of(n.method));
      tree_node[i] = v;
      thread_of[i] = t;
      // Calibration: o_in per ended call of this node, o_out per call made from it.
      const double take = o_in_ * static_cast<double>(n.ended) + o_out_ * child_calls[i];
      AddTraceValues(tree, v, calls_type, wall_type, n.calls, n.self_ns, n.unreturned, take, &totals);
      thrown += n.thrown;
    }
    const uint64_t measured = totals.measured, removed = totals.removed, calls = totals.calls,
                   unreturned = totals.unreturned;
    auto& c = window.counters;
    auto counter = [&](const char* name) {
      auto it = reply.counters.find(name);
      return it == reply.counters.end() ? int64_t{0} : it->second;
    };
    c["trace.functions_probed"] = counter("methods_probed");
    c["trace.functions_skipped"] = counter("methods_skipped");
    c["trace.calls"] = static_cast<int64_t>(calls);
    c["trace.calls_ended_by_exception"] = static_cast<int64_t>(thrown);
    c["trace.unreturned_calls"] = static_cast<int64_t>(unreturned);
    c["trace.lost_nodes"] = counter("lost_calls");
    c["trace.depth_overflow"] = counter("depth_overflow");
    c["trace.mismatched_ends"] = counter("mismatched_ends");
    c["trace.measured_ns"] = static_cast<int64_t>(measured);
    c["trace.calibration_removed_ns"] = static_cast<int64_t>(removed);
    c["trace.calibration_in_ps"] = static_cast<int64_t>(o_in_ * 1000);
    c["trace.calibration_out_ps"] = static_cast<int64_t>(o_out_ * 1000);
    if (!quiet_) {
      fprintf(stderr, "arcprof: trace: %" PRIu64 " calls of %" PRId64 " methods under %s", calls,
              counter("methods_probed"), EscapeControl(options_.root).c_str());
      if (thrown) fprintf(stderr, ", %" PRIu64 " ended by an exception", thrown);
      if (unreturned) fprintf(stderr, ", %" PRIu64 " never returned", unreturned);
      fprintf(stderr, "\n");
      if (options_.calibrate) {
        fprintf(stderr,
                "arcprof: trace: calibration %.0f ns per probed call (%.0f in the call, %.0f in its caller): "
                "%.3f ms of %.3f ms measured taken out\n",
                o_in_ + o_out_, o_in_, o_out_, static_cast<double>(removed) / 1e6, static_cast<double>(measured) / 1e6);
      }
      if (counter("methods_skipped") > 0) {
        fprintf(stderr, "arcprof: trace: %" PRId64 " methods could not be probed (last: %s)\n",
                counter("methods_skipped"), EscapeControl(reply.last_skip).c_str());
      }
      const int64_t lost = counter("lost_calls") + counter("depth_overflow");
      if (lost) fprintf(stderr, "arcprof: trace: %" PRId64 " calls not counted (call tree full or too deep)\n", lost);
    }
  }

  TraceOptions options_;
  bool launched_ = false;
  bool quiet_ = false;
  uint32_t pid_ = 0;
  JavaRoot root_;
  ControlSocket socket_;
  ScopedFd conn_;
  std::string in_;
  size_t root_methods_ = 0;
  double o_in_ = 0, o_out_ = 0;
  uint64_t start_ns_ = 0, end_ns_ = 0;
  bool pending_ = false;  // a launched JVM not attached yet
  uint64_t waiting_since_ = 0;
  std::string failed_;
};

}  // namespace

bool IsJavaTrace(const std::string& root, uint32_t pid, const std::vector<std::string>& command) {
  if (!ParseJavaRoot(root)) return false;
  if (pid != 0) {
    auto jvm = InspectJvm(pid);
    return jvm.ok() && jvm->hotspot;
  }
  if (command.empty()) return false;
  const std::string& program = command[0];
  const std::string base = program.substr(program.rfind('/') == std::string::npos ? 0 : program.rfind('/') + 1);
  return base == "java";
}

std::unique_ptr<RecordExtension> MakeJavaTraceExtension(const TraceOptions& options, bool launched, bool quiet) {
  return std::make_unique<JavaTraceExtension>(options, launched, quiet);
}

}  // namespace arcprof
