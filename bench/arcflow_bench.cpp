// Building each arcflow report (xtree, xarc, xprof) from a synthetic capture of
// 1,000,000 samples over 100,000 distinct stacks, text rendered to a null
// stream. The target from the issue: faster than `perf report --stdio` over
// the same samples (0.59 s, 142 MiB measured here) and under 500 MB.
#include <benchmark/benchmark.h>
#include <sys/resource.h>

#include <cstdio>
#include <ostream>
#include <random>
#include <streambuf>
#include <string>
#include <unordered_set>
#include <vector>

#include "reports/arcflow.h"
#include "tests/layer_names.h"

namespace arcprof {
namespace {

constexpr int kFunctions = 5000;
constexpr int kStacks = 100000;
constexpr uint64_t kSamples = 1000000;
constexpr int kThreads = 8;
constexpr size_t kMaxDepth = 64;

class NullBuffer : public std::streambuf {
 protected:
  int overflow(int c) override { return c; }
  std::streamsize xsputn(const char*, std::streamsize n) override { return n; }
};

uint64_t HashStack(const std::vector<uint32_t>& stack) {
  uint64_t h = 1469598103934665603ull;
  for (uint32_t f : stack) h = (h ^ f) * 1099511628211ull;
  return h;
}

// Stacks grow from prefixes of earlier stacks, as real call trees do, with a
// skewed choice of functions so that some are hot and recursion happens.
Profile MakeProfile() {
  Profile profile;
  profile.meta.frequency_hz = 999;
  std::vector<uint32_t> frame_ids;
  for (int i = 0; i < kFunctions; ++i) {
    FrameRecord f;
    f.module = profile.frames.InternModule("/usr/lib/libbench.so");
    f.symbol = "bench::Function" + std::to_string(i) + "(int, std::string const&)";
    f.address = 0x1000 + 0x40 * static_cast<uint64_t>(i);
    f.kind = FrameKind::kNative;
    frame_ids.push_back(profile.frames.Intern(f));
  }
  for (int t = 0; t < kThreads; ++t) {
    const uint32_t index = profile.ThreadIndex(1000, 1000 + t);
    profile.threads[index].comm = "bench-" + std::to_string(t);
  }

  std::mt19937_64 rng(42);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  auto skewed_function = [&] {
    const double u = unit(rng);
    return frame_ids[static_cast<size_t>(kFunctions * u * u * u)];
  };
  std::vector<std::vector<uint32_t>> stacks;
  stacks.reserve(kStacks);
  std::unordered_set<uint64_t> seen;
  while (stacks.size() < static_cast<size_t>(kStacks)) {
    std::vector<uint32_t> stack;
    if (stacks.empty() || unit(rng) < 0.02) {
      stack.push_back(frame_ids[rng() % 16]);  // a few entry points
    } else {
      const auto& prefix = stacks[rng() % stacks.size()];
      stack.assign(prefix.begin(), prefix.begin() + 1 + static_cast<long>(rng() % prefix.size()));
    }
    const size_t extra = 1 + rng() % 6;
    for (size_t i = 0; i < extra && stack.size() < kMaxDepth; ++i) stack.push_back(skewed_function());
    if (seen.insert(HashStack(stack)).second) stacks.push_back(std::move(stack));
  }

  std::vector<uint64_t> counts(stacks.size(), 1);
  for (uint64_t i = stacks.size(); i < kSamples; ++i) {
    const double u = unit(rng);
    counts[static_cast<size_t>(static_cast<double>(stacks.size()) * u * u)] += 1;
  }
  for (size_t i = 0; i < stacks.size(); ++i) {
    profile.threads[i % kThreads].tree.AddStack(stacks[i], counts[i]);
  }
  return profile;
}

const Profile& BenchProfile() {
  static const Profile profile = MakeProfile();
  return profile;
}

double PeakRssMiB() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_maxrss) / 1024.0;  // ru_maxrss is in KiB
}

void BM_BuildModel(benchmark::State& state) {
  const Profile& profile = BenchProfile();
  size_t nodes = 0;
  for (auto _ : state) {
    ArcflowProfile model = ArcflowFromProfile(profile, {}, false);
    nodes = model.tree.size();
    benchmark::DoNotOptimize(model);
  }
  state.counters["nodes"] = static_cast<double>(nodes);
  state.counters["samples"] = static_cast<double>(profile.total_samples());
  state.counters["peak_rss_MiB"] = PeakRssMiB();
}

void RenderView(benchmark::State& state, ArcflowView view) {
  const Profile& profile = BenchProfile();
  NullBuffer null_buffer;
  std::ostream null_stream(&null_buffer);
  ArcflowOptions options;
  options.view = view;
  for (auto _ : state) {
    Result<void> r = RenderArcflowView(profile, options, null_stream);
    if (!r) state.SkipWithError(r.error().message.c_str());
  }
  state.counters["peak_rss_MiB"] = PeakRssMiB();
}

void BM_Xtree(benchmark::State& state) { RenderView(state, ArcflowView::kXtree); }
void BM_Xarc(benchmark::State& state) { RenderView(state, ArcflowView::kXarc); }
void BM_Xprof(benchmark::State& state) { RenderView(state, ArcflowView::kXprof); }

BENCHMARK(BM_BuildModel)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Xtree)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Xarc)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Xprof)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace arcprof

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  std::printf("peak RSS of the whole run (synthetic capture included): %.1f MiB\n",
              arcprof::PeakRssMiB());
  return 0;
}
