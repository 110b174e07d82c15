// libFuzzer target: perf side-band record decoding.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "loader/sideband.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::vector<uint8_t> copy(data, data + size);  // exact-size heap buffer for ASan
  (void)arcprof::DecodeSidebandRecord(copy.data(), copy.size());
  return 0;
}
