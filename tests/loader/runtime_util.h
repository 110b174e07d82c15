// Shared helpers for runtime tests that run the real arcprof binary as root.
#pragma once

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
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

// True when none of our BPF programs is loaded (bpftool prog list). The kernel
// frees programs asynchronously after their last fd closes: allow it 3 s.
inline bool NoArcprofProgramsLoaded(std::string* listing) {
  for (int attempt = 0; attempt < 30; ++attempt) {
    auto [code, text] = RunCapture({"/usr/sbin/bpftool", "prog", "list"});
    *listing = text;
    if (text.find("name on_sample") == std::string::npos &&
        text.find("name on_fork") == std::string::npos &&
        text.find("name on_switch") == std::string::npos) {
      return true;
    }
    usleep(100 * 1000);
  }
  return false;
}

// True while at least one of our programs is loaded (no waiting).
inline bool ArcprofProgramsLoaded() {
  auto [code, text] = RunCapture({"/usr/sbin/bpftool", "prog", "list"});
  return text.find("name on_sample") != std::string::npos;
}

}  // namespace arcprof::testing
