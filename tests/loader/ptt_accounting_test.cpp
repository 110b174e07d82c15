// The snapshot arithmetic of loader/ptt_accounting.h on hand-made per-CPU
// states: open task segments, open and nested interrupts, torn reads.
#include "loader/ptt_accounting.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>
#include "tests/layer_names.h"

namespace arcprof {
namespace {

ptt_cpu RunningThread(uint64_t since_ns, uint32_t tid) {
  ptt_cpu s{};
  s.last_switch_ns = since_ns;
  s.curr_known = 1;
  s.curr_pid = tid;
  s.curr_tid = tid;
  std::strcpy(s.curr_comm, "worker");
  return s;
}

TEST(PttAccounting, OpenTaskSegmentGoesToBusyOrIdle) {
  ptt_cpu s = RunningThread(1000, 42);
  s.busy_ns = 500;
  s.idle_ns = 300;
  PttCpuTotals t = CpuTotalsAt(s, 1600);
  EXPECT_EQ(t.busy_ns, 1100u);
  EXPECT_EQ(t.idle_ns, 300u);
  s.curr_tid = 0;  // the idle task
  t = CpuTotalsAt(s, 1600);
  EXPECT_EQ(t.busy_ns, 500u);
  EXPECT_EQ(t.idle_ns, 900u);
}

TEST(PttAccounting, InterruptsSinceTheSwitchAreFactoredOutOfTheRunningTask) {
  ptt_cpu s = RunningThread(1000, 42);
  s.hardirq_ns = 70;  // 50 of them before the switch
  s.hardirq_ns_at_switch = 50;
  s.softirq_ns = 30;
  s.softirq_ns_at_switch = 0;
  s.hardirqs = 5;
  s.softirqs = 2;
  s.irqs_at_switch = 4;
  const PttRunningTask r = RunningTaskAt(s, 2000);
  EXPECT_TRUE(r.known);
  EXPECT_EQ(r.tid, 42u);
  EXPECT_EQ(r.comm, "worker");
  EXPECT_EQ(r.hardirq_ns, 20u);
  EXPECT_EQ(r.softirq_ns, 30u);
  EXPECT_EQ(r.interrupts, 3u);
  EXPECT_EQ(r.cpu_ns, 1000u - 50u);
  const PttCpuTotals t = CpuTotalsAt(s, 2000);
  EXPECT_EQ(t.busy_ns, 950u);
  EXPECT_EQ(t.hardirq_ns, 70u);
  EXPECT_EQ(t.softirq_ns, 30u);
}

TEST(PttAccounting, RunningHardirqCountsUpToNow) {
  ptt_cpu s = RunningThread(1000, 42);
  s.hardirq_depth = 1;
  s.hardirq_start_ns = 1900;
  const PttCpuTotals t = CpuTotalsAt(s, 2000);
  EXPECT_EQ(t.hardirq_ns, 100u);
  EXPECT_EQ(t.busy_ns, 900u);
  EXPECT_EQ(t.accounted_ns(), 1000u);
}

TEST(PttAccounting, HardirqNestedInSoftirqIsNotSoftirqTime) {
  ptt_cpu s = RunningThread(1000, 42);
  s.softirq_start_ns = 1500;
  s.hardirq_ns_at_softirq = 0;
  s.hardirq_ns = 40;  // a finished hardirq inside the softirq
  s.hardirq_depth = 1;  // and one running since 1950
  s.hardirq_start_ns = 1950;
  const PttCpuTotals t = CpuTotalsAt(s, 2000);
  EXPECT_EQ(t.hardirq_ns, 90u);
  EXPECT_EQ(t.softirq_ns, 500u - 40u - 50u);
  EXPECT_EQ(t.accounted_ns(), 1000u);
}

TEST(PttAccounting, SoftirqRunFromAHardirqExitPausesTheHardirq) {
  ptt_cpu s = RunningThread(1000, 42);
  s.hardirq_depth = 1;
  s.hardirq_start_ns = 0;  // paused by the softirq
  s.hardirq_done_ns = 30;  // 1470..1500
  s.softirq_start_ns = 1500;
  s.hardirq_ns_at_softirq = 0;
  const PttCpuTotals t = CpuTotalsAt(s, 1600);
  EXPECT_EQ(t.hardirq_ns, 30u);
  EXPECT_EQ(t.softirq_ns, 100u);
  EXPECT_EQ(t.busy_ns, 600u - 130u);
  EXPECT_EQ(t.accounted_ns(), 600u);
}

TEST(PttAccounting, UnknownCpuAccountsNothingOpen) {
  ptt_cpu s{};
  s.busy_ns = 7;
  const PttCpuTotals t = CpuTotalsAt(s, 5000);
  EXPECT_FALSE(t.known);
  EXPECT_EQ(t.busy_ns, 7u);
  EXPECT_FALSE(RunningTaskAt(s, 5000).known);
}

TEST(PttAccounting, IntervalIsTheDifferenceAndNeverNegative) {
  PttCpuTotals a{100, 200, 10, 5, 3, 1, true};
  PttCpuTotals b{160, 230, 15, 5, 4, 2, true};
  const PttCpuInterval row = IntervalBetween(1, a, 1000, b, 1100);
  EXPECT_EQ(row.cpu, 1u);
  EXPECT_EQ(row.start_ns, 1000u);
  EXPECT_EQ(row.end_ns, 1100u);
  EXPECT_EQ(row.busy_ns, 60u);
  EXPECT_EQ(row.idle_ns, 30u);
  EXPECT_EQ(row.hardirq_ns, 5u);
  EXPECT_EQ(row.softirq_ns, 0u);
  EXPECT_EQ(row.hardirqs, 1u);
  EXPECT_EQ(row.softirqs, 1u);
  b.busy_ns = 90;  // a torn read
  EXPECT_EQ(IntervalBetween(1, a, 1000, b, 1100).busy_ns, 0u);
}

// The kernel left out a task's switch to idle: the first snapshot credited
// 40 ns to the task it believed running, the next switch gave the whole
// stretch to idle. The row still sums to its span, and idle keeps it.
TEST(PttAccounting, AShortfallOnOneSideIsTakenFromTheOther) {
  PttCpuTotals a{140, 200, 10, 5, 3, 1, true};  // busy includes a 40 ns estimate
  PttCpuTotals b{100, 300, 10, 5, 3, 1, true};  // the switch: 100 ns of idle
  PttCpuInterval row = IntervalBetween(0, a, 1000, b, 1060);
  EXPECT_EQ(row.busy_ns, 0u);
  EXPECT_EQ(row.idle_ns, 60u);
  EXPECT_EQ(row.busy_ns + row.idle_ns, row.end_ns - row.start_ns);
  // The other way round: idle overestimated, busy real.
  std::swap(a.busy_ns, a.idle_ns);
  std::swap(b.busy_ns, b.idle_ns);
  row = IntervalBetween(0, a, 1000, b, 1060);
  EXPECT_EQ(row.idle_ns, 0u);
  EXPECT_EQ(row.busy_ns, 60u);
}

TEST(PttAccounting, RunningTaskAddsOneDispatch) {
  PttThread t;
  t.cpu_ns = 10;
  t.dispatches = 2;
  PttRunningTask r;
  r.known = true;
  r.cpu_ns = 5;
  r.hardirq_ns = 1;
  r.softirq_ns = 2;
  r.interrupts = 3;
  r.comm = "x";
  AddRunningTask(r, t);
  EXPECT_EQ(t.cpu_ns, 15u);
  EXPECT_EQ(t.hardirq_ns, 1u);
  EXPECT_EQ(t.softirq_ns, 2u);
  EXPECT_EQ(t.interrupts, 3u);
  EXPECT_EQ(t.dispatches, 3u);
  EXPECT_EQ(t.comm, "x");
}

TEST(PttAccounting, VectorSlots) {
  IrqKind kind;
  uint32_t vector;
  ASSERT_TRUE(DescribeVectorSlot(3, kind, vector));
  EXPECT_EQ(kind, IrqKind::kSoftIrq);
  EXPECT_EQ(vector, 3u);
  EXPECT_FALSE(DescribeVectorSlot(12, kind, vector));
  ASSERT_TRUE(DescribeVectorSlot(ARCPROF_PTT_SYSVEC_BASE, kind, vector));
  EXPECT_EQ(kind, IrqKind::kSysVec);
  EXPECT_EQ(vector, 0u);
  ASSERT_TRUE(DescribeVectorSlot(ARCPROF_PTT_IRQ_BASE + 11, kind, vector));
  EXPECT_EQ(kind, IrqKind::kHardIrq);
  EXPECT_EQ(vector, 11u);
  EXPECT_FALSE(DescribeVectorSlot(ARCPROF_PTT_VECTOR_SLOTS, kind, vector));
}

// A window past its row limit keeps its largest threads and one
// "[other threads]" row: every total stays what it was.
TEST(PttAccounting, ThreadsPastTheRowLimitAreFoldedIntoOneRow) {
  std::vector<model::PttThread> threads;
  model::PttThread sum;
  sum.events.assign(2, 0);
  for (uint32_t i = 1; i <= 1000; ++i) {
    model::PttThread t;
    t.pid = i;
    t.tid = i;
    t.comm = "t" + std::to_string(i);
    t.cpu_ns = i * 1000;
    t.hardirq_ns = i;
    t.softirq_ns = 2 * i;
    t.dispatches = 3;
    t.interrupts = i % 7;
    t.events = {i, 10 * i};
    sum.Add(t);
    threads.push_back(t);
  }
  std::vector<model::PttThread> unlimited = threads;
  EXPECT_EQ(FoldSmallestThreads(unlimited, 0), 0u);
  EXPECT_EQ(unlimited.size(), 1000u);
  EXPECT_EQ(FoldSmallestThreads(unlimited, 1000), 0u);

  EXPECT_EQ(FoldSmallestThreads(threads, 100), 901u);
  ASSERT_EQ(threads.size(), 100u);
  model::PttThread after;
  after.events.assign(2, 0);
  const model::PttThread* other = nullptr;
  uint32_t smallest_kept = UINT32_MAX;
  for (const model::PttThread& t : threads) {
    after.Add(t);
    if (t.pid == model::kPttOtherThreads) {
      other = &t;
    } else {
      smallest_kept = std::min(smallest_kept, t.tid);
    }
  }
  ASSERT_NE(other, nullptr);
  EXPECT_EQ(other->tid, model::kPttOtherThreads);
  EXPECT_EQ(other->comm, model::kPttOtherThreadsName);
  EXPECT_EQ(other->dispatches, 901u * 3);
  EXPECT_EQ(smallest_kept, 902u);  // the 99 largest stay themselves
  EXPECT_EQ(after.cpu_ns, sum.cpu_ns);
  EXPECT_EQ(after.hardirq_ns, sum.hardirq_ns);
  EXPECT_EQ(after.softirq_ns, sum.softirq_ns);
  EXPECT_EQ(after.dispatches, sum.dispatches);
  EXPECT_EQ(after.interrupts, sum.interrupts);
  EXPECT_EQ(after.events, sum.events);
}

}  // namespace
}  // namespace arcprof

namespace arcprof {
namespace {

// A thread record or a PTT row of (pid, tid) and its process's start.
template <typename T>
T Keyed(uint32_t pid, uint32_t tid, uint64_t start) {
  T t;
  t.pid = pid;
  t.tid = tid;
  t.process_start_ns = start;
  return t;
}

// A record's start from a fork event's time is one tick late when the fork
// fell just before a tick: its process's records take PTT's (the kernel's)
// start; a record that agrees, another process's, or one a PTT row of its
// own start also has, stays as it is.
TEST(PttAccounting, RecordsOneTickLateTakeTheKernelsStart) {
  constexpr uint64_t kTick = 10'000'000;
  const auto record = &Keyed<model::ThreadRecord>;
  const auto row = &Keyed<model::PttThread>;
  std::vector<model::ThreadRecord> records = {
      record(10, 10, 50 * kTick), record(10, 11, 50 * kTick),  // late by a tick: both threads
      record(20, 20, 70 * kTick),                             // agrees
      record(30, 30, 90 * kTick), record(30, 30, 89 * kTick),  // two processes of the pid
      record(40, 40, 0),                                      // unknown start
      record(model::kExitedProcessesPid, 5, 0)};
  const std::vector<model::PttThread> rows = {row(10, 10, 49 * kTick), row(20, 20, 70 * kTick),
                                              row(30, 30, 89 * kTick), row(40, 40, 33 * kTick)};
  const std::vector<StartCorrection> corrections = AlignProcessStarts(records, rows, kTick);
  ASSERT_EQ(corrections.size(), 1u);
  EXPECT_EQ(corrections[0].pid, 10u);
  EXPECT_EQ(corrections[0].late_ns, 50 * kTick);
  EXPECT_EQ(corrections[0].start_ns, 49 * kTick);
  EXPECT_EQ(records[0].process_start_ns, 49 * kTick);
  EXPECT_EQ(records[1].process_start_ns, 49 * kTick);
  EXPECT_EQ(records[2].process_start_ns, 70 * kTick);
  EXPECT_EQ(records[3].process_start_ns, 90 * kTick);
  EXPECT_EQ(records[4].process_start_ns, 89 * kTick);
  EXPECT_EQ(records[5].process_start_ns, 0u);
}

}  // namespace
}  // namespace arcprof
