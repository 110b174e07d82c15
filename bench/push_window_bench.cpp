// Encoding one 60 s window of a churning machine for push (SplitWindow: one
// gzipped pprof per series), the push thread's work per window besides
// reading the window back. The window: 12,000 short processes of one name
// (bench/churn_cpu.sh's churn, 200 a second), a quarter of them sampled,
// beside 40 other services with 50 stacks each, 49 Hz.
// Run: ./push_window_bench --benchmark_repetitions=5
#include <benchmark/benchmark.h>

#include <random>
#include <string>
#include <vector>

#include "model/profile.h"
#include "push/push_request.h"
#include "reports/pprof.h"

namespace arcprof {
namespace {

using namespace arcprof::model;

constexpr int kFunctions = 2000;
constexpr int kChurn = 12000;
constexpr int kServices = 40;
constexpr int kStacksPerService = 50;

Profile MakeWindow() {
  Profile profile;
  profile.meta.frequency_hz = 49;
  profile.meta.target = "system";
  profile.meta.end_monotonic_ns = 60'000'000'000;
  std::vector<uint32_t> frames;
  for (int i = 0; i < kFunctions; ++i) {
    FrameRecord f;
    f.module = profile.frames.InternModule(i % 3 == 0 ? "/usr/lib/x86_64-linux-gnu/libc.so.6" : "/usr/bin/app");
    f.symbol = "app::Function" + std::to_string(i) + "(int, std::string const&)";
    f.address = 0x1000 + 0x40 * static_cast<uint64_t>(i);
    f.kind = i % 10 == 0 ? FrameKind::kKernel : FrameKind::kNative;
    frames.push_back(profile.frames.Intern(f));
  }
  std::mt19937_64 rng(7);
  auto stack = [&](size_t depth) {
    std::vector<uint32_t> s;
    for (size_t d = 0; d < depth; ++d) s.push_back(frames[rng() % frames.size()]);
    return s;
  };
  for (int i = 0; i < kChurn; ++i) {
    const uint32_t pid = 100000 + static_cast<uint32_t>(i);
    const uint32_t index = profile.ThreadIndex("", pid, pid, 1'000'000 * static_cast<uint64_t>(i + 1));
    ThreadRecord& t = profile.threads[index];
    t.comm = "churn";
    t.process_comm = "churn";
    if (i % 4 == 0) t.tree.AddStack(stack(6 + rng() % 6), 1);
  }
  for (int s = 0; s < kServices; ++s) {
    const uint32_t pid = 1000 + static_cast<uint32_t>(s);
    for (int tid = 0; tid < 4; ++tid) {
      const uint32_t index = profile.ThreadIndex("", pid, pid + 50000 * static_cast<uint32_t>(tid), 500);
      ThreadRecord& t = profile.threads[index];
      t.comm = "service-" + std::to_string(s);
      t.process_comm = t.comm;
      for (int k = 0; k < kStacksPerService / 4; ++k) t.tree.AddStack(stack(10 + rng() % 20), 1 + rng() % 20);
    }
  }
  return profile;
}

void BM_SplitWindow(benchmark::State& state) {
  const Profile window = MakeWindow();
  size_t bytes = 0, series = 0;
  for (auto _ : state) {
    auto out = push::SplitWindow(window, "window-1", "", "bench-host", {});
    if (!out) {
      state.SkipWithError(out.error().message.c_str());
      return;
    }
    bytes = 0;
    for (const auto& s : *out) bytes += s.gzipped_pprof.size();
    series = out->size();
    benchmark::DoNotOptimize(out);
  }
  state.counters["series"] = static_cast<double>(series);
  state.counters["gzipped_bytes"] = static_cast<double>(bytes);
}
BENCHMARK(BM_SplitWindow)->Unit(benchmark::kMillisecond);

// The gzip alone, of the whole window's pprof as push encodes it, at zlib
// level 6 (push before kPushGzipLevel, `arcprof export`) and 1 (push now).
void BM_GzipWindow(benchmark::State& state) {
  const Profile window = MakeWindow();
  const std::string pprof =
      reports::EncodePprof(window, model::ThreadFilter{}, "samples", nullptr, reports::PprofLabels::kProcessName);
  size_t bytes = 0;
  for (auto _ : state) {
    auto out = reports::Gzip(pprof, static_cast<int>(state.range(0)));
    if (!out) {
      state.SkipWithError(out.error().message.c_str());
      return;
    }
    bytes = out->size();
    benchmark::DoNotOptimize(out);
  }
  state.counters["pprof_bytes"] = static_cast<double>(pprof.size());
  state.counters["gzipped_bytes"] = static_cast<double>(bytes);
}
BENCHMARK(BM_GzipWindow)->Arg(6)->Arg(1)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace arcprof

BENCHMARK_MAIN();
