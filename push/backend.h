// What a profiling backend needs from the push thread, and the two backends.
// The push thread (push/pusher.h) owns everything that does not depend on the
// server: which windows are unsent, reading them, retries and backoff, the
// per-request timeout and abort, sent marks, statistics. A backend only turns
// one window into HTTP requests:
//   - Pyroscope (`http://`, `https://`): push.v1.PushRequest to
//     BASE/push.v1.PusherService/Push, falling back to BASE/ingest for the rest
//     of the run when the server has no push route (push/push_request.h);
//   - OTLP (`otlp+http://`, `otlp+https://`): an OTLP/HTTP export of the
//     profiles signal, ExportProfilesServiceRequest (reports/otlp.h), gzipped,
//     POST BASE/v1development/profiles, Content-Type application/x-protobuf.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/result.h"
#include "model/profile.h"
#include "push/http_client.h"
#include "push/window_source.h"

namespace arcprof::push {

struct PushOptions;

class Backend {
 public:
  // POSTs one request with the push thread's timeout and abort.
  using Post = std::function<HttpResponse(const std::string& url, const std::string& body,
                                          const std::vector<std::string>& headers)>;
  struct Sent {
    HttpResponse response;  // of the last request made
    size_t body_bytes = 0;  // its body
  };

  virtual ~Backend() = default;
  // Sends `window` (its profile `profile`). An error means the window can
  // never be sent (it cannot be encoded): it is skipped, kept unsent.
  virtual Result<Sent> Send(const WindowInfo& window, const model::Profile& profile, const Post& post) = 0;
  // Pyroscope only: the run fell back to /ingest.
  virtual bool using_fallback() const { return false; }
};

// The backend of `options.url`'s scheme (see above).
std::unique_ptr<Backend> MakeBackend(const PushOptions& options);

// True for otlp+http:// and otlp+https:// URLs.
bool IsOtlpUrl(const std::string& url);
// BASE/v1development/profiles of an otlp+http(s):// URL, without "otlp+".
std::string OtlpProfilesUrl(const std::string& otlp_url);

}  // namespace arcprof::push
