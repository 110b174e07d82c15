// pprof export: a gzipped perftools.profiles.Profile (reports/proto/profile.proto,
// docs/formats.md §3), readable by `go tool pprof`.
//
// Content: sample types (samples, count), (cpu, nanoseconds), then every other
// value type the capture has (offcpu) and, with off-CPU time, (wall,
// nanoseconds) = cpu + offcpu; period type cpu nanoseconds, period
// 1e9 / frequency. The cpu values are those of --metric cpu (model/metric.h),
// in nanoseconds: the CPU time PTT measured for a thread shared out over its
// samples, or samples x period for threads PTT did not measure; a comment of
// the profile says which. One sample per (thread, sampled stack) with labels pid,
// tid (numbers), comm (process name), thread_name, the process's identity
// where it has one (container.id, k8s.pod.uid, service.name; ns_pid, a
// number, when it differs from pid) and, in a merge of several machines,
// host; one location per
// physical frame, frames inlined into it as further lines of that location
// (innermost first); one mapping per module (kernel frames in
// "[kernel.kallsyms]", JIT and interpreted frames without a mapping); one
// function per name. time_nanos and duration_nanos from the capture.
#pragma once

#include <span>
#include <string>
#include <string_view>

#include "common/result.h"
#include "model/metric.h"
#include "model/profile.h"
#include "model/thread_filter.h"

namespace arcprof::reports {

// Which labels a sample carries: all of the above, or only the process name
// (comm) and, in a merge, host: what a Pyroscope push keeps, since its server
// makes a series of every sample label (push/push_request.h).
enum class PprofLabels { kAll, kProcessName };

// The serialized (uncompressed) Profile message of the selected threads.
// `cpu`: --metric cpu resolved on the whole capture, when `profile` is a cut
// of it (--root, --min: each thread's CPU time per sample comes from its
// whole tree); null resolves it on `profile`.
std::string EncodePprof(const model::Profile& profile, const model::ThreadFilter& filter,
                        const std::string& default_metric = "samples", const model::Metric* cpu = nullptr,
                        PprofLabels labels = PprofLabels::kAll);
// The same of `threads` (threads of `profile`, in its order; SelectThreads
// in reports/profile_samples.h), for a caller that has picked them already.
std::string EncodePprof(const model::Profile& profile, std::span<const model::ThreadRecord* const> threads,
                        const std::string& default_metric, const model::Metric* cpu, PprofLabels labels);
// gzip (RFC 1952) of `bytes`, as pprof files are stored. `level`: zlib's 1
// (fastest) to 9 (smallest); 6 is zlib's default.
Result<std::string> Gzip(std::string_view bytes, int level = 6);
// EncodePprof, gzipped: the content of a .pb.gz file.
Result<std::string> PprofFile(const model::Profile& profile, const model::ThreadFilter& filter,
                              const std::string& default_metric = "samples", const model::Metric* cpu = nullptr);

}  // namespace arcprof::reports
