#include "push/pusher.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <charconv>
#include <functional>

#include "push/capture_windows.h"

namespace arcprof::push {
using namespace arcprof::model;
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

bool Retryable(long status) {
  return status == 0 || status == 408 || status == 429 || status >= 500 || status == 401 || status == 403;
}

std::string Shown(const std::string& body) {
  std::string out = body.substr(0, 200);
  for (char& c : out) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = ' ';
  }
  return out;
}

}  // namespace

Pusher::Pusher(PushOptions options, WindowSource& source)
    : options_(std::move(options)),
      source_(source),
      destination_(Destination(options_.url)),
      backend_(MakeBackend(options_)) {}

Pusher::~Pusher() { Stop(milliseconds(0)); }

void Pusher::Start() {
  std::lock_guard lock(mutex_);
  if (thread_.joinable()) return;
  stopping_ = false;
  thread_ = std::thread([this] { Run(); });
}

void Pusher::WindowClosed() {
  std::lock_guard lock(mutex_);
  pending_ = true;
  wake_.notify_all();
}

void Pusher::Stop(milliseconds grace) {
  {
    std::lock_guard lock(mutex_);
    if (!thread_.joinable()) return;
    stopping_ = true;
    stop_deadline_ = Clock::now() + grace;
    wake_.notify_all();
  }
  thread_.join();
}

PushStats Pusher::stats() const {
  std::lock_guard lock(mutex_);
  return stats_;
}

bool Pusher::Wait(Clock::time_point until, bool wakeable) {
  std::unique_lock lock(mutex_);
  wake_.wait_until(lock, until, [&] { return stopping_ || (wakeable && pending_); });
  if (wakeable) pending_ = false;
  return stopping_;
}

Pusher::Outcome Pusher::SendOne(const WindowInfo& window, milliseconds& retry_after) {
  retry_after = milliseconds(0);
  auto profile = source_.Read(window);
  if (!profile) {
    spdlog::error("push: window {} skipped: {}", window.stable_id, profile.error().message);
    return Outcome::kRejected;
  }
  milliseconds timeout = options_.timeout;
  {
    // A request ends by the time left: SendAll's deadline, or Stop()'s grace.
    std::lock_guard lock(mutex_);
    Clock::time_point until = deadline_;
    if (stopping_) until = std::min(until, stop_deadline_);
    if (until != Clock::time_point::max()) {
      const auto left = std::chrono::duration_cast<milliseconds>(until - Clock::now());
      timeout = std::clamp(left, milliseconds(100), timeout);
    }
    ++stats_.attempts;
  }
  // Stop() with its grace period spent ends a request in progress.
  const std::function<bool()> abort = [this] {
    std::lock_guard lock(mutex_);
    return stopping_ && Clock::now() >= stop_deadline_;
  };
  const Backend::Post post = [&](const std::string& url, const std::string& body,
                                 const std::vector<std::string>& headers) {
    return http_.Post(url, body, headers, timeout, abort);
  };
  auto sent = backend_->Send(window, *profile, post);
  if (!sent) {
    spdlog::error("push: window {} skipped: {}", window.stable_id, sent.error().message);
    return Outcome::kRejected;
  }
  const HttpResponse& response = sent->response;
  const size_t body_size = sent->body_bytes;

  std::lock_guard lock(mutex_);
  stats_.using_ingest = backend_->using_fallback();
  if (response.error.empty() && response.status >= 200 && response.status < 300) {
    ++stats_.windows_sent;
    stats_.bytes_sent += body_size;
    return Outcome::kSent;
  }
  stats_.last_error = !response.error.empty()
                          ? response.error
                          : "HTTP " + std::to_string(response.status) + " " + Shown(response.body);
  if (response.error.empty() && !Retryable(response.status)) {
    ++stats_.rejected;
    spdlog::error("push: {} refused window {} for good: {}", destination_, window.stable_id, stats_.last_error);
    return Outcome::kRejected;
  }
  ++stats_.retries;
  if (!response.retry_after.empty()) {
    uint64_t seconds = 0;
    const auto& s = response.retry_after;
    auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), seconds);
    if (ec == std::errc() && ptr == s.data() + s.size()) {
      retry_after = milliseconds(std::min<uint64_t>(seconds, 3600) * 1000);
    }
  }
  return Outcome::kRetry;
}

bool Pusher::Pass(size_t& remaining, milliseconds& wait) {
  remaining = 0;
  auto unsent = source_.Unsent(destination_);
  if (!unsent) {
    spdlog::error("push: {}", unsent.error().message);
    std::lock_guard lock(mutex_);
    stats_.last_error = unsent.error().message;
    wait = options_.max_backoff;
    return false;
  }
  for (const WindowInfo& w : *unsent) {
    if (!rejected_.count(w.id)) ++remaining;
  }
  for (const WindowInfo& w : *unsent) {
    if (rejected_.count(w.id)) continue;
    if (Clock::now() >= deadline_ && stats().attempts > deadline_attempts_) {  // SendAll's time is up
      wait = milliseconds(0);
      return false;
    }
    milliseconds retry_after{0};
    switch (SendOne(w, retry_after)) {
      case Outcome::kSent:
        if (auto r = source_.MarkSent(w, destination_); !r) {
          // Sent but not marked: the next pass resends it with the same id.
          spdlog::error("push: {}", r.error().message);
          wait = options_.max_backoff;
          return false;
        }
        if (backoff_.count() > 0) spdlog::warn("push: {} reachable again", destination_);
        backoff_ = milliseconds(0);
        --remaining;
        break;
      case Outcome::kRejected:
        rejected_.insert(w.id);
        --remaining;
        break;
      case Outcome::kRetry: {
        const bool first = backoff_.count() == 0;
        backoff_ = first ? options_.initial_backoff : std::min(backoff_ * 2, options_.max_backoff);
        if (retry_after > backoff_) backoff_ = std::min(retry_after, options_.max_backoff);
        if (first) {
          spdlog::warn("push: cannot send to {} ({}); {} windows kept unsent, retrying", destination_,
                       stats().last_error, remaining);
        }
        wait = backoff_;
        return false;
      }
    }
    std::lock_guard lock(mutex_);
    if (stopping_ && Clock::now() >= stop_deadline_) return true;
  }
  return true;
}

void Pusher::Run() {
  for (;;) {
    size_t remaining = 0;
    milliseconds wait{0};
    const bool done = Pass(remaining, wait);
    {
      std::lock_guard lock(mutex_);
      if (stopping_ && (remaining == 0 || !done || Clock::now() >= stop_deadline_)) {
        // A window written while this pass ran (the last one, at SIGTERM) is
        // not in its count: one more pass sends it.
        if (done && remaining == 0 && pending_ && Clock::now() < stop_deadline_) {
          pending_ = false;
          continue;
        }
        return;
      }
    }
    if (done && remaining == 0) {
      if (Wait(Clock::now() + std::chrono::hours(1), true)) {
        // Stop() while idle: one last pass for what the final window added.
        std::unique_lock lock(mutex_);
        if (Clock::now() >= stop_deadline_) return;
        continue;
      }
    } else if (!done) {
      if (Wait(Clock::now() + wait, false)) return;
    }
  }
}

Result<size_t> Pusher::SendAll(Clock::time_point deadline) {
  deadline_ = deadline;
  deadline_attempts_ = stats().attempts;
  struct Restore {
    Clock::time_point& deadline;
    ~Restore() { deadline = Clock::time_point::max(); }
  } restore{deadline_};
  for (;;) {
    size_t remaining = 0;
    milliseconds wait{0};
    const bool done = Pass(remaining, wait);
    if (done && remaining == 0) return size_t{0};
    if (done) continue;  // windows were added meanwhile
    if (Clock::now() + wait > deadline || Clock::now() >= deadline) return remaining;
    std::this_thread::sleep_for(wait);
  }
}

}  // namespace arcprof::push
