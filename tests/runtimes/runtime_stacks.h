// What the runtime tests read from a capture: the sampled user stacks of a
// program's threads with its interpreter frames marked, and the counters;
// and the checks every runtime's tests share.
#pragma once

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "tests/loader/runtime_util.h"

namespace arcprof::testing {

struct StackFrame {
  std::string name;
  bool runtime = false;  // a frame of the program's own interpreted code
  uint32_t line = 0;     // a runtime frame's source line
};

struct SampledStack {
  uint32_t tid = 0;
  bool main_thread = false;
  std::vector<StackFrame> frames;  // root first, user frames only
  uint64_t n = 0;
};

inline bool IsThreadStart(const std::string& name) {
  static const std::set<std::string> kRoots = {"_start", "start_thread", "clone3", "clone", "__clone3", "__clone"};
  return kRoots.count(name) > 0 || name.rfind("__libc_start_main", 0) == 0;
}

// Every sampled user stack of the threads whose command line holds
// `cmdline`; a frame is the program's when it is of `kind` (the runtime's)
// and its module (the source file) ends with `module_suffix`.
// With `pid`, only that process's threads (a whole machine may hold other
// processes running the same program). With `value` ("offcpu"), a stack's n
// is that value (ns off CPU) instead of samples.
inline std::vector<SampledStack> ProgramStacks(const Profile& p, std::string_view cmdline,
                                               std::string_view module_suffix, FrameKind kind, uint32_t pid = 0,
                                               std::string_view value = {}) {
  std::vector<SampledStack> out;
  size_t index = kSamplesValue;
  if (!value.empty()) {
    const auto found = p.ValueIndex(value);
    if (!found) return out;
    index = *found;
  }
  for (const ThreadRecord& t : p.threads) {
    if (t.cmdline.find(cmdline) == std::string::npos || (pid != 0 && t.pid != pid)) continue;
    const auto& nodes = t.tree.nodes();
    for (size_t n = 1; n < nodes.size(); ++n) {
      const uint64_t v = t.tree.value(static_cast<uint32_t>(n), index);
      if (v == 0) continue;
      SampledStack s{t.tid, t.tid == t.pid, {}, v};
      for (size_t cur = n; cur != 0; cur = nodes[cur].parent) {
        const FrameRecord& f = p.frames.at(nodes[cur].frame);
        if (f.kind == FrameKind::kKernel) continue;  // and off CPU's reason, a kernel pseudo-frame
        const bool runtime = f.kind == kind && p.frames.module_of(f).ends_with(module_suffix);
        s.frames.push_back({f.symbol.empty() ? "[unknown]" : f.symbol, runtime, runtime ? SourceLine(f.address) : 0});
      }
      std::reverse(s.frames.begin(), s.frames.end());
      out.push_back(std::move(s));
    }
  }
  return out;
}

inline bool ReachesThreadStart(const SampledStack& s) {
  return (!s.frames.empty() && IsThreadStart(s.frames[0].name)) ||
         (s.frames.size() > 1 && IsThreadStart(s.frames[1].name));
}

// The program's frames of a stack, root first.
inline std::vector<std::string> ProgramFrames(const SampledStack& s) {
  std::vector<std::string> out;
  for (const StackFrame& f : s.frames) {
    if (f.runtime) out.push_back(f.name);
  }
  return out;
}

// What the runtime tests measure of the 3:1 program (split.py, split.js):
// the main thread's samples in the program's code, the alpha share, the
// share whose program frames are exactly `top -> drive -> alpha|beta` and
// reach thread start; the second thread's samples (side -> gamma, or any
// off the main thread without drive), those with its own chain reaching
// thread start, and those naming the main thread's code (none expected).
struct SplitMeasures {
  uint64_t main = 0;
  uint64_t alpha = 0, beta = 0;
  uint64_t full = 0;
  uint64_t side = 0, side_full = 0;
  uint64_t side_with_main = 0;
  double split() const { return alpha + beta ? static_cast<double>(alpha) / (alpha + beta) : 0; }
  double full_share() const { return main ? static_cast<double>(full) / main : 0; }
  double side_share() const { return side ? static_cast<double>(side_full) / side : 0; }
};

// `top`: the program's outermost frame ("<module>", "(top level)").
inline SplitMeasures MeasureSplit(const std::vector<SampledStack>& stacks, std::string_view top) {
  SplitMeasures m;
  for (const SampledStack& s : stacks) {
    const auto f = ProgramFrames(s);
    if (f.empty()) continue;
    const bool has_drive = std::find(f.begin(), f.end(), "drive") != f.end();
    const auto at = std::find(f.begin(), f.end(), "side");
    if (at != f.end() || (!s.main_thread && !has_drive)) {
      m.side += s.n;
      if (at != f.end() && at + 1 != f.end() && *(at + 1) == "gamma" && ReachesThreadStart(s)) m.side_full += s.n;
      if (has_drive) m.side_with_main += s.n;
      continue;
    }
    m.main += s.n;
    if (f.back() == "alpha") m.alpha += s.n;
    if (f.back() == "beta") m.beta += s.n;
    if (f.size() == 3 && f[0] == top && f[1] == "drive" && (f[2] == "alpha" || f[2] == "beta") &&
        ReachesThreadStart(s)) {
      m.full += s.n;
    }
  }
  return m;
}

// The line of the first line of `path` that ends with `marker`.
inline uint32_t LineOf(const std::string& path, const std::string& marker) {
  std::ifstream in(path);
  std::string text;
  for (uint32_t n = 1; std::getline(in, text); ++n) {
    if (text.ends_with(marker)) return n;
  }
  return 0;
}

inline int64_t Counter(const Profile& p, const std::string& name) {
  auto it = p.counters.find(name);
  return it == p.counters.end() ? 0 : it->second;
}

// The eight most sampled stacks (the program's frames marked with `tag`) and
// the counters with the given prefixes: what a failed expectation shows.
inline std::string DescribeStacks(const Profile& p, const std::vector<SampledStack>& stacks, std::string_view tag,
                                  const std::vector<std::string>& prefixes) {
  std::map<std::string, uint64_t> top;
  for (const SampledStack& s : stacks) {
    std::string line;
    for (const StackFrame& f : s.frames) line += (line.empty() ? "" : ";") + f.name + (f.runtime ? std::string(tag) : "");
    top[line] += s.n;
  }
  std::vector<std::pair<uint64_t, std::string>> sorted;
  for (auto& [k, v] : top) sorted.push_back({v, k});
  std::sort(sorted.rbegin(), sorted.rend());
  std::string out;
  for (size_t i = 0; i < sorted.size() && i < 8; ++i) out += std::to_string(sorted[i].first) + " " + sorted[i].second + "\n";
  for (const auto& [k, v] : p.counters) {
    for (const std::string& prefix : prefixes) {
      if (k.rfind(prefix, 0) == 0) out += k + "=" + std::to_string(v) + " ";
    }
  }
  return out;
}

// A copy of /bin/dash named as a runtime's binary (`binary`: "node",
// "python3.11"), recorded by `arcprof` while it runs a shell loop: not
// recognized (the runtime's `recognized` counter stays 0), recorded as any
// program.
inline void ExpectImpostorLeftAlone(const std::string& arcprof, const std::string& binary,
                                    const std::string& recognized) {
  TempDir tmp;
  const std::string fake = tmp.path(binary);
  std::filesystem::copy_file("/bin/dash", fake);
  std::filesystem::permissions(fake, std::filesystem::perms::owner_all);
  const std::string db = tmp.path("dash.db");
  Subprocess rec({arcprof, "record", "-q", "-o", db, "--", fake, "-c",
                  "i=0; while [ $i -lt 400000 ]; do i=$((i+1)); done"});
  ASSERT_EQ(rec.Wait(), 0) << rec.stderr_text();
  Profile p = LoadCapture(db);
  EXPECT_EQ(Counter(p, recognized), 0);
  EXPECT_EQ(Counter(p, "runtimes.samples"), 0);
  EXPECT_GT(Counter(p, "samples_total"), 50);
}

}  // namespace arcprof::testing
