// `arcprof trace`: the probes of a root's call subgraph as a RecordExtension
// (docs/design.md, "Tracing a subgraph"). Start finds the root and the
// functions under it (call-site decoding, and samples of a running process),
// calibrates the probes' cost and attaches them; Poll adds functions the
// samples show under the root; the last CloseWindow detaches everything and
// adds the exact call tree (value types `calls` and `wall`) under the sampled
// path that led to the root.
#pragma once

#include <memory>
#include <string>

#include "loader/record_extension.h"
#include "loader/trace.h"

namespace arcprof {

// `command0`: the command's program (-- CMD), "" with -p.
std::unique_ptr<RecordExtension> MakeTraceExtension(const TraceOptions& options, std::string command0,
                                                    bool quiet);

}  // namespace arcprof
