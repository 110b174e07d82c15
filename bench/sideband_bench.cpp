// The whole-machine daemon's side band under process churn (docs/performance.md,
// "Side band under churn"): batches of perf side-band events, as
// tests/programs/churn produces them (200 short processes a second, cycling
// through storm_child, /bin/true, sh -c :, env true), decoded into a
// SidebandQueue and applied to AddressSpaces, whose forget pass runs as event
// time passes (every 5 s, dropping processes 10 s after their exit). Each
// process is a fork of the churn process, an exec, the executable segments of
// its binary, ld.so and libc (env execs again) and an exit. The files are the
// machine's own (opened once, then found by device and inode); the churn
// process lives in a /proc of the benchmark's, the short processes' pids are
// in none (as for a short process whose events are applied after its exit)
// and cycle through 32768 of them.
// Run: ./sideband_bench --benchmark_repetitions=5
#include <benchmark/benchmark.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <linux/perf_event.h>

#include <algorithm>
#include <climits>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <new>
#include <iomanip>
#include <cstdlib>
#include <string>
#include <vector>

#include "loader/sideband.h"
#include "spaces/address_spaces.h"

// Allocations through operator new (strings, containers' nodes and arrays),
// counted: a figure that does not depend on the machine's load.
namespace {
uint64_t g_news = 0;  // one thread
}  // namespace

void* operator new(size_t n) {
  ++g_news;
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, size_t) noexcept { std::free(p); }

namespace arcprof {
namespace {

struct Binary {
  std::string path;
  uint64_t pgoff = 0, len = 0;
  uint32_t maj = 0, min = 0;
  uint64_t ino = 0;
};

Binary Real(const char* path, uint64_t pgoff, uint64_t len) {
  Binary b;
  char resolved[PATH_MAX];
  b.path = realpath(path, resolved) ? resolved : path;
  struct stat st;
  if (stat(b.path.c_str(), &st) == 0) {
    b.maj = major(st.st_dev);
    b.min = minor(st.st_dev);
    b.ino = st.st_ino;
  }
  b.pgoff = pgoff;
  b.len = len;
  return b;
}

struct Churn {
  Binary ld, libc;
  std::vector<std::pair<Binary, std::string>> programs;  // (binary, comm) in churn's order
  Churn() {
    ld = Real("/lib64/ld-linux-x86-64.so.2", 0x1000, 0x25000);
    libc = Real("/lib/x86_64-linux-gnu/libc.so.6", 0x28000, 0x155000);
    // The build's storm_child (build/tests/programs), next to build/bench.
    const char* storm = std::getenv("ARCPROF_STORM_CHILD");
    std::error_code ec;
    const std::string built =
        (std::filesystem::read_symlink("/proc/self/exe", ec).parent_path().parent_path() / "tests/programs/storm_child")
            .string();
    programs.emplace_back(Real(storm ? storm : built.c_str(), 0x1000, 0x1000), "storm_child");
    programs.emplace_back(Real("/bin/true", 0x2000, 0x3000), "true");
    programs.emplace_back(Real("/bin/sh", 0x4000, 0x14000), "sh");
    programs.emplace_back(Real("/usr/bin/env", 0x2000, 0x4000), "env");
  }
};

constexpr uint32_t kChurnPid = 5'000'000;  // above any pid_max (2^22)
constexpr uint32_t kFirstPid = kChurnPid + 1;
constexpr uint32_t kPids = 32768;
constexpr uint64_t kProcessEveryNs = 5'000'000;  // 200 a second

class Driver {
 public:
  // proc_root: a directory where the churn process (kChurnPid) lives.
  Driver(const Churn& churn, const std::string& proc_root)
      : churn_(churn), spaces_(AddressSpacesOptions{.proc_root = proc_root}) {}

  // One batch: `processes` churn processes starting kProcessEveryNs apart.
  void Batch(int processes) {
    for (int i = 0; i < processes; ++i) {
      const uint32_t pid = kFirstPid + static_cast<uint32_t>(n_ % kPids);
      const auto& program = churn_.programs[n_ % churn_.programs.size()];
      const uint64_t t = t_ns_;
      Push(SidebandEvent::Kind::kFork, pid, t, kChurnPid);
      uint64_t te = Exec(pid, t + 200'000, program);
      if (program.second == "env") te = Exec(pid, te + 100'000, churn_.programs[1]);
      // storm_child burns 3 ms; the others exit at once.
      Push(SidebandEvent::Kind::kExit, pid, te + (program.second == "storm_child" ? 3'100'000 : 300'000));
      ++n_;
      t_ns_ += kProcessEveryNs;
    }
    queue_.ApplyTo(spaces_);
  }

  AddressSpaces& spaces() { return spaces_; }

 private:
  // Records are written into one buffer (the benchmark's own cost stays small
  // beside what it measures).
  template <typename T>
  void Put(T x) {
    memcpy(record_ + size_, &x, sizeof(T));
    size_ += sizeof(T);
  }
  void PutString(const std::string& s) {
    const size_t n = std::min(s.size(), sizeof(record_) - 64);
    memcpy(record_ + size_, s.data(), n);
    size_ += n;
    do record_[size_++] = 0;
    while (size_ % 8);
  }
  void Begin() { size_ = sizeof(perf_event_header); }
  // The sample_id {pid, tid, time}, the header, and into the queue as the
  // daemon's reader hands it over.
  void End(uint32_t type, uint16_t misc, uint32_t pid, uint64_t t) {
    Put<uint32_t>(pid);
    Put<uint32_t>(pid);
    Put<uint64_t>(t);
    const perf_event_header h{type, misc, static_cast<uint16_t>(size_)};
    memcpy(record_, &h, sizeof(h));
    queue_.PushRecord(record_, size_);
  }

  void Push(SidebandEvent::Kind kind, uint32_t pid, uint64_t t, uint32_t parent = 0) {
    Begin();
    const uint32_t ppid = kind == SidebandEvent::Kind::kFork ? parent : pid;
    Put<uint32_t>(pid);
    Put<uint32_t>(ppid);
    Put<uint32_t>(pid);
    Put<uint32_t>(ppid);
    Put<uint64_t>(t);
    End(kind == SidebandEvent::Kind::kFork ? PERF_RECORD_FORK : PERF_RECORD_EXIT, 0, pid, t);
  }

  void Mmap(uint32_t pid, uint64_t t, const Binary& b, uint64_t base) {
    Begin();
    Put<uint32_t>(pid);
    Put<uint32_t>(pid);
    Put<uint64_t>(base + b.pgoff);
    Put<uint64_t>(b.len);
    Put<uint64_t>(b.pgoff);
    Put<uint32_t>(b.maj);
    Put<uint32_t>(b.min);
    Put<uint64_t>(b.ino);
    Put<uint64_t>(0);  // inode generation
    Put<uint32_t>(PROT_READ | PROT_EXEC);
    Put<uint32_t>(MAP_PRIVATE);
    PutString(b.path);
    End(PERF_RECORD_MMAP2, 0, pid, t);
  }

  // An exec at t: its COMM record, then the kernel's mappings of the binary
  // and ld.so, then ld.so's of libc. Returns the time of the last.
  uint64_t Exec(uint32_t pid, uint64_t t, const std::pair<Binary, std::string>& program) {
    Begin();
    Put<uint32_t>(pid);
    Put<uint32_t>(pid);
    PutString(program.second);
    End(PERF_RECORD_COMM, PERF_RECORD_MISC_COMM_EXEC, pid, t);
    // Address space layout randomization: other bases every exec.
    seed_ = seed_ * 6364136223846793005ull + 1442695040888963407ull;
    const uint64_t r = (seed_ >> 20) & 0xfffff000ull;
    Mmap(pid, t + 10'000, program.first, 0x55d000000000ull + r);
    Mmap(pid, t + 20'000, churn_.ld, 0x7f2000000000ull + r);
    Mmap(pid, t + 150'000, churn_.libc, 0x7f1000000000ull + r);
    return t + 150'000;
  }

  alignas(8) uint8_t record_[4096];
  size_t size_ = 0;
  const Churn& churn_;
  AddressSpaces spaces_;
  SidebandQueue queue_;
  uint64_t t_ns_ = 1'000'000'000;
  uint64_t n_ = 0;
  uint64_t seed_ = 42;
};

// Batches of `batch` processes (20: a 100 ms batch at 200 a second),
// after 15 s of churn (event time) so that the forget pass has a steady
// state to drop from. Every 50th batch crosses a forget pass.
void BM_SidebandChurn(benchmark::State& state) {
  static const Churn churn;
  const int per_batch = static_cast<int>(state.range(0));
  // The churn process in a /proc of its own: found by the first fork's
  // snapshot (its binary, ld.so and libc), alive at every liveness check.
  char tmpl[] = "/tmp/arcprof-sideband-bench-XXXXXX";
  const std::string root = mkdtemp(tmpl);
  const std::string dir = root + "/" + std::to_string(kChurnPid);
  std::filesystem::create_directories(dir + "/task");
  std::ofstream(dir + "/comm") << "churn\n";
  {
    // As bench/churn_cpu.sh starts it, in a login session's cgroup.
    const std::string cmdline = std::string("/opt/arcprof/build/tests/programs/churn\0" "200\0" "180\0", 49) +
                                churn.programs[0].first.path + std::string(1, '\0');
    std::ofstream(dir + "/cmdline") << cmdline;
    std::ofstream(dir + "/cgroup") << "0::/user.slice/user-0.slice/session-42.scope\n";
    std::ofstream(dir + "/environ") << std::string("HOME=/root\0PATH=/usr/bin:/bin\0", 30);
  }
  std::ofstream(dir + "/status") << "Name:\tchurn\nUid:\t0\t0\t0\t0\nNSpid:\t" << kChurnPid << "\n";
  std::ofstream(dir + "/stat") << kChurnPid << " (churn) S 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 100 0 0\n";
  {
    std::ofstream maps(dir + "/maps");
    const Binary* own[] = {&churn.programs[1].first, &churn.ld, &churn.libc};
    uint64_t base = 0x560000000000ull;
    for (const Binary* b : own) {
      maps << std::hex << base + b->pgoff << "-" << base + b->pgoff + b->len << " r-xp " << std::setw(8)
           << std::setfill('0') << b->pgoff << " " << std::setw(2) << b->maj << ":" << std::setw(2) << b->min
           << " " << std::dec << b->ino << " " << b->path << "\n";
      base += 0x10000000000ull;
    }
  }
  Driver driver(churn, root);
  for (int i = 0; i < 3000 / per_batch; ++i) driver.Batch(per_batch);
  const uint64_t forgotten0 = driver.spaces().stats().processes_forgotten;
  uint64_t news = 0;
  // cold: between batches the daemon samples, unwinds and the machine churns,
  // so a batch starts with cold caches: 64 MiB (twice the L3 cache here) are
  // written first, not timed.
  std::vector<uint64_t> evict(state.range(1) ? (64u << 20) / sizeof(uint64_t) : 0);
  for (auto _ : state) {
    if (!evict.empty()) {
      state.PauseTiming();
      for (size_t i = 0; i < evict.size(); i += 8) evict[i] += i;
      benchmark::ClobberMemory();
      state.ResumeTiming();
    }
    const uint64_t news0 = g_news;
    driver.Batch(per_batch);
    news += g_news - news0;
  }
  state.SetItemsProcessed(state.iterations() * per_batch);
  state.counters["forgotten"] =
      static_cast<double>(driver.spaces().stats().processes_forgotten - forgotten0) /
      static_cast<double>(state.iterations() * per_batch);
  state.counters["allocs"] = static_cast<double>(news) / static_cast<double>(state.iterations() * per_batch);
  state.counters["remembered"] = static_cast<double>(driver.spaces().processes());
  state.counters["open_files"] = static_cast<double>(driver.spaces().open_files());
  std::filesystem::remove_all(root);
}
BENCHMARK(BM_SidebandChurn)->ArgNames({"batch", "cold"})->Args({20, 0})->Unit(benchmark::kMicrosecond)->MinTime(2.0);
BENCHMARK(BM_SidebandChurn)->ArgNames({"batch", "cold"})->Args({20, 1})->Unit(benchmark::kMicrosecond)->Iterations(1000);

}  // namespace
}  // namespace arcprof

BENCHMARK_MAIN();
