// `arcprof trace --root pkg.Class.method` of a JVM (docs/java.md, "Tracing a
// Java subgraph"): the agent is loaded into the JVM (or, loaded already,
// called again) with a control socket; it probes the root's subgraph by
// class retransformation and sends the call trees back when told to stop or
// removes every probe by itself when the connection closes
// (runtimes/java/agent/trace_agent.h has the protocol).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "loader/java_trace_reply.h"
#include "loader/record_extension.h"
#include "loader/trace.h"

namespace arcprof {

// Whether the trace of `options` goes to a JVM: the root reads as
// pkg.Class.method and the target (-p pid, or the command) is a JVM.
bool IsJavaTrace(const std::string& root, uint32_t pid, const std::vector<std::string>& command);

std::unique_ptr<RecordExtension> MakeJavaTraceExtension(const TraceOptions& options, bool launched, bool quiet);

}  // namespace arcprof
