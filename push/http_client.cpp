#include "push/http_client.h"

#include <curl/curl.h>

#include <mutex>

namespace arcprof::push {
namespace {

constexpr size_t kMaxBody = 4096;

size_t KeepBody(char* data, size_t size, size_t count, void* user) {
  auto* body = static_cast<std::string*>(user);
  const size_t bytes = size * count;
  if (body->size() < kMaxBody) body->append(data, std::min(bytes, kMaxBody - body->size()));
  return bytes;
}

size_t KeepRetryAfter(char* data, size_t size, size_t count, void* user) {
  const size_t bytes = size * count;
  std::string line(data, bytes);
  constexpr char kName[] = "retry-after:";
  if (line.size() > sizeof kName - 1) {
    std::string head = line.substr(0, sizeof kName - 1);
    for (char& c : head) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (head == kName) {
      std::string value = line.substr(sizeof kName - 1);
      while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) value.erase(0, 1);
      while (!value.empty() && (value.back() == '\r' || value.back() == '\n' || value.back() == ' ')) value.pop_back();
      *static_cast<std::string*>(user) = value.substr(0, 64);
    }
  }
  return bytes;
}

int Progress(void* user, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
  const auto* abort = static_cast<const std::function<bool()>*>(user);
  return (*abort && (*abort)()) ? 1 : 0;  // non-zero aborts the transfer
}

}  // namespace

HttpClient::HttpClient() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
  curl_ = curl_easy_init();
}

HttpClient::~HttpClient() { curl_easy_cleanup(static_cast<CURL*>(curl_)); }

HttpResponse HttpClient::Post(const std::string& url, const std::string& body,
                              const std::vector<std::string>& headers, std::chrono::milliseconds timeout,
                              const std::function<bool()>& abort) {
  HttpResponse response;
  CURL* curl = static_cast<CURL*>(curl_);
  if (curl == nullptr) {
    response.error = "cannot initialise libcurl";
    return response;
  }
  curl_easy_reset(curl);
  curl_slist* list = nullptr;
  for (const std::string& h : headers) list = curl_slist_append(list, h.c_str());
  list = curl_slist_append(list, "Expect:");  // no 100-continue round trip
  char error[CURL_ERROR_SIZE] = {0};
  curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
  curl_easy_setopt(curl, CURLOPT_POST, 1L);
  curl_easy_setopt(curl, CURLOPT_POSTFIELDS, body.data());
  curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(body.size()));
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, list);
  curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, static_cast<long>(timeout.count()));
  curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(std::min<int64_t>(timeout.count(), 10000)));
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);  // a thread of a program with signal handlers
  curl_easy_setopt(curl, CURLOPT_FOLLOWLOCATION, 0L);
  curl_easy_setopt(curl, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(curl, CURLOPT_USERAGENT, "arcprof");
  curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, error);
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, KeepBody);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &response.body);
  curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, KeepRetryAfter);
  curl_easy_setopt(curl, CURLOPT_HEADERDATA, &response.retry_after);
  curl_easy_setopt(curl, CURLOPT_NOPROGRESS, 0L);
  curl_easy_setopt(curl, CURLOPT_XFERINFOFUNCTION, Progress);
  curl_easy_setopt(curl, CURLOPT_XFERINFODATA, &abort);
  const CURLcode rc = curl_easy_perform(curl);
  curl_slist_free_all(list);
  if (rc != CURLE_OK) {
    response.error = error[0] ? error : curl_easy_strerror(rc);
    return response;
  }
  curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &response.status);
  return response;
}

}  // namespace arcprof::push
