// Reading the per-CPU counter arrays our BPF programs keep (drops, errors).
#pragma once

#include <bpf/libbpf.h>

#include <cstdint>
#include <vector>

namespace arcprof {

// Sum over every possible CPU of slot `index` of a BPF_MAP_TYPE_PERCPU_ARRAY of
// u64; 0 when the map cannot be read.
inline uint64_t SumPerCpuCounter(const bpf_map* map, uint32_t index) {
  const int ncpu = libbpf_num_possible_cpus();
  if (ncpu <= 0) return 0;
  std::vector<uint64_t> values(static_cast<size_t>(ncpu));
  if (bpf_map__lookup_elem(map, &index, sizeof(index), values.data(),
                           values.size() * sizeof(uint64_t), 0) != 0) {
    return 0;
  }
  uint64_t sum = 0;
  for (uint64_t v : values) sum += v;
  return sum;
}

}  // namespace arcprof
