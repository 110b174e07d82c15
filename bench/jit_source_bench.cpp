// Reading one JVM's JIT files as the continuous daemon does (docs/performance.md,
// "Memory and open files under churn"): a JitProcessSource tails a jitdump and
// our agent's side file as the JVM appends them, polling after each append and
// looking up a few interpreted methods' names (Method*s) and code addresses
// after each poll, for a whole JVM's life. The files are real: written by
// `java ChurnSpin.java 4` (bench/churn_cpu.sh's JVM), given as
// ARCPROF_JIT_BENCH_FILES=/dir/jit-PID (the .dump and .arcprof next to it).
// Run: ARCPROF_JIT_BENCH_FILES=/path/jit-877 ./jit_source_bench --benchmark_repetitions=5
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "common/heap.h"
#include "spaces/space_types.h"
#include "symbolize/jit_process_source.h"
#include "symbolize/jitdump.h"

namespace arcprof {
namespace {

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

struct Files {
  std::string dump, side;
  std::vector<std::pair<uint64_t, uint64_t>> all_methods;  // every (Method*, t_ns) named
  std::vector<std::pair<uint64_t, uint64_t>> methods;  // (Method*, t_ns) looked up after each poll
  std::vector<std::pair<uint64_t, uint64_t>> code;     // (address, t_ns) looked up
  jitdump::Records dump_records;                         // the jitdump's, names viewing `dump`
  bool ok = false;
};

const Files& Load() {
  static Files f = [] {
    Files f;
    const char* base = std::getenv("ARCPROF_JIT_BENCH_FILES");
    if (!base) return f;
    f.dump = ReadAll(std::string(base) + ".dump");
    f.side = ReadAll(std::string(base) + ".arcprof");
    if (f.dump.empty() || f.side.empty()) return f;
    auto header = jitdump::ParseSideHeader(f.side);
    if (!header) return f;
    jitdump::SideRecords side;
    jitdump::ParseSideRecords(std::string_view(f.side).substr(*header), &side);
    std::vector<std::pair<uint64_t, uint64_t>> all;
    // One record of many Method*s (or, before, one name per element).
    auto add = [&all](const auto& m) {
      if constexpr (requires { m.count; }) {
        for (uint32_t i = 0; i < m.count; ++i) all.push_back({m.method(i), m.t_ns});
      } else {
        all.push_back({m.method, m.t_ns});
      }
    };
    for (const auto& m : side.methods) add(m);
    for (size_t i = 0; i < all.size(); i += all.size() / 8 + 1) f.methods.push_back(all[i]);
    f.all_methods = std::move(all);
    auto dh = jitdump::ParseFileHeader(f.dump);
    if (dh) {
      jitdump::Records& records = f.dump_records;
      jitdump::ParseRecords(std::string_view(f.dump).substr(dh->header_size), dh->swapped, &records);
      for (size_t i = 0; i < records.loads.size(); i += records.loads.size() / 8 + 1) {
        f.code.push_back({records.loads[i].addr + 1, records.loads[i].t_ns});
      }
    }
    f.ok = !f.methods.empty();
    return f;
  }();
  return f;
}

// The JVM's life in `chunks` appends of both files, each followed by a poll
// and the lookups (eight Method*s and eight code addresses), then its source
// freed. 200 chunks: a 4 s JVM polled every 20 ms, as the daemon does while
// its samples come in. A second argument, `names`, adds that many distinct
// Method*s (spread over the file) looked up once, after the last poll: the
// few hundred interpreted methods the samples of an attached JVM name after
// its ~24,000 method names were read at once.
void BM_JvmLife(benchmark::State& state) {
  const Files& f = Load();
  if (!f.ok) {
    state.SkipWithError("set ARCPROF_JIT_BENCH_FILES=/dir/jit-PID (a JVM's jit-PID.dump and .arcprof)");
    return;
  }
  const size_t chunks = static_cast<size_t>(state.range(0));
  const size_t distinct = state.range(1) > 0 ? static_cast<size_t>(state.range(1)) : 0;
  std::vector<std::pair<uint64_t, uint64_t>> spread;
  for (size_t i = 0; distinct > 0 && i < f.all_methods.size(); i += f.all_methods.size() / distinct + 1) {
    spread.push_back(f.all_methods[i]);
  }
  char tmpl[] = "/tmp/arcprof-jit-bench-XXXXXX";
  const std::string dir = mkdtemp(tmpl);
  std::filesystem::create_directories(dir + "/4242/root/tmp");
  std::ofstream(dir + "/4242/status") << "Name:\tjava\nUid:\t0\t0\t0\t0\nNSpid:\t4242\n";
  std::ofstream(dir + "/4242/maps") << "";
  JitSourceOptions options;
  options.proc_root = dir;
  options.accept_any_owner = true;
  options.reread_on_miss_ns = ~0ull >> 1;  // polls are the benchmark's
  ProcessInfo info;
  info.pid = 4242;
  info.ns_pid = 4242;
  const std::string dump_path = dir + "/4242/root/tmp/jit-4242.dump";
  const std::string side_path = dir + "/4242/root/tmp/jit-4242.arcprof";
  size_t names = 0;
  for (auto _ : state) {
    state.PauseTiming();
    std::filesystem::remove(dump_path);
    std::filesystem::remove(side_path);
    {
      std::ofstream(dump_path, std::ios::binary) << "";
      std::ofstream(side_path, std::ios::binary) << "";
    }
    auto source = std::make_unique<JitProcessSource>(info, options);
    state.ResumeTiming();
    for (size_t c = 1; c <= chunks; ++c) {
      state.PauseTiming();
      const size_t d0 = f.dump.size() * (c - 1) / chunks, d1 = f.dump.size() * c / chunks;
      const size_t s0 = f.side.size() * (c - 1) / chunks, s1 = f.side.size() * c / chunks;
      {
        std::ofstream(dump_path, std::ios::binary | std::ios::app).write(f.dump.data() + d0, d1 - d0);
        std::ofstream(side_path, std::ios::binary | std::ios::app).write(f.side.data() + s0, s1 - s0);
      }
      state.ResumeTiming();
      source->Poll(c * 20'000'000ull);
      for (const auto& [method, t] : f.methods) names += source->MethodName(method, t + 1).has_value();
      for (const auto& [addr, t] : f.code) names += source->Find(addr, t + 1).has_value();
    }
    for (const auto& [method, t] : spread) names += source->MethodName(method, t + 1).has_value();
    benchmark::DoNotOptimize(source->bytes());
    source.reset();  // the JVM exits: its source is freed (part of its cost)
    // The daemon hands freed pages back after a forget pass: the next JVM's
    // tables are fresh pages, faulted in again (part of their cost).
    state.PauseTiming();
    heap::ReleaseFree();
    state.ResumeTiming();
  }
  std::filesystem::remove_all(dir);
  state.counters["found"] = static_cast<double>(names) / static_cast<double>(state.iterations());
  state.counters["MB"] = static_cast<double>(f.dump.size() + f.side.size()) / 1e6;
}
BENCHMARK(BM_JvmLife)
    ->ArgNames({"chunks", "names"})
    ->Args({1, 0})
    ->Args({50, 0})
    ->Args({200, 0})
    ->Args({1, 300})
    ->Unit(benchmark::kMillisecond);

// A JVM's code index alone: every CODE_LOAD of the jitdump added (as
// PollDump does), the code lookups, then the index freed.
void BM_CodeIndexLife(benchmark::State& state) {
  const Files& f = Load();
  if (!f.ok) {
    state.SkipWithError("set ARCPROF_JIT_BENCH_FILES=/dir/jit-PID (a JVM's jit-PID.dump and .arcprof)");
    return;
  }
  size_t found = 0;
  for (auto _ : state) {
    auto index = std::make_unique<JitCodeIndex>();
    for (const jitdump::CodeLoad& l : f.dump_records.loads) index->AddCode(l.t_ns, l.addr, l.size, l.name, l.index);
    for (const auto& [addr, t] : f.code) found += index->Find(addr, t + 1).has_value();
    index.reset();
    state.PauseTiming();
    heap::ReleaseFree();
    state.ResumeTiming();
  }
  state.counters["loads"] = static_cast<double>(f.dump_records.loads.size());
  benchmark::DoNotOptimize(found);
}
BENCHMARK(BM_CodeIndexLife)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace arcprof

BENCHMARK_MAIN();
