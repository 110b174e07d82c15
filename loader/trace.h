// `arcprof trace --root FUNC`: exact call counts and times of FUNC's call
// subgraph, as a recording whose call trees also hold the value types
// `calls` and `wall` (ns). docs/usage.md "trace", docs/design.md "Tracing a
// subgraph".
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "common/result.h"

namespace arcprof {

struct RecordOptions;

// What the trace extension found, for the command's last words.
struct TraceOutcome {
  bool process_exited = false;  // a -p process exited while traced
  uint32_t exited_pid = 0;
};

struct TraceOptions {
  std::string root;           // --root FUNC (empty: no trace)
  double discover_s = 0.5;    // -p: sampling before the probes go in
  bool calibrate = true;      // subtract the probes' own cost
  size_t max_functions = 20000;
  bool java = false;          // a JVM's method (pkg.Class.method): loader/java_trace.h
  std::shared_ptr<TraceOutcome> outcome = std::make_shared<TraceOutcome>();
};

// Runs `record` with the trace extension (options.trace set). Errors (a FUNC
// not found or never called, a process that is not the caller's, ...) are
// one line; the CLI exits 2 for them.
Result<int> RunTrace(const RecordOptions& options);

}  // namespace arcprof
