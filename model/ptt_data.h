// Per-thread time (PTT), interrupt and idle accounting of a recording: the
// part of a Profile filled by `record --ptt` and stored in the ptt_* tables of
// the capture (docs/ptt.md, docs/capture-format.md). Plain data, no libbpf.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace arcprof::model {

inline constexpr size_t kPttMaxEvents = 4;

// A counter chosen with --ptt-events. An event the machine cannot count (no
// PMU) is kept with available = false so reports can say so instead of
// printing zeros.
struct PttEvent {
  std::string name;
  bool available = false;
  std::string unavailable_reason;  // "not available on this machine", ...

  bool operator==(const PttEvent&) const = default;
};

// The pid and tid of the row that stands for the threads folded out of a
// window past its row limit (continuous capture): their sums, one row.
inline constexpr uint32_t kPttOtherThreads = 0xffffffffu;
inline constexpr const char* kPttOtherThreadsName = "[other threads]";

struct PttThread {
  uint32_t pid = 0;
  uint32_t tid = 0;
  std::string comm;
  uint64_t cpu_ns = 0;      // on CPU, interrupts excluded
  uint64_t hardirq_ns = 0;  // interrupts that hit the CPU while the thread ran
  uint64_t softirq_ns = 0;
  uint64_t dispatches = 0;  // times switched in
  uint64_t interrupts = 0;  // hardirqs + softirqs while it ran
  // Counter deltas, parallel to PttData::events; meaningful only for available events.
  std::vector<uint64_t> events;
  // Its process's start, as ThreadRecord::process_start_ns (the kernel's, at
  // the 10 ms of /proc/PID/stat); 0 unknown (captures before schema 9, the
  // "[other threads]" row). Rows and thread records of one thread have the
  // same (pid, tid, start); a pid another process held is another row.
  uint64_t process_start_ns = 0;

  uint64_t interrupt_ns() const { return hardirq_ns + softirq_ns; }
  // Sums another record of the same thread (another window or capture) into
  // this one; the later non-empty name wins.
  void Add(const PttThread& other);
  bool operator==(const PttThread&) const = default;
};

// One CPU over [start_ns, end_ns) (CLOCK_MONOTONIC): busy + idle + hardirq +
// softirq = end_ns - start_ns, up to the precision of the clock reads.
struct PttCpuInterval {
  uint32_t cpu = 0;
  uint64_t start_ns = 0;
  uint64_t end_ns = 0;
  uint64_t busy_ns = 0;  // tasks other than idle, interrupts excluded
  uint64_t idle_ns = 0;  // the idle task, interrupts excluded
  uint64_t hardirq_ns = 0;
  uint64_t softirq_ns = 0;
  uint64_t hardirqs = 0;
  uint64_t softirqs = 0;

  bool operator==(const PttCpuInterval&) const = default;
};

enum class IrqKind : uint8_t {
  kHardIrq = 0,  // a device interrupt (irq number)
  kSoftIrq = 1,  // a softirq vector (HI=0 .. RCU=9)
  kSysVec = 2,   // an x86 system vector: local timer, IPIs
};
inline constexpr int kIrqKindCount = 3;

// Totals of one interrupt source on one CPU over the whole recording.
struct PttIrqVector {
  uint32_t cpu = 0;
  IrqKind kind = IrqKind::kHardIrq;
  uint32_t vector = 0;  // irq number, softirq number or system vector id
  std::string name;     // "NET_RX", "LOC", "irq 11 (virtio0)", ...
  uint64_t count = 0;
  uint64_t ns = 0;

  bool operator==(const PttIrqVector&) const = default;
};

// The names shown for interrupt sources: "NET_RX", "LOC".
std::string SoftIrqName(uint32_t vector);
std::string SysVecName(uint32_t vector);

struct PttData {
  bool recorded = false;  // false: the capture has no PTT (recorded without --ptt, or older)
  std::vector<PttEvent> events;
  std::vector<PttThread> threads;
  std::vector<PttCpuInterval> intervals;
  std::vector<PttIrqVector> irq_vectors;

  bool operator==(const PttData&) const = default;
};

}  // namespace arcprof::model
