// `record --alloc`: native allocations as a value source
// (loader/value_source.h; docs/design.md "Allocations"). Uprobes on libc's
// allocator (bpf/alloc.bpf.c) sample allocations by bytes, one per
// `rate` bytes on average; each sampled allocation's stack gets its
// unbiased alloc_bytes and alloc_count at once, and, at every window close,
// inuse_bytes and inuse_count for the sampled blocks still live then.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "loader/record_extension.h"
#include "spaces/proc_parse.h"

namespace arcprof {

struct AllocSourceOptions {
  uint64_t rate = 512 * 1024;    // --alloc-rate: mean bytes between samples
  uint32_t max_blocks = 65536;   // --alloc-max-blocks: live sampled blocks tracked
  bool system_wide = false;      // every process of the machine (a warning says what it costs)
  bool quiet = false;
};

std::unique_ptr<RecordExtension> MakeAllocSource(AllocSourceOptions options);

// The unbiased (count, bytes) one sampled allocation of `size` bytes stands
// for at a mean sampling interval of `rate` bytes (pprof's heap scaling:
// 1 / (1 - exp(-size / rate)) allocations).
struct AllocWeight {
  double count = 0;
  double bytes = 0;
};
AllocWeight UnbiasAllocation(uint64_t size, uint64_t rate);

// A mapping of the libc.so.6 a process maps (its path, device and inode as
// /proc/PID/maps names them), if any.
std::optional<procfs::MapsEntry> LibcMappingOf(std::string_view maps);

}  // namespace arcprof
