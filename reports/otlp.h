// OTLP profiles export: the OpenTelemetry profiles signal, the messages of
// opentelemetry-proto v1.11.0 vendored in reports/proto/opentelemetry/
// (docs/exports.md, "otlp").
//
// The result is a serialized
// opentelemetry.proto.collector.profiles.v1development.ExportProfilesServiceRequest,
// the body an OTLP/HTTP exporter POSTs to /v1development/profiles; its bytes
// are also a valid ProfilesData (same fields and numbers), the signal's file form.
//
// Content, for the threads the filter selects:
//   - one ResourceProfiles per distinct set of resource attributes: host.name
//     (the capture's host, or each thread's in a merge of several machines),
//     the process's container.id, k8s.pod.uid and service.name where known
//     (model/process_identity.h), and the extra attributes given (they
//     replace one of the same key: --service-name, --label); so one resource
//     per container, pod and service, and one for the rest of the machine. A
//     capture without samples still gives one resource (its host) with empty
//     profiles;
//   - in it one ScopeProfiles (scope "arcprof", the capture's arcprof version)
//     holding one Profile per sample type, as the pprof export's value types
//     (reports/profile_samples.h): (samples, count), (cpu, nanoseconds), then
//     every other value type of the capture (offcpu) and, with off-CPU time,
//     (wall, nanoseconds). Period type cpu/nanoseconds, period 1e9 / frequency,
//     time_unix_nano and duration_nano of the capture;
//   - one Sample per (thread, sampled stack) whose value of that type is not
//     zero, with attributes process.pid, process.executable.name, thread.id
//     and thread.name (OpenTelemetry semantic-convention names);
//   - a shared dictionary: one Stack per distinct stack (leaf first), one
//     Location per physical frame with the frames inlined into it as further
//     lines (innermost first), one Function per name (the frame's display
//     name), one Mapping per module with its GNU build id as attribute
//     process.executable.build_id.gnu (kernel frames in "[kernel.kallsyms]",
//     JIT and interpreted frames without a mapping).
// Every profile's id is derived from `profile_id_seed` (a window's stable id
// when pushed), the resource and the sample type, so a resend of one window
// carries the same ids; "" leaves the ids unset.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "common/result.h"
#include "model/metric.h"
#include "model/profile.h"
#include "model/thread_filter.h"

namespace arcprof::reports {

struct OtlpOptions {
  std::string profile_id_seed;
  // Added to every resource's attributes, replacing one of the same key.
  std::vector<std::pair<std::string, std::string>> resource_attributes;
};

// The serialized ExportProfilesServiceRequest. `cpu`: as EncodePprof's.
std::string EncodeOtlp(const model::Profile& profile, const model::ThreadFilter& filter,
                       const OtlpOptions& options = {}, const model::Metric* cpu = nullptr);

// 16 bytes derived from `text` alone (two FNV-1a hashes, big-endian): stable
// across builds and machines. Pushed windows' OTLP profile ids, and the
// Pyroscope profile UUID with its version bits set (push/push_request.h).
std::string StableId16(const std::string& text);

}  // namespace arcprof::reports
