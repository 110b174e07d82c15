// The value types recordings declare beside `samples` (Profile::value_types,
// model/profile.h): each one's name and unit spelled once, here. A value
// source (loader/value_source.h) adds values of its types; every view and
// export reads them by name (`--metric NAME`, model/metric.h). `pprof` is
// the sample type name the pprof export writes when it differs (the Go heap
// profile's names, so `go tool pprof -sample_index=inuse_space` works).
#pragma once

#include <string>
#include <string_view>

#include "model/profile.h"

namespace arcprof::model {

struct ValueTypeName {
  std::string_view name;
  std::string_view unit;
  std::string_view pprof = {};  // pprof sample type; "" = name
  // A level as of the window's end (memory in use), not a sum over it: of
  // two consecutive windows merged into one, the later one's holds.
  bool as_of_end = false;

  ValueType type() const { return ValueType{std::string(name), std::string(unit)}; }
  std::string_view pprof_name() const { return pprof.empty() ? name : pprof; }
};

// record --off-cpu: time off CPU (blocked, sleeping or waiting for a CPU).
inline constexpr ValueTypeName kOffCpuNs{"offcpu", "nanoseconds"};
// arcprof trace: exact calls of a node, and its own time per call summed
// (self; inclusive is the node and everything under it). A declared `wall`
// is read as declared, not as the derived cpu + offcpu (model/metric.h).
inline constexpr ValueTypeName kTraceCalls{"calls", "count"};
inline constexpr ValueTypeName kTraceWallNs{"wall", "nanoseconds"};

// record --alloc: sampled allocations, unbiased (docs/design.md
// "Allocations"). The pprof names are the Go heap profile's.
inline constexpr ValueTypeName kAllocBytes{"alloc_bytes", "bytes", "alloc_space"};
inline constexpr ValueTypeName kAllocCount{"alloc_count", "count", "alloc_objects"};
inline constexpr ValueTypeName kInuseBytes{"inuse_bytes", "bytes", "inuse_space", true};
inline constexpr ValueTypeName kInuseCount{"inuse_count", "count", "inuse_objects", true};

// The pprof sample type name of a declared type (the name unless it is one
// of the above with a pprof name of its own).
std::string_view PprofTypeName(std::string_view name);

// Zeroes the values of the types that are levels as of a window's end
// (`as_of_end`), before a later window is merged into this one.
void DropValuesAsOfEnd(Profile& window);

}  // namespace arcprof::model
