// Extensions of a recording session: features with BPF programs or side
// channels of their own (per-thread metrics, JIT symbol sources, ...) plug in
// here instead of growing RunRecord. Each one lives in its own files and is
// listed once in MakeRecordExtensions().
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "common/result.h"

namespace arcprof::model {
struct Profile;
}  // namespace arcprof::model

namespace arcprof {

struct RecordOptions;
class Symbolizer;
class Sampler;
class SampleProcessor;
class StackSink;

// What a recording tells its extensions (each got its own options when made,
// MakeRecordExtensions).
struct RecordContext {
  Symbolizer& symbolizer;
  uint64_t start_monotonic_ns = 0;
  bool system_wide = true;  // false with -p or a command
  std::vector<uint32_t> target_pids;  // -p pids, or the launched command's pid
  // Sampling runs while extensions start. One that blocks in Start (attaching
  // to running JVMs takes seconds) calls drain() meanwhile, so the ring does
  // not overflow and lose the first samples. Samples of held_pids are kept
  // aside (in order) instead of processed until every extension has
  // started: their JIT code is named by what the attach brings.
  std::function<void()> drain;
  std::unordered_set<uint32_t> held_pids;
  // The session's sampler and sample processor, for extensions that feed
  // the BPF side or the frames of a sample (runtimes).
  Sampler* sampler = nullptr;
  SampleProcessor* processor = nullptr;
  // Where value sources (loader/value_source.h) give their stacks and values.
  StackSink* sink = nullptr;
  // During ValueSource::Flush(closing): the end of the window being closed
  // (CLOCK_MONOTONIC ns; 0 for the last one); records after it belong to the
  // next window.
  uint64_t window_end_ns = 0;
};

class RecordExtension {
 public:
  virtual ~RecordExtension() = default;
  virtual std::string_view name() const = 0;
  // Before the sampler attaches: open and load own BPF objects (the
  // verifier and CO-RE relocation take a few hundred ms that must not be
  // spent while samples are already being taken). Optional.
  virtual Result<void> Load(RecordContext& context) { return {}; }
  // Once the sampler is attached (sampling runs): attach own programs, open
  // files, attach to processes. An error aborts the recording (one line, as
  // every error).
  virtual Result<void> Start(RecordContext& context) = 0;
  // On every drain tick (every --drain interval, 100 ms by default).
  virtual void Poll(RecordContext& context) {}
  // When a window closes, after its samples were processed into `window`:
  // add this extension's rows and counters for the time since the previous
  // window (a report over several windows sums them). `last`: sampling has
  // stopped; detach first, this is the final call.
  virtual Result<void> CloseWindow(RecordContext& context, model::Profile& window, bool last) = 0;
  // About how many heap bytes it holds between windows (a daemon's -v
  // accounting at each window close).
  virtual size_t HeldBytes() const { return 0; }
};

// The extensions enabled by these options, in start order.
std::vector<std::unique_ptr<RecordExtension>> MakeRecordExtensions(const RecordOptions& options);

// An extension from outside the tree (a test's value source): every later
// recording of this process asks `make` after the listed ones; it returns
// nullptr when the options leave it off. The shipped ones are listed in
// MakeRecordExtensions instead.
using RecordExtensionMaker = std::function<std::unique_ptr<RecordExtension>(const RecordOptions&)>;
void AddRecordExtension(RecordExtensionMaker make);

}  // namespace arcprof
