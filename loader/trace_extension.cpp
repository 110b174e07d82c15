#include "loader/trace_extension.h"

#include <signal.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <deque>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <unordered_map>

#include "common/text.h"
#include "loader/sample_processor.h"
#include "loader/trace_code.h"
#include "loader/trace_probes.h"
#include "loader/trace_tree.h"
#include "model/profile.h"
#include "model/value_types.h"
#include "symbolize/symbolizer.h"

// The function the calibration probes: arcprof's own, called through a
// volatile pointer so that every call is a real call.
// The function the calibration probes, shaped like a frame-pointer
// function of the traced program: its first instruction (`push %rbp`, which
// the kernel emulates) and its `ret` (stepped out of line) cost what theirs
// do. Written in assembly so that no compiler flag changes it.
extern "C" void arcprof_trace_calibration_leaf();
asm(R"(
  .text
  .globl arcprof_trace_calibration_leaf
  .type arcprof_trace_calibration_leaf, @function
arcprof_trace_calibration_leaf:
  push %rbp
  mov %rsp, %rbp
  pop %rbp
  ret
  .size arcprof_trace_calibration_leaf, .-arcprof_trace_calibration_leaf
  .globl arcprof_trace_calibration_frameless
  .type arcprof_trace_calibration_frameless, @function
arcprof_trace_calibration_frameless:
  mov %rdi, %rax
  ret
  .size arcprof_trace_calibration_frameless, .-arcprof_trace_calibration_frameless
)");
// The same for a function whose first instruction the kernel steps out of
// line (a frameless leaf: `mov`, `sub`, ...), one more trap inside the call.
extern "C" void arcprof_trace_calibration_frameless();

namespace arcprof {
namespace {

using model::CallTree;
using model::FrameRecord;
using model::Profile;

constexpr uint32_t kCalibrationFunc = ARCPROF_TRACE_FUNC_MASK - 1;

uint64_t NowNs() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

// A file mapped executable by a process: the kernel's name of the file
// (map_files, what the probes attach to) and the path the symbolizer shows.
struct MappedCode {
  std::string attach_path;
  std::string path;
};

std::vector<MappedCode> ExecutableMappings(uint32_t pid) {
  std::vector<MappedCode> out;
  std::ifstream maps("/proc/" + std::to_string(pid) + "/maps");
  std::string line;
  std::set<std::string> seen;
  for (size_t lines = 0; std::getline(maps, line) && lines < 100000; ++lines) {
    // start-end perms offset dev inode path
    std::istringstream in(line);
    std::string range, perms, offset, dev, inode, path;
    in >> range >> perms >> offset >> dev >> inode;
    std::getline(in >> std::ws, path);
    if (perms.size() < 3 || perms[2] != 'x' || path.empty() || path[0] != '/') continue;
    if (!seen.insert(path).second) continue;
    out.push_back({"/proc/" + std::to_string(pid) + "/map_files/" + range, path});
  }
  return out;
}

// The program execvp would run for `name`.
std::string FindProgram(const std::string& name) {
  auto real = [](const std::string& p) -> std::string {
    char buf[PATH_MAX];
    return realpath(p.c_str(), buf) ? std::string(buf) : std::string();
  };
  if (name.find('/') != std::string::npos) return real(name);
  const char* env = getenv("PATH");
  std::string path = env ? env : "/usr/local/bin:/usr/bin:/bin";
  std::istringstream dirs(path);
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    const std::string candidate = (dir.empty() ? "." : dir) + "/" + name;
    if (access(candidate.c_str(), X_OK) == 0) return real(candidate);
  }
  return "";
}

class TraceExtension final : public RecordExtension {
 public:
  TraceExtension(TraceOptions options, std::string command0, bool quiet)
      : options_(std::move(options)), command0_(std::move(command0)), quiet_(quiet) {}

  std::string_view name() const override { return "trace"; }

  Result<void> Start(RecordContext& context) override {
    if (context.system_wide || context.target_pids.size() != 1) {
      return MakeError("trace: give one process (-p PID) or a command (-- CMD)");
    }
    pid_ = context.target_pids[0];
    launched_ = !command0_.empty();
    if (auto ok = FindRoot(); !ok) return ok.error();
    auto probes = TraceProbes::Load();
    if (!probes) return probes.error();
    probes_ = std::move(*probes);
    if (options_.calibrate) {
      for (int kind = 0; kind < 2; ++kind) {
        if (auto ok = Calibrate(kind); !ok) return ok.error();
      }
    }
    // A running process: what its samples show under the root first.
    if (!launched_ && options_.discover_s > 0) {
      const uint64_t until = NowNs() + static_cast<uint64_t>(options_.discover_s * 1e9);
      while (NowNs() < until) {
        if (context.drain) context.drain();
        timespec pause{0, 50'000'000};
        nanosleep(&pause, nullptr);
      }
      AddSampled(context.processor->window(), /*late=*/false);
    }
    for (uint32_t f : roots_) Want(f);
    probes_->AddProcess(pid_);
    if (auto ok = AttachPending(); !ok) {
      if (!launched_ && kill(static_cast<pid_t>(pid_), 0) != 0 && errno == ESRCH) {
        return MakeError("trace: process " + std::to_string(pid_) + " exited before the probes went in");
      }
      return ok.error();
    }
    start_ns_ = NowNs();
    if (!quiet_) {
      fprintf(stderr, "arcprof: tracing %s in %s: %zu functions probed\n",
              EscapeControl(options_.root).c_str(), EscapeControl(module_.path).c_str(), probed_.size());
    }
    return {};
  }

  void Poll(RecordContext& context) override {
    if (!probes_ || detached_) return;
    const uint64_t now = NowNs();
    if (now < next_scan_ns_) return;
    next_scan_ns_ = now + 1'000'000'000ull;
    AddSampled(context.processor->window(), /*late=*/true);
    if (auto ok = AttachPending(); !ok) {
      fprintf(stderr, "arcprof: %s\n", EscapeControl(ok.error().message).c_str());
    }
  }

  Result<void> CloseWindow(RecordContext& context, Profile& window, bool last) override {
    if (!last || !probes_) return {};
    end_ns_ = NowNs();
    probes_->DetachAll();
    detached_ = true;
    const std::vector<trace_node> nodes = probes_->Nodes();
    const trace_counters counters = probes_->Counters();
    probes_.reset();
    if (kill(static_cast<pid_t>(pid_), 0) != 0 && errno == ESRCH && !launched_) {
      options_.outcome->process_exited = true;
      options_.outcome->exited_pid = pid_;
    }
    uint64_t root_calls = 0;
    for (const trace_node& n : nodes) {
      if (n.tgid == pid_ && n.parent == 0) root_calls += n.calls;
    }
    if (root_calls == 0) {
      char secs[32];
      snprintf(secs, sizeof(secs), "%.1f", static_cast<double>(end_ns_ - start_ns_) / 1e9);
      return MakeError("trace: " + options_.root + " was not called in the " + secs + " s traced" +
                       (options_.outcome->process_exited ? " (process " + std::to_string(pid_) + " exited)" : ""));
    }
    BuildTree(context, window, nodes, counters);
    return {};
  }

 private:
  // The module defining the root and the root's functions in it.
  Result<void> FindRoot() {
    std::vector<MappedCode> candidates;
    if (launched_) {
      const std::string program = FindProgram(command0_);
      if (program.empty()) return MakeError("trace: cannot find the program " + command0_);
      candidates.push_back({program, program});
    } else {
      candidates = ExecutableMappings(pid_);
      if (candidates.empty()) return MakeError("trace: process " + std::to_string(pid_) + " maps no code file");
    }
    for (const MappedCode& c : candidates) {
      auto module = ReadCodeModule(c.attach_path);
      if (!module) continue;
      const std::vector<const CodeFunction*> found = FindFunctions(*module, options_.root);
      if (found.empty()) continue;
      module_ = std::move(*module);
      display_path_ = c.path;
      for (const CodeFunction* f : FindFunctions(module_, options_.root)) roots_.push_back(Id(*f));
      return {};
    }
    return MakeError("trace: no function " + options_.root + " in " +
                     (launched_ ? candidates[0].path
                                : "process " + std::to_string(pid_) + " (its program and libraries)") +
                     (launched_ ? " (a library's function: trace the running process with -p)" : ""));
  }

  // The id of a function of module_ (its index in functions_).
  uint32_t Id(const CodeFunction& f) {
    auto [it, added] = ids_.emplace(f.start, static_cast<uint32_t>(functions_.size()));
    if (added) functions_.push_back(&f);
    return it->second;
  }

  static bool IsColdPart(const CodeFunction& f) {
    return f.raw.find(".cold") != std::string::npos;
  }

  // Function f's code and that of its `.cold` parts (code of the same frame
  // the compiler moved away), decoded once.
  const DecodedFunction& Decoded(uint32_t f) {
    auto it = decoded_.find(f);
    if (it != decoded_.end()) return it->second;
    if (cold_parts_.empty()) {
      for (const CodeFunction& g : module_.functions) {
        if (const size_t cold = g.raw.find(".cold"); cold != std::string::npos) {
          cold_parts_[g.raw.substr(0, cold)].push_back(&g);
        }
      }
      cold_parts_[""];  // read once
    }
    DecodedFunction all;
    std::vector<const CodeFunction*> parts{functions_[f]};
    if (auto c = cold_parts_.find(functions_[f]->raw); c != cold_parts_.end()) {
      parts.insert(parts.end(), c->second.begin(), c->second.end());
    }
    for (const CodeFunction* part : parts) {
      auto code = module_.Read(part->start, part->end - part->start);
      if (!code) continue;
      const DecodedFunction d = DecodeFunction(*code, part->start);
      all.call_targets.insert(all.call_targets.end(), d.call_targets.begin(), d.call_targets.end());
      for (size_t i = 0; i < d.exits.size(); ++i) {
        const uint64_t target = d.exit_targets[i];
        if (target != 0) {
          // A jump out of the code is a tail call only to the start of
          // another function; a jump between f and its `.cold` parts stays
          // in the frame.
          const CodeFunction* callee = module_.At(target);
          if (!callee || IsColdPart(*callee) || callee == functions_[f]) continue;
          all.call_targets.push_back(target);
        }
        all.exits.push_back(d.exits[i]);
        all.exit_targets.push_back(target);
      }
      all.indirect_calls += d.indirect_calls;
      if (part == functions_[f]) all.first_is_push = d.first_is_push;
    }
    return decoded_.emplace(f, std::move(all)).first->second;
  }

  // Adds a function and everything it calls directly (call-site decoding)
  // to the functions to probe.
  void Want(uint32_t id) {
    std::deque<uint32_t> todo{id};
    while (!todo.empty()) {
      const uint32_t f = todo.front();
      todo.pop_front();
      if (wanted_.count(f) || wanted_.size() >= options_.max_functions) continue;
      wanted_.insert(f);
      pending_.push_back(f);
      const std::vector<uint64_t> targets = Decoded(f).call_targets;
      for (uint64_t target : targets) {
        const CodeFunction* callee = module_.At(target);
        if (callee && !IsColdPart(*callee)) todo.push_back(Id(*callee));
      }
    }
  }

  Result<void> AttachPending() {
    if (pending_.empty()) return {};
    std::vector<TraceProbe> entries, exits;
    for (uint32_t f : pending_) {
      const CodeFunction& fn = *functions_[f];
      const uint64_t off = module_.FileOffset(fn.start);
      if (off == 0) continue;
      const bool root = std::find(roots_.begin(), roots_.end(), f) != roots_.end();
      uint32_t cookie = f | (root ? ARCPROF_TRACE_ROOT_BIT : 0);
      for (uint64_t exit : Decoded(f).exits) {
        // A function that is one `ret`: its entry is its exit.
        if (exit == fn.start) {
          cookie |= ARCPROF_TRACE_RET_BIT;
        } else if (const uint64_t exit_off = module_.FileOffset(exit)) {
          exits.push_back({exit_off, f});
        }
      }
      entries.push_back({off, cookie});
      probed_.insert(f);
    }
    pending_.clear();
    auto links = probes_->Attach(module_.path, pid_, entries, exits);
    if (!links) return links.error();
    return {};
  }

  // Functions of module_ that samples show under a root frame.
  void AddSampled(const Profile& window, bool late) {
    std::vector<uint32_t> frame_func(window.frames.size(), UINT32_MAX);
    bool any_root = false;
    for (uint32_t i = 0; i < window.frames.size(); ++i) {
      const FrameRecord& fr = window.frames.at(i);
      if (fr.kind != FrameKind::kNative || fr.symbol.empty() || window.frames.module_of(fr) != display_path_) {
        continue;
      }
      if (const CodeFunction* f = module_.At(fr.address); f && !IsColdPart(*f)) {
        frame_func[i] = Id(*f);
        any_root |= std::find(roots_.begin(), roots_.end(), frame_func[i]) != roots_.end();
      }
    }
    if (!any_root) return;
    size_t added = 0;
    for (const model::ThreadRecord& t : window.threads) {
      if (t.pid != pid_) continue;
      const auto& nodes = t.tree.nodes();
      std::vector<uint8_t> under(nodes.size(), 0);
      for (uint32_t v = 1; v < nodes.size(); ++v) {
        const uint32_t frame = nodes[v].frame;
        const uint32_t f = frame < frame_func.size() ? frame_func[frame] : UINT32_MAX;
        const bool is_root = f != UINT32_MAX && std::find(roots_.begin(), roots_.end(), f) != roots_.end();
        under[v] = under[nodes[v].parent] || is_root;
        if (under[nodes[v].parent] && f != UINT32_MAX && !wanted_.count(f)) {
          Want(f);
          ++added;
        }
      }
    }
    if (late) added_late_ += added;
    if (late && added > 0 && !quiet_) {
      fprintf(stderr, "arcprof: trace: %zu functions reached under %s added (counted from now on)\n", added,
              EscapeControl(options_.root).c_str());
    }
  }

  // Each probed call's own cost, measured on arcprof's own leaf function:
  // o_in_ lands inside the call's measured time, o_out_ in its caller's.
  Result<void> Calibrate(int kind) {
    void (*volatile leaf)() = kind == 0 ? arcprof_trace_calibration_leaf : arcprof_trace_calibration_frameless;
    const uint64_t address = reinterpret_cast<uint64_t>(leaf);
    std::ifstream maps("/proc/self/maps");
    std::string line, path;
    uint64_t file_offset = 0;
    while (std::getline(maps, line)) {
      uint64_t start = 0, end = 0, pgoff = 0;
      char perms[8] = {};
      char file[4096] = {};
      if (sscanf(line.c_str(), "%" SCNx64 "-%" SCNx64 " %7s %" SCNx64 " %*s %*s %4095[^\n]", &start, &end, perms,
                 &pgoff, file) < 4) {
        continue;
      }
      if (address >= start && address < end) {
        path = file;
        file_offset = address - start + pgoff;
        break;
      }
    }
    if (path.empty()) return MakeError("trace: calibration: arcprof's own code is not in a file");
    const DecodedFunction d = DecodeFunction(
        std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(address), 64), address);
    uint64_t ret = 0;
    for (size_t i = 0; i < d.exits.size(); ++i) {
      if (d.exit_targets[i] == 0) {
        ret = d.exits[i];
        break;
      }
    }
    if (ret == 0) return MakeError("trace: calibration: no ret in the calibration function");
    // A probed call costs 1-50 us (a VM's traps are the slow ones): 5 x 2000
    // calls take at most half a second.
    constexpr int kRounds = 5;
    constexpr int kCalls = 2000;
    auto run = [&] {
      const uint64_t t0 = NowNs();
      for (int i = 0; i < kCalls; ++i) leaf();
      return static_cast<double>(NowNs() - t0) / kCalls;
    };
    std::vector<double> bare, probed;
    for (int r = 0; r < kRounds; ++r) bare.push_back(run());
    const uint32_t self = static_cast<uint32_t>(getpid());
    probes_->AddProcess(self);
    auto links = probes_->Attach(path, self, {{file_offset, (kCalibrationFunc - kind) | ARCPROF_TRACE_ROOT_BIT}},
                                 {{file_offset + (ret - address), (kCalibrationFunc - kind)}});
    if (!links) {
      probes_->RemoveProcess(self);
      return links.error();
    }
    // Per round: the time of a call from outside, and the time the probes
    // measured inside it.
    std::vector<double> inside_call;
    uint64_t returns = 0, incl = 0;
    for (int r = 0; r < kRounds; ++r) {
      probed.push_back(run());
      uint64_t now_returns = 0, now_incl = 0;
      for (const trace_node& n : probes_->Nodes()) {
        if (n.tgid == self && n.func == (kCalibrationFunc - kind)) {
          now_returns += n.returns;
          now_incl += n.incl_ns;
        }
      }
      if (now_returns > returns) {
        inside_call.push_back(static_cast<double>(now_incl - incl) / static_cast<double>(now_returns - returns));
      }
      returns = now_returns;
      incl = now_incl;
    }
    probes_->Detach(*links);
    probes_->RemoveProcess(self);
    for (int r = 0; r < kRounds; ++r) bare.push_back(run());
    // The least of the rounds: a probe's cost without the interference a
    // loaded machine adds, which also slows the traced code itself; taking
    // more would take out time the program spent.
    const double bare_call = *std::min_element(bare.begin(), bare.end());
    const double total = std::max(0.0, *std::min_element(probed.begin(), probed.end()) - bare_call);
    const double inside =
        inside_call.empty() ? 0.0 : std::max(0.0, *std::min_element(inside_call.begin(), inside_call.end()) - bare_call);
    o_in_[kind] = std::min(inside, total);
    o_out_[kind] = total - o_in_[kind];
    calibrated_ = true;
    return {};
  }

  FrameRecord FrameOf(Profile& window, uint32_t f) {
    FrameRecord r;
    r.module = window.frames.InternModule(display_path_);
    r.symbol = functions_[f]->name;
    r.address = functions_[f]->start;
    r.kind = FrameKind::kNative;
    return r;
  }

  void BuildTree(RecordContext& context, Profile& window, const std::vector<trace_node>& nodes,
                 const trace_counters& counters) {
    const size_t calls_type = window.DeclareValue(model::kTraceCalls.type());
    const size_t wall_type = window.DeclareValue(model::kTraceWallNs.type());
    // Frames of the probed functions, and which frames are a root.
    std::unordered_map<uint32_t, uint32_t> frames;
    auto frame_of = [&](uint32_t f) {
      auto it = frames.find(f);
      if (it == frames.end()) it = frames.emplace(f, window.frames.Intern(FrameOf(window, f))).first;
      return it->second;
    };
    for (uint32_t f : roots_) frame_of(f);
    std::vector<uint8_t> is_root(window.frames.size(), 0);
    for (uint32_t f : roots_) is_root[frame_of(f)] = 1;
    // Calls below each node (calibration: every probed call inside a node's
    // time carries its probes' cost).
    std::vector<double> child_take(nodes.size(), 0);
    for (const trace_node& n : nodes) {
      if (n.parent == 0 || n.parent - 1 >= nodes.size() || n.func >= functions_.size()) continue;
      child_take[n.parent - 1] += o_out_[Decoded(n.func).first_is_push ? 0 : 1] * static_cast<double>(n.calls);
    }
    std::vector<uint32_t> tree_node(nodes.size(), CallTree::kNoNode);
    std::vector<uint32_t> thread_of(nodes.size(), UINT32_MAX);
    std::vector<uint64_t> taken(calibrated_ ? nodes.size() : 0, 0);
    std::unordered_map<uint32_t, TraceThread> thread_context;
    TraceTotals totals;
    for (uint32_t id = 0; id < nodes.size(); ++id) {
      const trace_node& n = nodes[id];
      if (n.tgid != pid_ || n.func >= functions_.size() || n.calls == 0) continue;
      uint32_t parent_tree = 0;
      uint32_t t = UINT32_MAX;
      if (n.parent == 0) {
        auto it = thread_context.find(n.tid);
        if (it == thread_context.end()) {
          it = thread_context.emplace(n.tid, TraceThreadOf(context, window, pid_, n.tid, is_root)).first;
        }
        t = it->second.index;
        for (uint32_t frame : it->second.context) parent_tree = window.threads[t].tree.Child(parent_tree, frame);
      } else {
        const uint32_t p = n.parent - 1;
        if (p >= nodes.size() || tree_node[p] == CallTree::kNoNode) continue;
        t = thread_of[p];
        parent_tree = tree_node[p];
      }
      CallTree& tree = window.threads[t].tree;
      const uint32_t v = tree.Child(parent_tree, frame_of(n.func));
      tree_node[id] = v;
      thread_of[id] = t;
      // Calibration: o_in per returned call of this node, o_out per call
      // made from it; never below zero.
      const int kind = Decoded(n.func).first_is_push ? 0 : 1;
      const double take = calibrated_ ? o_in_[kind] * static_cast<double>(n.returns) + child_take[id] : 0.0;
      const uint64_t took = AddTraceValues(tree, v, calls_type, wall_type, n.calls, n.self_ns, n.unreturned, take, &totals);
      if (calibrated_) taken[id] = took;
    }
    // A calibration that would take out at least all the time the probes
    // measured did not measure this run's probes (a probe's cost on a loaded
    // VM varies severalfold from one second to the next): the times are then
    // given as measured, and the report says so.
    const double estimated_cost = totals.estimated;
    const bool apply_calibration = !calibrated_ || totals.measured == 0 || estimated_cost < static_cast<double>(totals.measured);
    if (!apply_calibration) {
      for (uint32_t id = 0; id < nodes.size(); ++id) {
        if (taken[id] != 0) window.threads[thread_of[id]].tree.Add(tree_node[id], 0, wall_type, taken[id]);
      }
      totals.removed = 0;
    }
    const uint64_t measured = totals.measured, removed = totals.removed, calls = totals.calls,
                   unreturned = totals.unreturned;
    auto& c = window.counters;
    c["trace.functions_probed"] = static_cast<int64_t>(probed_.size());
    c["trace.functions_added_late"] = static_cast<int64_t>(added_late_);
    c["trace.calls"] = static_cast<int64_t>(calls);
    c["trace.unreturned_calls"] = static_cast<int64_t>(unreturned);
    c["trace.lost_nodes"] = static_cast<int64_t>(counters.lost_nodes);
    c["trace.depth_overflow"] = static_cast<int64_t>(counters.depth_overflow);
    c["trace.no_storage"] = static_cast<int64_t>(counters.no_storage);
    c["trace.measured_ns"] = static_cast<int64_t>(measured);
    c["trace.calibration_removed_ns"] = static_cast<int64_t>(removed);
    c["trace.calibration_not_applied"] = calibrated_ && !apply_calibration ? 1 : 0;
    c["trace.calibration_in_ps"] = static_cast<int64_t>(o_in_[0] * 1000);
    c["trace.calibration_out_ps"] = static_cast<int64_t>(o_out_[0] * 1000);
    c["trace.calibration_frameless_in_ps"] = static_cast<int64_t>(o_in_[1] * 1000);
    c["trace.calibration_frameless_out_ps"] = static_cast<int64_t>(o_out_[1] * 1000);
    if (!quiet_) {
      fprintf(stderr, "arcprof: trace: %" PRIu64 " calls of %zu functions under %s", calls, probed_.size(),
              EscapeControl(options_.root).c_str());
      if (unreturned) fprintf(stderr, ", %" PRIu64 " never returned", unreturned);
      fprintf(stderr, "\n");
      if (calibrated_ && !apply_calibration) {
        fprintf(stderr,
                "arcprof: trace: calibration %.0f ns per probed call would take out %.3f ms of the %.3f ms "
                "measured: not applied, times are as measured (probe costs varied during the trace)\n",
                o_in_[0] + o_out_[0], estimated_cost / 1e6, static_cast<double>(measured) / 1e6);
      } else if (calibrated_) {
        fprintf(stderr,
                "arcprof: trace: calibration %.0f ns per probed call (%.0f in the call, %.0f in its caller; "
                "%.0f, %.0f and %.0f for functions not starting with push): %.3f ms of %.3f ms measured "
                "taken out\n",
                o_in_[0] + o_out_[0], o_in_[0], o_out_[0], o_in_[1] + o_out_[1], o_in_[1], o_out_[1],
                static_cast<double>(removed) / 1e6, static_cast<double>(measured) / 1e6);
      }
      if (counters.lost_nodes || counters.depth_overflow || counters.no_storage) {
        fprintf(stderr,
                "arcprof: trace: %llu calls not counted (%llu: call tree full, %llu: deeper than %d, %llu: no "
                "stack)\n",
                static_cast<unsigned long long>(counters.lost_nodes + counters.depth_overflow + counters.no_storage),
                static_cast<unsigned long long>(counters.lost_nodes),
                static_cast<unsigned long long>(counters.depth_overflow), ARCPROF_TRACE_MAX_DEPTH,
                static_cast<unsigned long long>(counters.no_storage));
      }
    }
  }

  TraceOptions options_;
  std::string command0_;
  bool quiet_ = false;
  bool launched_ = false;
  uint32_t pid_ = 0;
  CodeModule module_;
  std::string display_path_;
  std::vector<const CodeFunction*> functions_;  // function id -> function of module_
  std::unordered_map<uint64_t, uint32_t> ids_;  // start -> function id
  std::vector<uint32_t> roots_;
  std::set<uint32_t> wanted_;
  std::set<uint32_t> probed_;
  std::vector<uint32_t> pending_;
  std::unordered_map<uint32_t, DecodedFunction> decoded_;
  std::unordered_map<std::string, std::vector<const CodeFunction*>> cold_parts_;
  std::unique_ptr<TraceProbes> probes_;
  bool detached_ = false;
  bool calibrated_ = false;
  // Per kind of first instruction: 0 `push` (emulated), 1 anything else.
  double o_in_[2] = {0, 0}, o_out_[2] = {0, 0};
  size_t added_late_ = 0;
  uint64_t start_ns_ = 0, end_ns_ = 0, next_scan_ns_ = 0;
};

}  // namespace

std::unique_ptr<RecordExtension> MakeTraceExtension(const TraceOptions& options, std::string command0,
                                                    bool quiet) {
  return std::make_unique<TraceExtension>(options, std::move(command0), quiet);
}

}  // namespace arcprof
