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

}  // namespace arcprof::model
