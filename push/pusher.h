// Ships closed windows to a profiling backend, on a thread of its own (network
// I/O never runs on the sampling path): a Pyroscope server or an OTLP
// receiver, by the URL's scheme (push/backend.h says what each is sent).
//
// For each window the store lists as unsent (push/window_source.h), oldest
// first: read it and hand it to the backend, which POSTs it. For every
// backend:
//   - 2xx: the window is marked sent in the store, then the next one.
//   - no response, 408, 429, 5xx, 401, 403: the window stays unsent; the
//     thread waits (0.5 s, doubling to 5 min; a Retry-After in that range is
//     honoured) and starts again from the oldest unsent window.
//   - any other 4xx: the server will never take this window; it is logged,
//     skipped for the rest of the run and stays unsent in the store.
// Nothing is dropped: a window leaves the unsent list only after a 2xx.
// Every send of one window carries the same profile id(s) (derived from its
// stable id) and the same series labels or resource attributes, so a resend
// after a lost 2xx is one profile to the server (docs/continuous.md).
//
// Use from the continuous session: Start() once, WindowClosed() after every
// window is committed to the store, Stop() at exit.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>

#include "common/result.h"
#include "push/backend.h"
#include "push/http_client.h"
#include "push/push_request.h"
#include "push/window_source.h"

namespace arcprof::push {

struct PushOptions {
  std::string url;                      // the server's base URL, e.g. http://pyroscope:4040
                                        // or otlp+http://collector:4318
  // Pyroscope: service_name of every series; "" (the default): each
  // process's own (model/process_identity.h), one series per service,
  // container and pod. OTLP: service.name of every resource when not "".
  std::string service_name;
  std::string host;                     // default: the window's host (CaptureMeta::host)
  Labels labels;                        // --label KEY=VALUE, in order (OTLP: resource attributes)
  std::string tenant;                   // X-Scope-OrgID header when not empty
  std::chrono::milliseconds initial_backoff{500};
  std::chrono::milliseconds max_backoff{std::chrono::minutes(5)};
  std::chrono::milliseconds timeout{std::chrono::seconds(30)};  // per request
};

struct PushStats {
  uint64_t windows_sent = 0;
  uint64_t bytes_sent = 0;       // request bodies of the sends that got a 2xx
  uint64_t attempts = 0;
  uint64_t retries = 0;          // attempts that ended in a retryable failure
  uint64_t rejected = 0;         // windows the server refused for good (4xx)
  bool using_ingest = false;     // Pyroscope: fell back to /ingest
  std::string last_error;
};

class Pusher {
 public:
  Pusher(PushOptions options, WindowSource& source);
  ~Pusher();
  Pusher(const Pusher&) = delete;
  Pusher& operator=(const Pusher&) = delete;

  // Starts the push thread; it sends what is unsent, then waits for windows.
  void Start();
  // A window was committed to the store: wake the thread (a backoff wait in
  // progress is not cut short).
  void WindowClosed();
  // Stops the thread, giving sends up to `grace` to finish what is unsent.
  // Windows not sent by then stay unsent in the store for the next run.
  void Stop(std::chrono::milliseconds grace);

  // For `arcprof push`: sends every unsent window on the calling thread,
  // retrying as above until none is left or `deadline` passes. Returns the
  // number of windows still unsent. No request outlives the deadline: each
  // one's timeout is capped by the time left (at least 100 ms), and no new
  // request starts once it has passed (the first one always does).
  Result<size_t> SendAll(std::chrono::steady_clock::time_point deadline);

  PushStats stats() const;

 private:
  enum class Outcome { kSent, kRetry, kRejected };
  Outcome SendOne(const WindowInfo& window, std::chrono::milliseconds& retry_after);
  // One pass over the unsent windows; returns false when it must back off.
  bool Pass(size_t& remaining, std::chrono::milliseconds& wait);
  void Run();
  // Waits until `until`, a wake-up (when `wakeable`) or stop; true when stopping.
  bool Wait(std::chrono::steady_clock::time_point until, bool wakeable);

  PushOptions options_;
  WindowSource& source_;
  std::string destination_;
  std::unique_ptr<Backend> backend_;  // uses options_
  HttpClient http_;
  std::set<int64_t> rejected_;
  std::chrono::milliseconds backoff_{0};
  // SendAll's deadline; requests never run past it.
  std::chrono::steady_clock::time_point deadline_ = std::chrono::steady_clock::time_point::max();
  uint64_t deadline_attempts_ = 0;  // attempts before SendAll began (each SendAll tries once)

  mutable std::mutex mutex_;
  std::condition_variable wake_;
  bool pending_ = false;
  bool stopping_ = false;
  std::chrono::steady_clock::time_point stop_deadline_{};
  PushStats stats_;
  std::thread thread_;
};

}  // namespace arcprof::push
