#include "push/push_request.h"

#include <curl/curl.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <tuple>

#include "proto/profile.pb.h"
#include "push/v1/push.pb.h"
#include "reports/otlp.h"
#include "reports/pprof.h"
#include "reports/profile_samples.h"
#include "model/metric.h"
#include "model/thread_filter.h"

namespace arcprof::push {
using namespace arcprof::model;
using namespace arcprof::reports;
namespace {

std::string Trim(const std::string& url) {
  std::string base = url;
  while (!base.empty() && base.back() == '/') base.pop_back();
  return base;
}

std::string UrlEscape(const std::string& text) {
  char* escaped = curl_easy_escape(nullptr, text.data(), static_cast<int>(text.size()));
  std::string out = escaped ? escaped : "";
  curl_free(escaped);
  return out;
}

}  // namespace

Labels SeriesLabels(const std::string& service_name, const std::string& host, const Labels& extra) {
  Labels labels = {{"__name__", "process_cpu"}, {"service_name", service_name}, {"host", host}};
  for (const auto& label : extra) {
    auto it = std::find_if(labels.begin(), labels.end(), [&](const auto& l) { return l.first == label.first; });
    if (it != labels.end()) {
      it->second = label.second;
    } else {
      labels.push_back(label);
    }
  }
  return labels;
}

Result<std::pair<std::string, std::string>> ParseLabel(std::string_view arg) {
  const size_t eq = arg.find('=');
  auto fail = [&](const std::string& why) {
    std::string shown(arg.substr(0, 64));
    for (char& c : shown) {
      if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '?';
    }
    return MakeError("--label '" + shown + "': " + why + " (expected KEY=VALUE)");
  };
  if (eq == std::string_view::npos || eq == 0) return fail("no key");
  const std::string key(arg.substr(0, eq));
  const std::string value(arg.substr(eq + 1));
  for (size_t i = 0; i < key.size(); ++i) {
    const char c = key[i];
    const bool ok = c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (i > 0 && c >= '0' && c <= '9');
    if (!ok) return fail("a label name is letters, digits and '_', not starting with a digit");
  }
  if (key.rfind("__", 0) == 0) return fail("names starting with '__' are reserved");
  if (value.empty()) return fail("empty value");
  if (value.size() > 1024) return fail("value longer than 1024 bytes");
  return std::pair{key, value};
}

std::string ProfileUuid(std::string_view stable_window_id) {
  const std::string id = StableId16(std::string(stable_window_id));
  uint64_t high = 0, low = 0;
  for (int i = 0; i < 8; ++i) {
    high = high << 8 | static_cast<unsigned char>(id[i]);
    low = low << 8 | static_cast<unsigned char>(id[8 + i]);
  }
  // RFC 9562 layout: version 8 (custom), variant 10.
  const uint64_t h = (high & ~0xf000ull) | 0x8000ull;
  const uint64_t l = (low & ~(3ull << 62)) | (2ull << 62);
  char text[37];
  std::snprintf(text, sizeof text, "%08llx-%04llx-%04llx-%04llx-%012llx",
                static_cast<unsigned long long>(h >> 32), static_cast<unsigned long long>((h >> 16) & 0xffff),
                static_cast<unsigned long long>(h & 0xffff), static_cast<unsigned long long>(l >> 48),
                static_cast<unsigned long long>(l & 0xffffffffffffull));
  return text;
}

Result<std::string> WindowPprof(const Profile& window, const ThreadFilter& filter, const Metric* cpu) {
  return WindowPprof(window, SelectThreads(window, filter), cpu);
}

Result<std::string> WindowPprof(const Profile& window, std::span<const ThreadRecord* const> threads,
                                const Metric* cpu) {
  // Encoded with only comm and host as labels: encoding every label, reading
  // the profile back and writing it again without them cost the push thread
  // a fifth of its CPU under churn.
  return Gzip(EncodePprof(window, threads, "samples", cpu, reports::PprofLabels::kProcessName), kPushGzipLevel);
}

Result<std::vector<WindowSeries>> SplitWindow(const Profile& window, std::string_view stable_window_id,
                                              const std::string& service_name, const std::string& host,
                                              const Labels& extra) {
  // (service, container, pod) -> the threads of its processes. A process is a
  // pid and its start: a pid that another process held in the same window
  // (in another container) is that process's, not this series'. Every thread
  // of a series' processes is in it, sampled or not, as when selected by
  // process. Found in one pass over the window, not one per series: under
  // churn a window has 12,000 processes and tens of series.
  std::map<std::tuple<std::string, std::string, std::string>, size_t> groups;  // -> index
  struct Member {
    uint32_t pid = 0;
    uint64_t start_ns = 0;
    size_t group = 0;
    auto operator<=>(const Member&) const = default;
  };
  std::vector<Member> members;
  for (const ThreadRecord& t : window.threads) {
    if (t.tree.total(kSamplesValue) == 0 && t.tree.size() <= 1) continue;
    const ProcessIdentity& id = t.identity;
    std::string service = !service_name.empty()      ? service_name
                          : !id.service_name.empty() ? id.service_name
                                                     : ProcessName(t);
    const size_t next = groups.size();
    const auto it = groups.try_emplace({std::move(service), id.container_id, id.pod_uid}, next).first;
    members.push_back({t.pid, t.process_start_ns, it->second});
  }
  std::sort(members.begin(), members.end());
  members.erase(std::unique(members.begin(), members.end()), members.end());
  std::vector<std::vector<const ThreadRecord*>> threads_of(groups.size());
  for (const ThreadRecord& t : window.threads) {
    auto it = std::lower_bound(members.begin(), members.end(), Member{t.pid, t.process_start_ns, 0});
    for (; it != members.end() && it->pid == t.pid && it->start_ns == t.process_start_ns; ++it) {
      threads_of[it->group].push_back(&t);
    }
  }
  std::vector<WindowSeries> out;
  const bool one = groups.size() <= 1;
  // CPU time per sample, resolved once: it reads every thread of the window
  // and PTT's table, and a churning machine's window is tens of series.
  const Result<Metric> cpu = Metric::Select(window, "cpu");
  const Metric* cpu_metric = cpu.ok() ? &cpu.value() : nullptr;
  for (const auto& [key, index] : groups) {
    const auto& [service, container, pod] = key;
    Labels identity;
    if (!container.empty()) identity.emplace_back("container_id", container);
    if (!pod.empty()) identity.emplace_back("pod_uid", pod);
    Labels all = identity;
    all.insert(all.end(), extra.begin(), extra.end());
    Labels labels = SeriesLabels(service, host, all);
    auto pprof = WindowPprof(window, threads_of[index], cpu_metric);
    if (!pprof) return pprof.error();
    const std::string apart = one && container.empty() && pod.empty()
                                  ? std::string()
                                  : service + '\n' + container + '\n' + pod;
    out.push_back({std::move(labels), std::move(*pprof),
                   ProfileUuid(apart.empty() ? std::string(stable_window_id)
                                             : std::string(stable_window_id) + '\n' + apart)});
  }
  if (out.empty()) {  // a window without threads: one empty series, as before
    auto pprof = WindowPprof(window);
    if (!pprof) return pprof.error();
    out.push_back({SeriesLabels(service_name.empty() ? "arcprof" : service_name, host, extra), std::move(*pprof),
                   ProfileUuid(stable_window_id)});
  }
  return out;
}

std::string EncodePushRequest(const std::vector<WindowSeries>& all) {
  ::push::v1::PushRequest request;
  for (const WindowSeries& s : all) {
    ::push::v1::RawProfileSeries* series = request.add_series();
    for (const auto& [name, value] : s.labels) {
      ::types::v1::LabelPair* pair = series->add_labels();
      pair->set_name(name);
      pair->set_value(value);
    }
    ::push::v1::RawSample* sample = series->add_samples();
    sample->set_raw_profile(s.gzipped_pprof);
    sample->set_id(s.profile_uuid);
  }
  std::string bytes;
  request.SerializeToString(&bytes);
  return bytes;
}

std::string EncodePushRequest(const Labels& labels, const std::string& gzipped_pprof,
                              const std::string& profile_uuid) {
  ::push::v1::PushRequest request;
  ::push::v1::RawProfileSeries* series = request.add_series();
  for (const auto& [name, value] : labels) {
    ::types::v1::LabelPair* pair = series->add_labels();
    pair->set_name(name);
    pair->set_value(value);
  }
  ::push::v1::RawSample* sample = series->add_samples();
  sample->set_raw_profile(gzipped_pprof);
  sample->set_id(profile_uuid);
  std::string bytes;
  request.SerializeToString(&bytes);
  return bytes;
}

std::string IngestUrl(const std::string& base_url, const Labels& labels, uint64_t from_unix_s,
                      uint64_t until_unix_s, uint64_t sample_rate_hz) {
  // Pyroscope's ingest name: SERVICE{key=value,...}; __name__ is implied by
  // the pprof's sample types.
  std::string service;
  std::string rest;
  for (const auto& [key, value] : labels) {
    if (key == "__name__") continue;
    if (key == "service_name") {
      service = value;
      continue;
    }
    if (!rest.empty()) rest += ',';
    rest += key + "=" + value;
  }
  const std::string name = service + "{" + rest + "}";
  return Trim(base_url) + "/ingest?name=" + UrlEscape(name) + "&from=" + std::to_string(from_unix_s) +
         "&until=" + std::to_string(until_unix_s) + "&format=pprof&sampleRate=" +
         std::to_string(sample_rate_hz) + "&spyName=arcprof";
}

std::string PushUrl(const std::string& base_url) { return Trim(base_url) + "/push.v1.PusherService/Push"; }

}  // namespace arcprof::push
