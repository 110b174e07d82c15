// The arithmetic of PTT snapshots, separate from libbpf so it can be tested
// with hand-made per-CPU states. The BPF program (bpf/ptt.bpf.c) only closes
// a time segment at a context switch or an interrupt exit; the loader adds
// the open segments (the running task since its switch-in, a running
// interrupt) whenever it reads the maps, so every snapshot covers the CPU's
// whole wall time.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ptt.h"
#include "model/profile.h"
#include "model/ptt_data.h"

namespace arcprof {

// Cumulative per-CPU time as of a moment, open segments included.
struct PttCpuTotals {
  uint64_t busy_ns = 0;
  uint64_t idle_ns = 0;
  uint64_t hardirq_ns = 0;
  uint64_t softirq_ns = 0;
  uint64_t hardirqs = 0;
  uint64_t softirqs = 0;
  bool known = false;  // false until the first context switch on this CPU

  uint64_t accounted_ns() const { return busy_ns + idle_ns + hardirq_ns + softirq_ns; }
};

// The open segment of the task running on a CPU (switched in, not yet out).
struct PttRunningTask {
  bool known = false;
  uint32_t pid = 0;
  uint32_t tid = 0;  // 0: the idle task
  uint64_t start_ns = 0;  // its process's start (ptt_thread_key::start_ns)
  std::string comm;
  uint64_t cpu_ns = 0;  // interrupts excluded
  uint64_t hardirq_ns = 0;
  uint64_t softirq_ns = 0;
  uint64_t interrupts = 0;
};

// Totals of one CPU at now_ns (CLOCK_MONOTONIC, the clock of bpf_ktime_get_ns).
PttCpuTotals CpuTotalsAt(const ptt_cpu& state, uint64_t now_ns);

// The running task's share since its switch-in, up to now_ns.
PttRunningTask RunningTaskAt(const ptt_cpu& state, uint64_t now_ns);

// The interval row between two snapshots of one CPU. Busy or idle gone
// backwards (the previous snapshot's estimate of the running task credited
// a side that a later switch contradicted) is taken from the other side, so
// that the row still sums to its span; other fields that went backwards (a
// torn read) count as 0.
model::PttCpuInterval IntervalBetween(uint32_t cpu, const PttCpuTotals& before, uint64_t before_ns,
                               const PttCpuTotals& after, uint64_t after_ns);

// Adds a running task's open segment to its thread's totals: the open dispatch
// counts as one more dispatch (threads are counted when switched out).
void AddRunningTask(const PttRunningTask& running, model::PttThread& thread);

// Keeps at most max_rows rows (0: no limit): the threads with the least time
// (cpu + interrupts) beyond max_rows - 1 are summed into one row with pid and
// tid model::kPttOtherThreads, so every total stays as it was. Returns how
// many rows were folded. The order of the kept rows is not kept.
size_t FoldSmallestThreads(std::vector<model::PttThread>& threads, size_t max_rows);

// One process's start as the thread records had it (`late_ns`) and as PTT
// read it from the kernel (`start_ns`).
struct StartCorrection {
  uint32_t pid = 0;
  uint64_t late_ns = 0;
  uint64_t start_ns = 0;
};

// Makes a window's thread records and PTT rows of one process agree on its
// start. PTT's is the kernel's (task start_boottime at /proc's 10 ms); a
// record's came from /proc (the same) or, for a process whose fork arcprof
// saw, from the fork event's time, which is a few microseconds later and so
// one tick (`tick_ns`) later when the fork fell just before a tick. A process
// whose records have start s, that no PTT row has, while PTT rows of its pid
// have s - tick and no record does, is that process: its records take
// s - tick. Returns the corrections made (for the process registry).
std::vector<StartCorrection> AlignProcessStarts(std::vector<model::ThreadRecord>& records,
                                                const std::vector<model::PttThread>& rows, uint64_t tick_ns);

// What a vector slot of the BPF `vectors` map stands for; false for an unused slot.
bool DescribeVectorSlot(uint32_t slot, model::IrqKind& kind, uint32_t& vector);

}  // namespace arcprof
