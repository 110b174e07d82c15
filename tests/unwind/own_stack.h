// This process's own stack as a sampler would give it to the unwinder:
// registers and a copy of the stack above rsp taken in process, for the
// unwinder's tests (tests/unwind) and benchmark (bench/unwind_walk_bench).
#pragma once

#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "unwind/unwinder.h"

namespace arcprof {

// The top of the main thread's stack, from /proc/self/maps.
inline uint64_t StackTop() {
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) {
    if (line.find("[stack]") == std::string::npos) continue;
    return std::stoull(line.substr(line.find('-') + 1), nullptr, 16);
  }
  return 0;
}

struct Captured {
  uint64_t regs[kUnwindRegs] = {};
  std::vector<uint8_t> stack;
};

// rip, rsp and rbp here, and the stack above rsp (callers' frames).
__attribute__((noinline)) inline void Capture(Captured* out, uint64_t top) {
  uint64_t rip, rsp, rbp;
  asm volatile("lea 0(%%rip), %0\n\tmov %%rsp, %1\n\tmov %%rbp, %2" : "=r"(rip), "=r"(rsp), "=r"(rbp));
  out->regs[16] = rip;
  out->regs[7] = rsp;
  out->regs[6] = rbp;
  const uint64_t len = std::min<uint64_t>(32768, top > rsp ? top - rsp : 0);
  out->stack.resize(len);
  std::memcpy(out->stack.data(), reinterpret_cast<const void*>(rsp), len);
  asm volatile("" ::: "memory");
}

__attribute__((noinline)) inline void CaptureDeeper(Captured* out, uint64_t top, int depth) {
  if (depth == 0) {
    Capture(out, top);
  } else {
    CaptureDeeper(out, top, depth - 1);
  }
  asm volatile("" ::: "memory");  // not a tail call: each level keeps its frame
}

// The walk's input for a stack captured in this process (main thread).
inline UnwindInput OwnInput(const Captured& c) {
  UnwindInput input;
  input.pid = static_cast<uint32_t>(getpid());
  input.tid = static_cast<uint32_t>(gettid());
  input.t_ns = 2000;
  input.regs = c.regs;
  input.stack = c.stack.data();
  input.stack_len = c.stack.size();
  return input;
}

}  // namespace arcprof
