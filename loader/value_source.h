// A value source: a kind of value recorded with its stacks (off-CPU time,
// allocations, ...), docs/design.md "Value sources". It is a RecordExtension
// (registered with one line in MakeRecordExtensions) whose BPF program, in
// its own bpf/NAME.bpf.c, writes stack records into the sampler's ring
// (bpf/stack_record.bpf.h: the shared filter, record builder and stack copy;
// Sampler::ShareRecordMaps points its object at the sampler's maps). The
// session hands each of its records, in time order with the samples, to
// OnRecord; the source gives stacks and values to the StackSink, which
// unwinds, names and folds them exactly as it does samples.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/frame.h"
#include "loader/record_extension.h"
#include "model/value_types.h"
#include "symbolize/symbolizer.h"

namespace arcprof {

struct StackSample;

// A source record's stack, unwound and named: user frames then kernel
// frames, each root first (the tracing glue at the kernel leaf left out).
// Names point into the symbolizer's pool: valid until the window closes.
struct SourceStack {
  uint32_t pid = 0;
  uint32_t tid = 0;
  uint64_t t_ns = 0;  // the record's time: which process held pid then
  std::string_view comm;
  std::vector<SymbolizedFrame> user;
  std::vector<SymbolizedFrame> kernel;
};

// A pseudo-frame a source puts at the leaf ("[off-cpu]" "off-cpu:sleep").
struct LeafFrame {
  std::string_view module;
  std::string_view symbol;
  FrameKind kind = FrameKind::kKernel;
};

struct SourceValue {
  model::ValueTypeName type;
  uint64_t value = 0;
};

// The folding every source shares (the session's sample processor).
class StackSink {
 public:
  virtual ~StackSink() = default;
  // The stack a record of a source carried (sample.source set).
  virtual SourceStack Stack(const StackSample& sample) = 0;
  // Keeps `stack` (frames copied, `leaf` after them) under (source, key)
  // across windows, replacing what the key held.
  virtual void Keep(uint32_t source, uint64_t key, const SourceStack& stack, std::span<const LeafFrame> leaf) = 0;
  // Adds values at the kept stack of (source, key) in the open window, in
  // its thread: the record of the process that held the pid when the stack
  // was kept, never a later process's that reused the pid. False (nothing
  // added) when the key holds no stack.
  virtual bool Add(uint32_t source, uint64_t key, std::span<const SourceValue> values) = 0;
  virtual void Forget(uint32_t source, uint64_t key) = 0;
  virtual bool Keeps(uint32_t source, uint64_t key) const = 0;
  struct Kept {
    uint64_t key = 0;
    uint32_t pid = 0, tid = 0;
    uint64_t t_ns = 0;  // the time of the record it was kept from (SourceStack::t_ns)
  };
  // Every key of `source` with a kept stack, and its thread.
  virtual std::vector<Kept> KeptKeys(uint32_t source) const = 0;
  // Routes the records of `source` to `to` (OnRecord) until the sink is gone.
  virtual void Route(uint32_t source, class ValueSource* to) = 0;
};

class ValueSource : public RecordExtension {
 public:
  // One of its records (StackSample::source is its id), with the sink to
  // give the stack and values to.
  virtual void OnRecord(const StackSample& record, StackSink& sink) = 0;
  // Adds what the source summed since the last call (in BPF maps) to the
  // open window through the sink: before a window is taken (`closing`:
  // values as of the window's end, such as memory in use, go in now) and
  // before the session folds threads of the window.
  virtual void Flush(RecordContext& context, bool closing) {}
  // Sampling stops (the last window follows): detach the programs, so that
  // the final drain has an end.
  virtual void Detach() {}
};

}  // namespace arcprof
