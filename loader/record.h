// `arcprof record`: one recording session from preflight checks to the capture file.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"
#include "loader/cgroup_targets.h"
#include "loader/trace.h"

namespace arcprof {

inline constexpr uint32_t kDefaultStackKb = 64;  // --stack-kb when not given

struct RecordOptions {
  double duration_s = 0;                  // 0: until Ctrl-C, or until the command exits
  std::vector<uint32_t> pids;             // -p: only these processes (and their children)
  std::vector<std::string> command;       // -- CMD ARGS
  // --container, --cgroup, --service: only tasks in these cgroups (v2) and
  // below them, filtered in BPF (loader/cgroup_targets.h); with -p or a
  // command, a task either selects is sampled.
  CgroupSelection cgroups;
  uint64_t frequency_hz = 999;
  uint64_t sample_period = 0;             // -c: one sample every N events instead of -F
  std::string event = "cpu-clock";
  std::string output = "arcprof.db";
  // 0: sized from the rate, the CPUs and the stack copy (AutoBufferMb). The
  // ring buffer's pages are mapped twice, so it counts twice in RSS.
  uint32_t buffer_mb = 0;
  // How often the sample ring is drained. 0: from the ring's size and the
  // rate (AutoDrainMs: a quarter of the time the ring holds at the worst
  // case, 100 ms to 1 s), what `continuous` uses.
  uint32_t drain_interval_ms = 100;
  std::string call_graph = "hybrid";     // fp, dwarf or hybrid
  // User stack copied per sample (dwarf, hybrid). Unset: kDefaultStackKb,
  // and a deeper stack down to its base (a main thread's, or a thread's whose
  // stack glibc allocated), up to the largest copy (ARCPROF_MAX_STACK_COPY):
  // a compiler's deepest recursions reach thread start. Set: exactly that
  // much for every thread.
  std::optional<uint32_t> stack_kb;
  std::string command_line;               // how arcprof was invoked, stored in the capture
  bool quiet = false;
  // Per-thread time and interrupt/idle accounting (docs/ptt.md). Unset: on
  // for whole-machine recordings, off with -p or a command.
  std::optional<bool> ptt;
  std::string ptt_events = "instructions,cycles";  // counters read at each switch (at most 4)
  uint32_t ptt_interval_ms = 100;                  // per-CPU accounting rows in the capture
  uint32_t ptt_max_threads = 65536;
  // Thread rows of PTT per window (0: no limit): past it the threads with
  // the least time are summed into one "[other threads]" row.
  size_t ptt_max_window_rows = 0;
  // Load the JVMTI agent into running HotSpot JVMs (docs/java.md). Unset: on.
  // Existing jitdumps and perf maps are read either way.
  std::optional<bool> java;
  // Name interpreted runtimes' frames with no flag (runtimes/: CPython, V8). Off:
  // native frames only (the benchmark's baseline).
  bool runtimes = true;
  // With DEBUGINFOD_URLS set: how long (from the start) stripped modules may
  // be looked up; lookups run in the background, the capture waits for what
  // is left of it at the end. 0: no debuginfod.
  double debuginfod_budget_s = 20;
  // Off-CPU stacks and blocked time (docs/usage.md). Unset: on with -p or a
  // command, off for whole-machine recordings.
  std::optional<bool> off_cpu;
  uint32_t off_cpu_max_keys = 65536;
  // Native allocations sampled by bytes (docs/usage.md, record --alloc).
  bool alloc = false;
  uint64_t alloc_rate = 512 * 1024;  // mean bytes between samples
  uint32_t alloc_max_blocks = 65536; // live sampled blocks tracked
  // Interned frame names held across windows (Symbolizer::ReleaseNames, at
  // each window close); 0: no limit (a one-shot record has one window).
  size_t names_budget_bytes = 0;
  // What a long session holds (0: the symbolizer's and unwinder's defaults;
  // `continuous` sets its own, docs/design.md "Memory and files over a long
  // session"): how long an exited process's state is kept, the user answer
  // cache (2^bits slots), the symbol-table and CFI budgets.
  uint64_t exited_retention_ns = 0;
  uint32_t answer_cache_bits = 0;
  size_t symbol_budget_bytes = 0;
  size_t cfi_budget_bytes = 0;
  // Thread records the open window keeps before exited threads are folded
  // (0: never). A one-shot record holds one window for its whole run, and a
  // machine starting 100 threads a second grew it by 17 KB a thread (2.25 GB
  // in 30 minutes). Past it, the oldest records of exited threads are summed
  // into one "[exited threads]" record of their process, and the records of
  // processes the symbolizer forgot (exited over 10 s ago) into one record per
  // process name under the pid "[exited processes]" (RecordingSession;
  // docs/design.md, "Memory and files over a long session"). Totals by
  // function, stack and process name stay.
  // `continuous` closes a window every minute and keeps every thread.
  size_t max_thread_records = 4096;
  // `arcprof trace`: the root and its settings (loader/trace.h); empty root
  // for every other recording.
  TraceOptions trace;
};

// Whether these options record off-CPU time.
bool OffCpuEnabled(const RecordOptions& options);

// Whether these options load agents into runtimes' processes (--java /
// --no-java, on by default: runtimes/java attaches to JVMs).
inline bool JavaAttachEnabled(const RecordOptions& options) { return options.java.value_or(true); }

// Checks that this process may load BPF programs and open perf events, and
// that the kernel has BTF. One-line errors that say what to do.
Result<void> CheckRecordPreconditions();

// Runs a recording and writes the capture. Returns the exit code to use.
Result<int> RunRecord(const RecordOptions& options);

}  // namespace arcprof
