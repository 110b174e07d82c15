// What the pprof and OTLP exports share (reports/pprof.h, reports/otlp.h):
// the value types of the samples they write, the walk over every sampled
// stack of every thread with its values, its frames grouped into locations
// (one physical frame and the frames inlined into it), and how a frame and
// its module are named there.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "model/metric.h"
#include "model/profile.h"
#include "model/thread_filter.h"

namespace arcprof::reports {

// The values of every written sample, in this order: (samples, count),
// (cpu, nanoseconds), then every other value type the profile declares and
// some selected node has (offcpu ns with record --off-cpu), and with off-CPU
// time (wall, nanoseconds) = cpu + offcpu.
struct SampleSchema {
  std::vector<model::ValueType> types;
  std::vector<size_t> declared;       // the profile's value type of types[2 ..]
  std::optional<size_t> offcpu;       // the offcpu value type, when wall is written
  uint64_t frequency_hz = 0;
  int64_t period_ns = 0;              // 1e9 / frequency, rounded
  // --metric cpu in nanoseconds: PTT's measured CPU time per thread where the
  // capture has it, samples x period otherwise.
  model::Metric cpu;
};

// `cpu`: --metric cpu resolved on the whole capture, when `profile` is a cut
// of it; null resolves it on `profile`.
SampleSchema DescribeSamples(const model::Profile& profile, const model::Metric* cpu = nullptr);

// Calls `sample` once per (selected thread, call-tree node with a value): the
// node's stack as location ids leaf first and its values in schema.types
// order. Threads in profile order, each one's nodes in depth-first preorder
// (children in creation order), which a capture's trees keep: a profile and
// its capture read back give the same calls. A location id comes from
// `location(frames)`, called once per group of frames per thread: the
// frames leaf first, all but the last inlined into the next one (the last is
// the physical frame).
using LocationOf = std::function<uint64_t(const std::vector<uint32_t>& frames)>;
using SampleSink = std::function<void(const model::ThreadRecord& thread, std::span<const uint64_t> locations,
                                      std::span<const int64_t> values)>;
void ForEachSample(const model::Profile& profile, const model::ThreadFilter& filter, const SampleSchema& schema,
                   const LocationOf& location, const SampleSink& sample);
// The same over `threads` (threads of `profile`, in its order: SelectThreads).
void ForEachSample(const model::Profile& profile, std::span<const model::ThreadRecord* const> threads,
                   const SampleSchema& schema, const LocationOf& location, const SampleSink& sample);

// The threads of `profile` that `filter` selects, in profile order: looked up
// once for the several passes of an export (a push series of a churning
// machine's window is a few of its 12,000 threads, and a window is tens of series).
std::vector<const model::ThreadRecord*> SelectThreads(const model::Profile& profile,
                                                      const model::ThreadFilter& filter);

// The location id of every distinct group of frames (what LocationOf
// returns): a group seen before gets its id again, a new one make(frames)'s.
class LocationIds {
 public:
  explicit LocationIds(size_t frame_count) : single_(frame_count, 0) {}
  uint64_t Get(const std::vector<uint32_t>& frames, const LocationOf& make);

 private:
  std::vector<uint64_t> single_;  // by frame id, for groups of one frame (0: none yet)
  std::map<std::vector<uint32_t>, uint64_t> multi_;
};

// The name a function gets: the frame's display name (model/frame_name.h), valid UTF-8.
std::string ExportFunctionName(const model::FrameTable& frames, uint32_t id);
// The mapping a frame belongs to: its module; kernel frames share the
// conventional "[kernel.kallsyms]"; JIT and interpreted frames and frames
// without a module have none ("").
std::string ExportMappingName(const model::FrameTable& frames, const model::FrameRecord& frame);
// The source file of a runtime's frame (python, js: its module), valid UTF-8;
// "" for other frames. A function is its name and this file.
std::string ExportSourceFile(const model::FrameTable& frames, const model::FrameRecord& frame);
// The source line of a runtime's frame, 0 for other frames.
int64_t ExportSourceLine(const model::FrameRecord& frame);
// A location's address: none (0) for a runtime's frame, whose address is a line.
uint64_t ExportAddress(const model::FrameRecord& frame);

}  // namespace arcprof::reports
