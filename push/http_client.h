// A small blocking HTTP client over libcurl for the push thread: one POST at a
// time, connections reused between calls. Never used on the sampling path.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace arcprof::push {

struct HttpResponse {
  long status = 0;        // HTTP status; 0 when no response arrived
  std::string error;      // transport error (refused, timeout, TLS), "" when a response arrived
  std::string body;       // at most the first 4 KiB, for error messages
  std::string retry_after;  // the Retry-After header, if any
};

class HttpClient {
 public:
  HttpClient();
  ~HttpClient();
  HttpClient(const HttpClient&) = delete;
  HttpClient& operator=(const HttpClient&) = delete;

  // POSTs `body` with the given extra headers ("Name: value"). `timeout` bounds
  // the whole exchange, connecting included; `abort` (polled about every
  // 100 ms while the request runs) ends it early when it returns true.
  HttpResponse Post(const std::string& url, const std::string& body,
                    const std::vector<std::string>& headers, std::chrono::milliseconds timeout,
                    const std::function<bool()>& abort = {});

 private:
  void* curl_;  // CURL*
};

}  // namespace arcprof::push
