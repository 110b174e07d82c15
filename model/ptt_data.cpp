#include "model/ptt_data.h"

#include <iterator>

namespace arcprof::model {

std::string SoftIrqName(uint32_t vector) {
  static constexpr const char* kNames[] = {"HI",      "TIMER",   "NET_TX",  "NET_RX", "BLOCK",
                                           "IRQ_POLL", "TASKLET", "SCHED", "HRTIMER", "RCU"};
  if (vector < std::size(kNames)) return kNames[vector];
  return "softirq " + std::to_string(vector);
}

std::string SysVecName(uint32_t vector) {
  // /proc/interrupts' abbreviations.
  static constexpr const char* kNames[] = {"LOC", "RES", "CAL", "CAL1", "IWI"};
  if (vector < std::size(kNames)) return kNames[vector];
  return "sysvec " + std::to_string(vector);
}

void PttThread::Add(const PttThread& other) {
  cpu_ns += other.cpu_ns;
  hardirq_ns += other.hardirq_ns;
  softirq_ns += other.softirq_ns;
  dispatches += other.dispatches;
  interrupts += other.interrupts;
  if (events.size() < other.events.size()) events.resize(other.events.size());
  for (size_t e = 0; e < other.events.size(); ++e) events[e] += other.events[e];
  if (!other.comm.empty()) comm = other.comm;
}

}  // namespace arcprof::model
