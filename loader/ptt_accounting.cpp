#include "loader/ptt_accounting.h"

#include <algorithm>
#include <map>
#include <set>

#include <cstring>

namespace arcprof {
using namespace arcprof::model;
namespace {

uint64_t Since(uint64_t now, uint64_t start) { return now > start ? now - start : 0; }
uint64_t Minus(uint64_t a, uint64_t b) { return a > b ? a - b : 0; }

struct OpenInterrupts {
  uint64_t hardirq_ns = 0;  // the running hardirq's time so far
  uint64_t softirq_ns = 0;  // the running softirq's time so far, nested hardirqs excluded
};

OpenInterrupts OpenInterruptsAt(const ptt_cpu& s, uint64_t now) {
  OpenInterrupts open;
  const bool in_hardirq = s.hardirq_depth > 0;
  if (in_hardirq) {
    open.hardirq_ns = s.hardirq_done_ns + (s.hardirq_start_ns ? Since(now, s.hardirq_start_ns) : 0);
  }
  if (s.softirq_start_ns) {
    uint64_t nested = Minus(s.hardirq_ns, s.hardirq_ns_at_softirq);
    // A hardirq that interrupted the softirq and is still running.
    if (in_hardirq && s.hardirq_start_ns >= s.softirq_start_ns) nested += open.hardirq_ns;
    open.softirq_ns = Minus(Since(now, s.softirq_start_ns), nested);
  }
  return open;
}

}  // namespace

PttCpuTotals CpuTotalsAt(const ptt_cpu& s, uint64_t now_ns) {
  PttCpuTotals t;
  const OpenInterrupts open = OpenInterruptsAt(s, now_ns);
  t.hardirq_ns = s.hardirq_ns + open.hardirq_ns;
  t.softirq_ns = s.softirq_ns + open.softirq_ns;
  t.hardirqs = s.hardirqs;
  t.softirqs = s.softirqs;
  t.busy_ns = s.busy_ns;
  t.idle_ns = s.idle_ns;
  t.known = s.curr_known != 0;
  const PttRunningTask running = RunningTaskAt(s, now_ns);
  if (running.known) {
    (running.tid == 0 ? t.idle_ns : t.busy_ns) += running.cpu_ns;
  }
  return t;
}

PttRunningTask RunningTaskAt(const ptt_cpu& s, uint64_t now_ns) {
  PttRunningTask r;
  if (!s.curr_known) return r;
  r.known = true;
  r.pid = s.curr_pid;
  r.tid = s.curr_tid;
  r.start_ns = s.curr_start_ns;
  r.comm.assign(s.curr_comm, strnlen(s.curr_comm, sizeof(s.curr_comm)));
  const OpenInterrupts open = OpenInterruptsAt(s, now_ns);
  r.hardirq_ns = Minus(s.hardirq_ns + open.hardirq_ns, s.hardirq_ns_at_switch);
  r.softirq_ns = Minus(s.softirq_ns + open.softirq_ns, s.softirq_ns_at_switch);
  r.interrupts = Minus(s.hardirqs + s.softirqs, s.irqs_at_switch);
  r.cpu_ns = Minus(Since(now_ns, s.last_switch_ns), r.hardirq_ns + r.softirq_ns);
  return r;
}

PttCpuInterval IntervalBetween(uint32_t cpu, const PttCpuTotals& before, uint64_t before_ns,
                               const PttCpuTotals& after, uint64_t after_ns) {
  PttCpuInterval row;
  row.cpu = cpu;
  row.start_ns = before_ns;
  row.end_ns = after_ns > before_ns ? after_ns : before_ns;
  // Busy and idle each grow at switches, and in between by the estimate of
  // the task still running. When the kernel leaves out a switch (see
  // ARCPROF_PTT_CTR_UNSEEN_SWITCH) the estimate credits the wrong side: a
  // task reported running is in fact idle, and the next switch gives the
  // whole stretch to idle. One side then shrinks by what the other
  // overgrew; moving the shortfall across keeps the row's sum to its span.
  const int64_t busy = static_cast<int64_t>(after.busy_ns - before.busy_ns);
  const int64_t idle = static_cast<int64_t>(after.idle_ns - before.idle_ns);
  if (busy < 0 && idle > 0) {
    row.idle_ns = static_cast<uint64_t>(std::max<int64_t>(idle + busy, 0));
  } else if (idle < 0 && busy > 0) {
    row.busy_ns = static_cast<uint64_t>(std::max<int64_t>(busy + idle, 0));
  } else {
    row.busy_ns = static_cast<uint64_t>(std::max<int64_t>(busy, 0));
    row.idle_ns = static_cast<uint64_t>(std::max<int64_t>(idle, 0));
  }
  row.hardirq_ns = Minus(after.hardirq_ns, before.hardirq_ns);
  row.softirq_ns = Minus(after.softirq_ns, before.softirq_ns);
  row.hardirqs = Minus(after.hardirqs, before.hardirqs);
  row.softirqs = Minus(after.softirqs, before.softirqs);
  return row;
}

void AddRunningTask(const PttRunningTask& running, PttThread& thread) {
  thread.cpu_ns += running.cpu_ns;
  thread.hardirq_ns += running.hardirq_ns;
  thread.softirq_ns += running.softirq_ns;
  thread.interrupts += running.interrupts;
  thread.dispatches += 1;
  if (thread.comm.empty()) thread.comm = running.comm;
}

bool DescribeVectorSlot(uint32_t slot, IrqKind& kind, uint32_t& vector) {
  if (slot < ARCPROF_PTT_SYSVEC_BASE) {
    kind = IrqKind::kSoftIrq;
    vector = slot - ARCPROF_PTT_SOFTIRQ_BASE;
    return vector < 10;  // NR_SOFTIRQS
  }
  if (slot < ARCPROF_PTT_IRQ_BASE) {
    kind = IrqKind::kSysVec;
    vector = slot - ARCPROF_PTT_SYSVEC_BASE;
    return vector < ARCPROF_PTT_SYSVEC_COUNT;
  }
  if (slot < ARCPROF_PTT_VECTOR_SLOTS) {
    kind = IrqKind::kHardIrq;
    vector = slot - ARCPROF_PTT_IRQ_BASE;  // ARCPROF_PTT_MAX_IRQ: "irq 992 and above"
    return true;
  }
  return false;
}

size_t FoldSmallestThreads(std::vector<model::PttThread>& threads, size_t max_rows) {
  if (max_rows == 0 || threads.size() <= max_rows) return 0;
  const size_t keep = max_rows - 1;
  auto larger = [](const model::PttThread& a, const model::PttThread& b) {
    const uint64_t x = a.cpu_ns + a.interrupt_ns(), y = b.cpu_ns + b.interrupt_ns();
    if (x != y) return x > y;
    return std::pair(a.pid, a.tid) < std::pair(b.pid, b.tid);
  };
  std::nth_element(threads.begin(), threads.begin() + static_cast<std::ptrdiff_t>(keep), threads.end(), larger);
  model::PttThread other;
  other.pid = model::kPttOtherThreads;
  other.tid = model::kPttOtherThreads;
  other.comm = model::kPttOtherThreadsName;
  size_t folded = 0;
  for (size_t i = keep; i < threads.size(); ++i) {
    const model::PttThread& t = threads[i];
    if (t.pid == model::kPttOtherThreads && t.tid == model::kPttOtherThreads) {
      --folded;  // an earlier fold: its threads are counted already
    }
    ++folded;
    other.cpu_ns += t.cpu_ns;
    other.hardirq_ns += t.hardirq_ns;
    other.softirq_ns += t.softirq_ns;
    other.dispatches += t.dispatches;
    other.interrupts += t.interrupts;
    if (other.events.size() < t.events.size()) other.events.resize(t.events.size(), 0);
    for (size_t e = 0; e < t.events.size(); ++e) other.events[e] += t.events[e];
  }
  threads.resize(keep);
  threads.push_back(std::move(other));
  threads.shrink_to_fit();
  return folded;
}

std::vector<StartCorrection> AlignProcessStarts(std::vector<model::ThreadRecord>& records,
                                                const std::vector<model::PttThread>& rows, uint64_t tick_ns) {
  std::set<std::pair<uint32_t, uint64_t>> measured, recorded;
  for (const model::PttThread& t : rows) {
    if (t.process_start_ns != 0) measured.emplace(t.pid, t.process_start_ns);
  }
  for (const model::ThreadRecord& t : records) {
    if (t.process_start_ns != 0 && t.pid != model::kExitedProcessesPid) recorded.emplace(t.pid, t.process_start_ns);
  }
  std::vector<StartCorrection> out;
  for (const auto& [pid, start] : recorded) {
    if (tick_ns == 0 || start < tick_ns || measured.count({pid, start})) continue;
    const std::pair<uint32_t, uint64_t> kernel{pid, start - tick_ns};
    if (measured.count(kernel) && !recorded.count(kernel)) out.push_back({pid, start, start - tick_ns});
  }
  if (out.empty()) return out;
  std::map<std::pair<uint32_t, uint64_t>, uint64_t> to;
  for (const StartCorrection& c : out) to[{c.pid, c.late_ns}] = c.start_ns;
  for (model::ThreadRecord& t : records) {
    auto it = to.find({t.pid, t.process_start_ns});
    if (it != to.end()) t.process_start_ns = it->second;
  }
  return out;
}

}  // namespace arcprof
