// Fuzzes what the Python runtime reads from outside: a sample record with a
// runtime block (bpf/runtimes.h) through the one decoder, and the bytes of a
// file's _PyRuntime read as 3.13's _Py_DebugOffsets, the code of a file's
// PyInterpreterState_Head (2.7, 3.6), and line tables of every format (a
// process's co_linetable / co_lnotab, 2.7's unsigned one included).
#include <cstdint>
#include <cstring>
#include <utility>
#include <vector>

#include "loader/stack_sample.h"
#include "runtimes.h"
#include "runtimes/python/python_runtime.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::vector<uint64_t> aligned((size + 7) / 8);
  if (size) memcpy(aligned.data(), data, size);
  if (auto s = arcprof::DecodeStackSample(aligned.data(), size)) {
    uint64_t sum = 0;
    for (const runtime_frame& f : s->runtime_frames) sum += f.code ^ f.instr ^ f.stamp;
    for (uint8_t b : s->user_stack) sum += b;
    (void)sum;
  }
  for (uint32_t minor : {12u, 13u, 14u}) {
    if (auto o = arcprof::runtimes::PythonOffsetsFromDebug({data, size}, minor)) {
      (void)arcprof::runtimes::PythonOffsetsText(*o);
    }
  }
  if (auto head = arcprof::runtimes::PythonInterpHeadFromCode({data, size}, 0x1000)) (void)*head;
  for (auto [major, minor] : {std::pair{2u, 7u}, {3u, 6u}, {3u, 9u}, {3u, 10u}, {3u, 11u}}) {
    for (int64_t addr : {int64_t{0}, int64_t{6}, static_cast<int64_t>(size)}) {
      (void)arcprof::runtimes::PythonLine(major, minor, {data, size}, 1, addr);
    }
  }
  return 0;
}
