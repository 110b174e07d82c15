#include "push/backend.h"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "push/capture_windows.h"
#include "push/push_request.h"
#include "push/pusher.h"
#include "reports/otlp.h"
#include "reports/pprof.h"

namespace arcprof::push {
using namespace arcprof::model;
namespace {

constexpr char kOtlpScheme[] = "otlp+";

std::vector<std::string> TenantHeaders(const PushOptions& options) {
  std::vector<std::string> headers;
  if (!options.tenant.empty()) headers.push_back("X-Scope-OrgID: " + options.tenant);
  return headers;
}

// Pyroscope's push API, or its /ingest endpoint after a 404/405/415 on it.
class PyroscopeBackend : public Backend {
 public:
  explicit PyroscopeBackend(const PushOptions& options) : options_(options) {}

  Result<Sent> Send(const WindowInfo& window, const Profile& profile, const Post& post) override {
    // One series per service, container and pod of the window's processes.
    auto series = SplitWindow(profile, window.stable_id, options_.service_name,
                              options_.host.empty() ? profile.meta.host : options_.host, options_.labels);
    if (!series) return series.error();
    Sent sent;
    if (!ingest_) {
      const std::string body = EncodePushRequest(*series);
      auto headers = TenantHeaders(options_);
      headers.push_back("Content-Type: application/proto");
      headers.push_back("Connect-Protocol-Version: 1");
      sent.body_bytes = body.size();
      sent.response = post(PushUrl(options_.url), body, headers);
      const long status = sent.response.status;
      if (sent.response.error.empty() && (status == 404 || status == 405 || status == 415)) {
        spdlog::warn("push: {} has no push API (HTTP {}); using its /ingest endpoint", Destination(options_.url),
                     status);
        ingest_ = true;
      }
    }
    if (ingest_) {
      const uint64_t from = window.start_unix_ns / 1'000'000'000ull;
      const uint64_t until =
          std::max<uint64_t>(from + 1, (window.end_unix_ns + 999'999'999ull) / 1'000'000'000ull);
      auto headers = TenantHeaders(options_);
      headers.push_back("Content-Type: application/octet-stream");
      // One series a request: all must arrive (a retry sends them all again).
      for (const WindowSeries& s : *series) {
        sent.body_bytes = s.gzipped_pprof.size();
        sent.response = post(IngestUrl(options_.url, s.labels, from, until, profile.meta.frequency_hz),
                             s.gzipped_pprof, headers);
        const long status = sent.response.status;
        if (!sent.response.error.empty() || status < 200 || status >= 300) break;
      }
    }
    return sent;
  }
  bool using_fallback() const override { return ingest_; }

 private:
  const PushOptions& options_;
  bool ingest_ = false;
};

// OTLP/HTTP, binary protobuf, gzip content encoding.
class OtlpBackend : public Backend {
 public:
  explicit OtlpBackend(const PushOptions& options) : options_(options) {}

  Result<Sent> Send(const WindowInfo& window, const Profile& profile, const Post& post) override {
    reports::OtlpOptions otlp;
    otlp.profile_id_seed = window.stable_id;
    if (!options_.host.empty()) otlp.resource_attributes.emplace_back("host.name", options_.host);
    if (!options_.service_name.empty()) otlp.resource_attributes.emplace_back("service.name", options_.service_name);
    for (const auto& label : options_.labels) otlp.resource_attributes.push_back(label);
    auto body = reports::Gzip(reports::EncodeOtlp(profile, ThreadFilter{}, otlp), kPushGzipLevel);
    if (!body) return body.error();
    auto headers = TenantHeaders(options_);
    headers.push_back("Content-Type: application/x-protobuf");
    headers.push_back("Content-Encoding: gzip");
    Sent sent;
    sent.body_bytes = body->size();
    sent.response = post(OtlpProfilesUrl(options_.url), *body, headers);
    return sent;
  }

 private:
  const PushOptions& options_;
};

}  // namespace

bool IsOtlpUrl(const std::string& url) {
  return url.rfind("otlp+http://", 0) == 0 || url.rfind("otlp+https://", 0) == 0;
}

std::string OtlpProfilesUrl(const std::string& otlp_url) {
  std::string base = IsOtlpUrl(otlp_url) ? otlp_url.substr(sizeof kOtlpScheme - 1) : otlp_url;
  while (!base.empty() && base.back() == '/') base.pop_back();
  return base + "/v1development/profiles";
}

std::unique_ptr<Backend> MakeBackend(const PushOptions& options) {
  if (IsOtlpUrl(options.url)) return std::make_unique<OtlpBackend>(options);
  return std::make_unique<PyroscopeBackend>(options);
}

}  // namespace arcprof::push
