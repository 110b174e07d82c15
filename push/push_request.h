// What arcprof sends to a Pyroscope server for one closed window: the request
// bodies of the push API and of the older /ingest endpoint. Pure functions (no
// I/O), so they are tested without a server.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/result.h"
#include "model/profile.h"
#include "model/metric.h"
#include "model/thread_filter.h"

namespace arcprof::push {

using Labels = std::vector<std::pair<std::string, std::string>>;

// The series labels of a window: __name__=process_cpu, service_name,
// host, then the user's --label pairs in order. A user label may replace
// service_name or host but not __name__. Labels that vary per window (its id,
// its time) are never series labels: they would make one series per window.
Labels SeriesLabels(const std::string& service_name, const std::string& host, const Labels& extra);

// Checks one --label argument "key=value": the key is a Prometheus-style label
// name ([A-Za-z_][A-Za-z0-9_]*, not starting with "__"), the value non-empty
// and at most 1024 bytes. Returns the pair or a one-line error.
Result<std::pair<std::string, std::string>> ParseLabel(std::string_view arg);

// The profile id (a UUID string) of a window, derived only from its stable id,
// so every resend of one window carries the same id.
std::string ProfileUuid(std::string_view stable_window_id);

// zlib's level for what push sends (pprof and OTLP bodies): its fastest. Level
// 6 (`arcprof export`'s) made gzip a third of the push thread under churn;
// level 1 takes 0.43x its time for bodies 6% larger (bench/
// push_window_bench.cpp). The bytes differ, what they decode to does not.
inline constexpr int kPushGzipLevel = 1;

// The gzipped pprof of one window as pushed: the pprof export of every thread
// (reports/pprof.h) with only the process name ("comm") kept as a sample
// label. Pyroscope turns sample labels into series, so pid, tid and thread
// names would create a series per thread (and container.id, k8s.pod.uid and
// service.name are series labels, SplitWindow). `filter`: only those threads.
// `cpu`: --metric cpu resolved on the window once for all its series (null:
// resolved here).
Result<std::string> WindowPprof(const model::Profile& window, const model::ThreadFilter& filter = {},
                                const model::Metric* cpu = nullptr);
// The same of `threads` (threads of `window`, in its order).
Result<std::string> WindowPprof(const model::Profile& window, std::span<const model::ThreadRecord* const> threads,
                                const model::Metric* cpu);

// The serialized push.v1.PushRequest: one series (`labels`) holding one sample
// (`gzipped_pprof`, id `profile_uuid`).
std::string EncodePushRequest(const Labels& labels, const std::string& gzipped_pprof,
                              const std::string& profile_uuid);

// One series of a window: the threads of one (service, container, pod).
struct WindowSeries {
  Labels labels;
  std::string gzipped_pprof;  // WindowPprof of those threads
  std::string profile_uuid;
};

// A window as Pyroscope series, one per service_name, container_id and
// pod_uid of its processes (model/process_identity.h): labels
// SeriesLabels(service, host, ...) with container_id and pod_uid where the
// process has them, then the --label pairs (which may replace any of them).
// `service_name` non-empty: every process's service is that one (push
// --service-name). A process without an identity (captures before schema 6)
// is its process name's service. Each series' profile id comes from the
// window's stable id and, unless the window is one series without container
// or pod, from what sets the series apart, so a resend carries the same ids.
Result<std::vector<WindowSeries>> SplitWindow(const model::Profile& window, std::string_view stable_window_id,
                                              const std::string& service_name, const std::string& host,
                                              const Labels& extra);

// The serialized push.v1.PushRequest of every series of a window.
std::string EncodePushRequest(const std::vector<WindowSeries>& series);

// The URL of the fallback for servers without the push API:
// BASE/ingest?name=SERVICE{k=v,...}&from=S&until=S&format=pprof&spyName=arcprof
// with the window's start and end in Unix seconds; the body is the gzipped pprof.
std::string IngestUrl(const std::string& base_url, const Labels& labels, uint64_t from_unix_s,
                      uint64_t until_unix_s, uint64_t sample_rate_hz);
// BASE/push.v1.PusherService/Push
std::string PushUrl(const std::string& base_url);

}  // namespace arcprof::push
