// Why a thread went off CPU, from what the sched_switch program saw: its
// state and the system call it was in (x86-64 numbers). The reason becomes a
// pseudo-frame at the leaf of the off-CPU stack ("off-cpu:sleep", ...).
#pragma once

#include <cstdint>
#include <string_view>

namespace arcprof {

enum class OffCpuReason : uint8_t { kPreempted, kSleep, kLock, kIo, kOther };

constexpr OffCpuReason ClassifyOffCpu(int32_t syscall, uint32_t state) {
  constexpr uint32_t kTaskUninterruptible = 0x2;
  if (state == 0) return OffCpuReason::kPreempted;  // still runnable: waited for a CPU
  switch (syscall) {
    case 35:   // nanosleep
    case 230:  // clock_nanosleep
    case 34:   // pause
      return OffCpuReason::kSleep;
    case 202:  // futex
    case 449:  // futex_waitv
      return OffCpuReason::kLock;
    case 0: case 1: case 17: case 18: case 19: case 20:  // read write pread pwrite readv writev
    case 295: case 296: case 327: case 328:              // preadv pwritev preadv2 pwritev2
    case 7: case 23: case 270: case 271:                 // poll select pselect6 ppoll
    case 232: case 281: case 441:                        // epoll_wait epoll_pwait epoll_pwait2
    case 42: case 43: case 288:                          // connect accept accept4
    case 44: case 45: case 46: case 47: case 299: case 307:  // send/recv(m)msg, (m)msg
    case 40: case 275: case 276: case 326:               // sendfile splice tee copy_file_range
    case 74: case 75: case 162: case 277:                // fsync fdatasync sync sync_file_range
    case 206: case 208: case 426:                        // io_setup io_getevents io_uring_enter
      return OffCpuReason::kIo;
    default:
      break;
  }
  // Uninterruptible sleep outside those calls: disk I/O, page faults.
  if (state & kTaskUninterruptible) return OffCpuReason::kIo;
  return OffCpuReason::kOther;
}

// The pseudo-frame's symbol (module "[off-cpu]", kind kernel).
constexpr std::string_view OffCpuReasonFrame(OffCpuReason r) {
  switch (r) {
    case OffCpuReason::kPreempted: return "off-cpu:preempted";
    case OffCpuReason::kSleep: return "off-cpu:sleep";
    case OffCpuReason::kLock: return "off-cpu:lock";
    case OffCpuReason::kIo: return "off-cpu:io";
    case OffCpuReason::kOther: return "off-cpu:other";
  }
  return "off-cpu:other";
}

}  // namespace arcprof
