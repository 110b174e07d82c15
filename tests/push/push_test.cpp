// Push to Pyroscope (push/): the request encoding checked with the generated
// protos, and the push thread against a local stand-in server
// (pyroscope_server.py) that decodes PushRequest with python3-protobuf from
// the same definitions; the pushed profiles are read by `go tool pprof`.
// No root needed: windows come from an in-memory store or a capture file.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <mutex>
#include <regex>
#include <set>
#include <thread>

#include <nlohmann/json.hpp>

#include "loader/continuous.h"
#include "push/capture_windows.h"
#include "push/push_request.h"
#include "push/pusher.h"
#include "push/store_windows.h"
#include "proto/profile.pb.h"
#include "push/v1/push.pb.h"
#include "reports/otlp.h"
#include "reports/pprof.h"
#include "store/capture_store.h"
#include "store/window_store.h"
#include "tests/loader/subprocess.h"
#include "tests/reports/otlp_check.h"
#include "tests/model/test_profiles.h"
#include "tests/layer_names.h"

namespace arcprof::push {
namespace {

using arcprof::testing::RunCapture;
using arcprof::testing::SampleProfile;
using arcprof::testing::Subprocess;
using arcprof::testing::TempDir;
using namespace std::chrono_literals;

const std::string kPython = "/usr/bin/python3";
const std::string kGo = "/usr/bin/go";
const std::string kServer = ARCPROF_PUSH_SERVER;
const std::string kDescriptors = ARCPROF_PUSH_DESCRIPTORS;
const std::string kArcprof = ARCPROF_BIN;
const std::string kOtlpPython = ARCPROF_OTLP_PYTHON;

bool InCi() {
  const char* ci = getenv("CI");
  return ci && std::string(ci) == "true";
}

#define REQUIRE_TOOLS()                                                                          \
  do {                                                                                           \
    std::string why;                                                                             \
    if (RunCapture({kPython, "-c", "import google.protobuf"}).first != 0) {                      \
      why = "python3-protobuf is missing (scripts/install-deps.sh)";                            \
    } else if (access(kGo.c_str(), X_OK) != 0) {                                                 \
      why = "go is missing (golang-go; scripts/install-deps.sh)";                               \
    }                                                                                            \
    if (!why.empty()) {                                                                          \
      if (InCi()) FAIL() << why << " (CI=true: must not skip)";                                 \
      GTEST_SKIP() << why;                                                                       \
    }                                                                                            \
  } while (0)

// A free TCP port on 127.0.0.1 (bound, read back, released).
int FreePort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  socklen_t len = sizeof addr;
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  close(fd);
  return ntohs(addr.sin_port);
}

// The stand-in server, running until destroyed.
class Server {
 public:
  Server(const std::string& dir, int port, const std::vector<std::string>& extra = {}) : dir_(dir) {
    std::vector<std::string> argv = {kPython,  kServer, "--port", std::to_string(port), "--descriptors",
                                     kDescriptors, "--out", dir};
    argv.insert(argv.end(), extra.begin(), extra.end());
    process_ = std::make_unique<Subprocess>(argv);
    for (int i = 0; i < 200 && access((dir + "/port").c_str(), R_OK) != 0; ++i) std::this_thread::sleep_for(25ms);
    std::ifstream in(dir + "/port");
    in >> port_;
  }
  ~Server() {
    process_->Signal(SIGTERM);
    process_->Wait();
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  int port() const { return port_; }
  std::vector<nlohmann::json> Requests() const {
    std::vector<nlohmann::json> out;
    std::ifstream in(dir_ + "/requests.jsonl");
    std::string line;
    while (std::getline(in, line)) {
      if (!line.empty()) out.push_back(nlohmann::json::parse(line));
    }
    return out;
  }
  std::string stderr_text() { return process_->stderr_text(); }

 private:
  std::string dir_;
  int port_ = 0;
  std::unique_ptr<Subprocess> process_;
};

const std::string kContainer = "c0ffee0123456789c0ffee0123456789c0ffee0123456789c0ffee0123456789";
const std::string kPod = "8f2d1c3a-1b2c-4d5e-8f90-123456789abc";

// `window` with pid 900 (the busy loop) in container `container` of pod kPod,
// service "busy".
Profile WithIdentity(Profile window, const std::string& container) {
  for (ThreadRecord& t : window.threads) {
    if (t.pid != 900) continue;
    t.identity.container_id = container;
    t.identity.pod_uid = kPod;
    t.identity.service_name = "busy";
  }
  return window;
}

// An in-memory store: windows are added by the test while the push thread
// reads them.
class MemoryStore : public WindowSource {
 public:
  std::string identity;  // a container id given to pid 900 of every window added (WithIdentity)
  void Add(Profile window) {
    if (!identity.empty()) window = WithIdentity(std::move(window), identity);
    std::lock_guard lock(mutex_);
    const int64_t id = static_cast<int64_t>(windows_.size()) + 1;
    WindowInfo info;
    info.id = id;
    info.stable_id = "0123456789abcdef0123456789abcdef/" + std::to_string(id);
    info.start_unix_ns = window.meta.start_unix_ns;
    info.end_unix_ns = window.meta.start_unix_ns + (window.meta.end_monotonic_ns - window.meta.start_monotonic_ns);
    windows_.emplace_back(info, std::move(window));
  }
  Result<std::vector<WindowInfo>> Unsent(const std::string& destination) override {
    std::lock_guard lock(mutex_);
    std::vector<WindowInfo> out;
    for (const auto& [info, profile] : windows_) {
      if (!sent_.count(info.id)) out.push_back(info);
    }
    return out;
  }
  Result<Profile> Read(const WindowInfo& window) override {
    std::lock_guard lock(mutex_);
    return windows_.at(static_cast<size_t>(window.id - 1)).second;
  }
  Result<void> MarkSent(const WindowInfo& window, const std::string& destination) override {
    std::lock_guard lock(mutex_);
    ++sent_[window.id];
    return {};
  }
  std::map<int64_t, int> sent() {
    std::lock_guard lock(mutex_);
    return sent_;
  }
  std::string stable_id(int64_t id) {
    std::lock_guard lock(mutex_);
    return windows_.at(static_cast<size_t>(id - 1)).first.stable_id;
  }

 private:
  std::mutex mutex_;
  std::vector<std::pair<WindowInfo, Profile>> windows_;
  std::map<int64_t, int> sent_;
};

// Window `i` (from 0) of a 10 s-window run: the sample profile, later in time.
Profile Window(int i) {
  Profile p = SampleProfile();
  p.meta.start_unix_ns += static_cast<uint64_t>(i) * 10'000'000'000ull;
  p.meta.start_monotonic_ns += static_cast<uint64_t>(i) * 10'000'000'000ull;
  p.meta.end_monotonic_ns += static_cast<uint64_t>(i) * 10'000'000'000ull;
  return p;
}

// `go tool pprof -top` of a pushed profile: total samples.
uint64_t GoPprofTotal(const std::string& tmp, const std::string& file, std::string* top) {
  auto [code, text] = RunCapture({"/usr/bin/env", "HOME=" + tmp, "GOCACHE=" + tmp + "/gocache",
                                  "GOPATH=" + tmp + "/gopath", "GOTOOLCHAIN=local", "GOFLAGS=", kGo, "tool",
                                  "pprof", "-top", "-nodecount=5", "-sample_index=samples", file});
  *top = text;
  std::smatch m;
  if (code != 0 || !std::regex_search(text, m, std::regex(R"(Total samples = (\d+))"))) return 0;
  return std::stoull(m[1]);
}

template <typename Pred>
bool WaitFor(Pred done, std::chrono::seconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (done()) return true;
    std::this_thread::sleep_for(20ms);
  }
  return done();
}

TEST(PushRequest, LabelsAndIds) {
  const Labels labels = SeriesLabels("svc", "h1", {{"env", "prod"}, {"host", "override"}});
  ASSERT_EQ(labels.size(), 4u);
  EXPECT_EQ(labels[0], (std::pair<std::string, std::string>{"__name__", "process_cpu"}));
  EXPECT_EQ(labels[1].second, "svc");
  EXPECT_EQ(labels[2].second, "override");
  EXPECT_EQ(labels[3], (std::pair<std::string, std::string>{"env", "prod"}));

  EXPECT_TRUE(ParseLabel("env=prod").ok());
  EXPECT_FALSE(ParseLabel("env").ok());
  EXPECT_FALSE(ParseLabel("=x").ok());
  EXPECT_FALSE(ParseLabel("1x=y").ok());
  EXPECT_FALSE(ParseLabel("__name__=y").ok());
  EXPECT_FALSE(ParseLabel("a-b=y").ok());
  EXPECT_FALSE(ParseLabel("k=").ok());

  const std::string a = ProfileUuid("cafe/1");
  EXPECT_EQ(a, ProfileUuid("cafe/1"));  // a resend carries the same id
  EXPECT_NE(a, ProfileUuid("cafe/2"));
  EXPECT_TRUE(std::regex_match(a, std::regex("[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}")))
      << a;

  EXPECT_EQ(Destination("https://user:secret@example.com:4040/"), "https://example.com:4040");
  EXPECT_EQ(PushUrl("http://h:4040/"), "http://h:4040/push.v1.PusherService/Push");
  const std::string ingest = IngestUrl("http://h:4040", labels, 100, 110, 49);
  EXPECT_NE(ingest.find("/ingest?name=svc%7Bhost%3Doverride%2Cenv%3Dprod%7D&from=100&until=110&format=pprof"),
            std::string::npos)
      << ingest;
}

TEST(PushRequest, RoundTripsThroughTheProtos) {
  auto pprof = WindowPprof(SampleProfile());
  ASSERT_TRUE(pprof.ok());
  const std::string body = EncodePushRequest(SeriesLabels("svc", "h1", {}), *pprof, ProfileUuid("x/1"));
  ::push::v1::PushRequest request;
  ASSERT_TRUE(request.ParseFromString(body));
  ASSERT_EQ(request.series_size(), 1);
  ASSERT_EQ(request.series(0).labels_size(), 3);
  EXPECT_EQ(request.series(0).labels(0).name(), "__name__");
  ASSERT_EQ(request.series(0).samples_size(), 1);
  EXPECT_EQ(request.series(0).samples(0).id(), ProfileUuid("x/1"));
  EXPECT_EQ(request.series(0).samples(0).raw_profile(), *pprof);
  EXPECT_EQ(static_cast<unsigned char>((*pprof)[0]), 0x1f);  // gzip
}

// A pushed pprof is the export's (reports/pprof.h) with comm as the only
// sample label: the same samples, locations and values in the same order,
// and no pid, tid or thread name left even in its string table (Pyroscope
// would make series of them).
TEST(PushRequest, WindowPprofIsTheExportWithOnlyTheProcessName) {
  const Profile window = SampleProfile();
  auto pushed = WindowPprof(window);
  ASSERT_TRUE(pushed.ok());
  perftools::profiles::Profile p, full;
  ASSERT_TRUE(p.ParseFromString(arcprof::testing::Gunzip(*pushed)));
  ASSERT_TRUE(full.ParseFromString(arcprof::reports::EncodePprof(window, {})));
  ASSERT_GT(p.sample_size(), 0);
  ASSERT_EQ(p.sample_size(), full.sample_size());
  for (int i = 0; i < p.sample_size(); ++i) {
    const auto& a = p.sample(i);
    const auto& b = full.sample(i);
    EXPECT_EQ(std::vector<uint64_t>(a.location_id().begin(), a.location_id().end()),
              std::vector<uint64_t>(b.location_id().begin(), b.location_id().end()));
    EXPECT_EQ(std::vector<int64_t>(a.value().begin(), a.value().end()),
              std::vector<int64_t>(b.value().begin(), b.value().end()));
    ASSERT_EQ(a.label_size(), 1);
    EXPECT_EQ(p.string_table(static_cast<int>(a.label(0).key())), "comm");
    std::string comm;
    for (const auto& l : b.label()) {
      if (full.string_table(static_cast<int>(l.key())) == "comm") comm = full.string_table(static_cast<int>(l.str()));
    }
    EXPECT_EQ(p.string_table(static_cast<int>(a.label(0).str())), comm);
  }
  EXPECT_EQ(p.location_size(), full.location_size());
  EXPECT_EQ(p.function_size(), full.function_size());
  for (const std::string& s : p.string_table()) {
    EXPECT_NE(s, "tid");
    EXPECT_NE(s, "thread_name");
  }
}

// The pusher sends windows 0 and 1 of Window() while nothing listens on
// `port` (both retried, none marked sent), then the server comes up and window
// 2 closes; returns once all three are marked sent and the pusher stopped.
std::unique_ptr<Server> PushThreeWindowsToALateServer(const TempDir& tmp, int port, const PushOptions& options,
                                                      MemoryStore& store, const std::vector<std::string>& server_args,
                                                      PushStats& stats) {
  Pusher pusher(options, store);
  pusher.Start();
  store.Add(Window(0));
  pusher.WindowClosed();
  std::this_thread::sleep_for(600ms);
  store.Add(Window(1));
  pusher.WindowClosed();
  EXPECT_TRUE(WaitFor([&] { return pusher.stats().retries >= 2; }, 10s));
  EXPECT_TRUE(store.sent().empty());

  auto server = std::make_unique<Server>(tmp.path(), port, server_args);
  EXPECT_EQ(server->port(), port) << server->stderr_text();
  store.Add(Window(2));
  pusher.WindowClosed();
  // Backoff doubles from 0.5 s: the next attempt is at most a few seconds away.
  EXPECT_TRUE(WaitFor([&] { return store.sent().size() == 3; }, 30s)) << pusher.stats().last_error;
  pusher.Stop(1s);
  for (const auto& [id, times] : store.sent()) EXPECT_EQ(times, 1) << "window " << id;
  stats = pusher.stats();
  return server;
}

// The server is down while two windows close, then comes up: every window
// arrives exactly once, each with its own stable profile id.
TEST(Pusher, ServerDownForTwoWindowsThenUp) {
  REQUIRE_TOOLS();
  TempDir tmp;
  const int port = FreePort();
  MemoryStore store;
  PushOptions options;
  options.url = "http://127.0.0.1:" + std::to_string(port);
  options.service_name = "arcprof-test";
  options.labels = {{"env", "ci"}};
  options.tenant = "team-a";
  PushStats stats;
  const auto late = PushThreeWindowsToALateServer(tmp, port, options, store, {}, stats);
  if (HasFailure()) return;
  const Server& server = *late;

  std::map<std::string, int> ids;
  std::vector<std::string> files;
  for (const auto& request : server.Requests()) {
    EXPECT_EQ(request["path"], "/push.v1.PusherService/Push");
    EXPECT_EQ(request["content_type"], "application/proto");
    EXPECT_EQ(request["tenant"], "team-a");
    for (const auto& series : request["series"]) {
      EXPECT_EQ(series["labels"]["__name__"], "process_cpu");
      EXPECT_EQ(series["labels"]["service_name"], "arcprof-test");
      EXPECT_EQ(series["labels"]["host"], "testhost");
      EXPECT_EQ(series["labels"]["env"], "ci");
      for (const auto& sample : series["samples"]) {
        ++ids[sample["id"].get<std::string>()];
        files.push_back(sample["file"].get<std::string>());
      }
    }
  }
  ASSERT_EQ(ids.size(), 3u);
  for (int64_t w = 1; w <= 3; ++w) EXPECT_EQ(ids[ProfileUuid(store.stable_id(w))], 1) << "window " << w;
  for (const std::string& file : files) {
    std::string top;
    EXPECT_EQ(GoPprofTotal(tmp.path(), file, &top), SampleProfile().total_samples()) << top;
  }
  EXPECT_EQ(stats.windows_sent, 3u);
  EXPECT_GT(stats.bytes_sent, 0u);
}

// 429 and 503 are retried (with a Retry-After-free backoff) and the window
// arrives once.
TEST(Pusher, RetriesTooManyRequestsAndUnavailable) {
  REQUIRE_TOOLS();
  TempDir tmp;
  Server server(tmp.path(), 0, {"--status", "429,503"});
  MemoryStore store;
  store.Add(Window(0));
  PushOptions options;
  options.url = server.url();
  options.initial_backoff = 100ms;
  Pusher pusher(options, store);
  auto left = pusher.SendAll(std::chrono::steady_clock::now() + 20s);
  ASSERT_TRUE(left.ok());
  EXPECT_EQ(*left, 0u);
  EXPECT_EQ(pusher.stats().retries, 2u);
  const auto requests = server.Requests();
  ASSERT_EQ(requests.size(), 3u);
  EXPECT_EQ(requests[0]["status"], 429);
  EXPECT_EQ(requests[1]["status"], 503);
  EXPECT_EQ(requests[2]["status"], 200);
  EXPECT_EQ(store.sent().at(1), 1);
}

// A server that takes the connection and never answers does not hold up
// exit: Stop() ends the request in progress when its grace period is spent.
TEST(Pusher, StopEndsAHangingRequest) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  ASSERT_EQ(listen(fd, 8), 0);  // connections complete in the backlog; nothing is ever read
  socklen_t len = sizeof addr;
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  MemoryStore store;
  store.Add(Window(0));
  PushOptions options;
  options.url = "http://127.0.0.1:" + std::to_string(ntohs(addr.sin_port));
  options.timeout = 60s;
  Pusher pusher(options, store);
  pusher.Start();
  ASSERT_TRUE(WaitFor([&] { return pusher.stats().attempts >= 1; }, 10s));
  std::this_thread::sleep_for(300ms);
  const auto start = std::chrono::steady_clock::now();
  pusher.Stop(500ms);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
  EXPECT_TRUE(store.sent().empty());
  close(fd);
}

// A 400 is not retried: the window is skipped for this run, kept unsent.
TEST(Pusher, BadRequestIsNotRetried) {
  REQUIRE_TOOLS();
  TempDir tmp;
  Server server(tmp.path(), 0, {"--status", "400"});
  MemoryStore store;
  store.Add(Window(0));
  store.Add(Window(1));
  PushOptions options;
  options.url = server.url();
  Pusher pusher(options, store);
  auto left = pusher.SendAll(std::chrono::steady_clock::now() + 20s);
  ASSERT_TRUE(left.ok());
  EXPECT_EQ(pusher.stats().rejected, 1u);
  EXPECT_EQ(server.Requests().size(), 2u);
  EXPECT_EQ(store.sent().count(1), 0u);
  EXPECT_EQ(store.sent().at(2), 1);
}

// A server without the push API gets the profile on /ingest?format=pprof.
// One series per service, container and pod (model/process_identity.h):
// labels container_id and pod_uid where a process has them, a --label
// replaces any of them, each series holds only its processes' samples, and
// its profile id is the same at every resend.
TEST(PushRequest, OneSeriesPerServiceContainerAndPod) {
  Profile window = SampleProfile();
  std::map<uint32_t, uint64_t> by_pid;
  for (ThreadRecord& t : window.threads) by_pid[t.pid] += t.tree.total(kSamplesValue);
  ASSERT_GE(by_pid.size(), 2u);
  const uint32_t first = by_pid.begin()->first;
  const std::string container(64, 'c');
  for (ThreadRecord& t : window.threads) {
    if (t.pid == first) {
      t.identity.service_name = "checkout";
      t.identity.container_id = container;
      t.identity.pod_uid = "12345678-90ab-cdef-1234-567890abcdef";
    } else {
      t.identity.service_name = "nginx";
    }
  }
  auto series = SplitWindow(window, "w/1", "", "h1", {{"env", "ci"}});
  ASSERT_TRUE(series.ok()) << series.error().message;
  ASSERT_EQ(series->size(), 2u);
  uint64_t total = 0;
  std::set<std::string> ids;
  for (const WindowSeries& s : *series) {
    std::map<std::string, std::string> labels(s.labels.begin(), s.labels.end());
    EXPECT_EQ(labels["host"], "h1");
    EXPECT_EQ(labels["env"], "ci");
    perftools::profiles::Profile p;
    ASSERT_TRUE(p.ParseFromString(arcprof::testing::Gunzip(s.gzipped_pprof)));
    uint64_t samples = 0;
    for (const auto& sample : p.sample()) samples += static_cast<uint64_t>(sample.value(0));
    total += samples;
    if (labels["service_name"] == "checkout") {
      EXPECT_EQ(labels["container_id"], container);
      EXPECT_EQ(labels["pod_uid"], "12345678-90ab-cdef-1234-567890abcdef");
      EXPECT_EQ(samples, by_pid[first]);
    } else {
      EXPECT_EQ(labels["service_name"], "nginx");
      EXPECT_EQ(labels.count("container_id"), 0u);
    }
    ids.insert(s.profile_uuid);
  }
  EXPECT_EQ(total, window.total_samples());
  EXPECT_EQ(ids.size(), 2u);
  auto again = SplitWindow(window, "w/1", "", "h1", {{"env", "ci"}});
  ASSERT_TRUE(again.ok());
  for (size_t i = 0; i < again->size(); ++i) EXPECT_EQ((*again)[i].profile_uuid, (*series)[i].profile_uuid);
  // --service-name gives every process that service; --label overrides.
  auto named = SplitWindow(window, "w/1", "fleet", "h1", {{"container_id", "x"}});
  ASSERT_TRUE(named.ok());
  ASSERT_EQ(named->size(), 2u);  // still apart by container
  for (const WindowSeries& s : *named) {
    std::map<std::string, std::string> labels(s.labels.begin(), s.labels.end());
    EXPECT_EQ(labels["service_name"], "fleet");
    EXPECT_EQ(labels["container_id"], "x");
  }
}

// A pid reused within one window by a process in another container: each
// series holds only its own process's samples (series select processes by pid
// and start, not by pid).
TEST(PushRequest, AReusedPidsProcessesGoToTheirOwnSeries) {
  Profile window;
  const uint32_t frames[] = {window.frames.Intern("/usr/bin/job", FrameRecord{0, "main", 0x1000, FrameKind::kNative}),
                             window.frames.Intern("/usr/bin/job", FrameRecord{0, "work", 0x2000, FrameKind::kNative})};
  const uint32_t first = window.ThreadIndex("", 4242, 4242, 1'000'000'000);
  window.threads[first].comm = window.threads[first].process_comm = "job";
  window.threads[first].identity.container_id = std::string(64, 'a');
  window.threads[first].tree.AddStack(frames, 3);
  const uint32_t second = window.ThreadIndex("", 4242, 4242, 2'000'000'000);
  ASSERT_NE(first, second);
  window.threads[second].comm = window.threads[second].process_comm = "job";
  window.threads[second].identity.container_id = std::string(64, 'b');
  window.threads[second].tree.AddStack(frames, 5);
  auto series = SplitWindow(window, "w/1", "", "h1", {});
  ASSERT_TRUE(series.ok()) << series.error().message;
  ASSERT_EQ(series->size(), 2u);
  std::map<std::string, uint64_t> by_container;
  for (const WindowSeries& s : *series) {
    std::map<std::string, std::string> labels(s.labels.begin(), s.labels.end());
    perftools::profiles::Profile p;
    ASSERT_TRUE(p.ParseFromString(arcprof::testing::Gunzip(s.gzipped_pprof)));
    for (const auto& sample : p.sample()) by_container[labels["container_id"]] += static_cast<uint64_t>(sample.value(0));
  }
  EXPECT_EQ(by_container[std::string(64, 'a')], 3u);
  EXPECT_EQ(by_container[std::string(64, 'b')], 5u);
}

// A churning machine's window: one series holds thousands of processes, in
// no pid order (pids wrap), a pid reused by a later process of the same
// series and one reused by a process of another series, threads of the two
// series interleaved, and a process with several threads. Each series holds
// exactly its processes' samples (SplitWindow finds each thread's series by
// its process's pid and start), and the window is split the same way every time.
TEST(PushRequest, ASeriesOfManyProcessesOutOfPidOrderHoldsAllOfThem) {
  Profile window;
  const uint32_t frames[] = {window.frames.Intern("/usr/bin/job", FrameRecord{0, "main", 0x1000, FrameKind::kNative}),
                             window.frames.Intern("/usr/bin/job", FrameRecord{0, "work", 0x2000, FrameKind::kNative})};
  std::map<std::string, uint64_t> expected;
  uint64_t start = 1'000'000'000;
  auto add = [&](const std::string& comm, uint32_t pid, uint32_t tid, uint64_t process_start, uint64_t samples) {
    const uint32_t index = window.ThreadIndex("", pid, tid, process_start);
    ThreadRecord& t = window.threads[index];
    t.comm = t.process_comm = comm;
    t.tree.AddStack(frames, samples);
    expected[comm] += samples;
  };
  // 3,000 processes counting down from pid 4,000, wrapping to 32,768 - 1,000.
  std::vector<std::pair<uint32_t, uint64_t>> storm;  // (pid, start)
  for (uint32_t i = 0; i < 3000; ++i) {
    const uint32_t pid = i < 1000 ? 32767 - i : 4000 - i;
    storm.emplace_back(pid, start += 1000);
    add("storm_child", pid, pid, start, 1 + i % 3);
    if (i % 500 == 0) add("other", 100000 + i, 100000 + i, start, 7);  // interleaved
  }
  add("storm_child", storm[10].first, storm[10].first, start += 1000, 11);          // pid reused, same series
  add("other", storm[2000].first, storm[2000].first, start += 1000, 13);            // pid reused, other series
  add("storm_child", storm[5].first, storm[5].first + 40000, storm[5].second, 17);  // a second thread
  const size_t threads = window.threads.size();
  ASSERT_EQ(threads, 3000u + 6u + 3u);

  auto series = SplitWindow(window, "w/1", "", "h1", {});
  ASSERT_TRUE(series.ok()) << series.error().message;
  ASSERT_EQ(series->size(), 2u);
  std::map<std::string, uint64_t> got;
  for (const WindowSeries& s : *series) {
    std::map<std::string, std::string> labels(s.labels.begin(), s.labels.end());
    perftools::profiles::Profile p;
    ASSERT_TRUE(p.ParseFromString(arcprof::testing::Gunzip(s.gzipped_pprof)));
    for (const auto& sample : p.sample()) {
      ASSERT_EQ(sample.label_size(), 1);
      EXPECT_EQ(p.string_table(sample.label(0).str()), labels["service_name"]);
      got[labels["service_name"]] += static_cast<uint64_t>(sample.value(0));
    }
  }
  EXPECT_EQ(got, expected);
  auto again = SplitWindow(window, "w/1", "", "h1", {});
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(EncodePushRequest(*again), EncodePushRequest(*series));
}

TEST(Pusher, FallsBackToIngest) {
  REQUIRE_TOOLS();
  TempDir tmp;
  Server server(tmp.path(), 0, {"--no-push-api"});
  MemoryStore store;
  store.Add(Window(0));
  store.Add(Window(1));
  PushOptions options;
  options.url = server.url();
  options.service_name = "svc";
  Pusher pusher(options, store);
  auto left = pusher.SendAll(std::chrono::steady_clock::now() + 20s);
  ASSERT_TRUE(left.ok());
  EXPECT_EQ(*left, 0u);
  EXPECT_TRUE(pusher.stats().using_ingest);
  const auto requests = server.Requests();
  ASSERT_EQ(requests.size(), 3u);  // one 404 on the push route, then two ingests
  EXPECT_EQ(requests[0]["status"], 404);
  for (size_t i = 1; i < 3; ++i) {
    EXPECT_EQ(requests[i]["path"], "/ingest");
    EXPECT_EQ(requests[i]["query"]["format"], "pprof");
    EXPECT_EQ(requests[i]["query"]["name"], "svc{host=testhost}");
    std::string top;
    EXPECT_EQ(GoPprofTotal(tmp.path(), requests[i]["file"], &top), SampleProfile().total_samples()) << top;
  }
  EXPECT_EQ(requests[1]["query"]["from"], "1700000000");
  EXPECT_EQ(requests[1]["query"]["until"], "1700000010");
}

// `arcprof push` sends a capture's window once; a second run sends nothing.
TEST(PushCli, SendsACaptureOnce) {
  REQUIRE_TOOLS();
  TempDir tmp;
  const std::string db = tmp.File("cap.db");
  ASSERT_TRUE(WriteCapture(db, SampleProfile()).ok());
  Server server(tmp.path(), 0, {"--status", "503"});
  auto [code, out] = RunCapture({kArcprof, "push", "-i", db, server.url(), "--label", "env=ci", "--service-name", "svc"});
  EXPECT_EQ(code, 0) << out;
  EXPECT_NE(out.find("pushed 1 window"), std::string::npos) << out;
  auto [code2, out2] = RunCapture({kArcprof, "push", "-i", db, server.url()});
  EXPECT_EQ(code2, 0) << out2;
  EXPECT_NE(out2.find("pushed 0 windows"), std::string::npos) << out2;
  const auto requests = server.Requests();
  ASSERT_EQ(requests.size(), 2u);  // the scripted 503, then the one push
  EXPECT_EQ(requests[1]["series"][0]["labels"]["env"], "ci");
  // The capture still reads as before.
  EXPECT_TRUE(ReadCapture(db).ok());

  auto [bad, unused] = RunCapture({kArcprof, "push", "-i", db, server.url(), "--label", "no_equals"});
  EXPECT_EQ(bad, 1);
  auto [down, unused2] = RunCapture({kArcprof, "push", "-i", tmp.File("missing.db"), server.url()});
  EXPECT_EQ(down, 2);  // cli/exit_codes.h kExitCaptureError
}

// Server never up: `arcprof push --max-time` gives up, exit 1, window unsent.
TEST(PushCli, KeepsTheWindowWhenTheServerIsDown) {
  TempDir tmp;
  const std::string db = tmp.File("cap.db");
  ASSERT_TRUE(WriteCapture(db, SampleProfile()).ok());
  const std::string url = "http://127.0.0.1:" + std::to_string(FreePort());
  auto [code, out] = RunCapture({kArcprof, "push", "-i", db, url, "--max-time", "1"});
  EXPECT_EQ(code, 1) << out;
  auto source = CaptureWindows::Open(db);
  ASSERT_TRUE(source.ok());
  auto unsent = (*source)->Unsent(Destination(url));
  ASSERT_TRUE(unsent.ok());
  EXPECT_EQ(unsent->size(), 1u);
}

// A server that accepts and never answers: `arcprof push --max-time 2` returns
// after about 2 s, not after one request's 30 s timeout (issue 23: 30 s for
// --max-time 8). The connection completes in the listen backlog; nothing reads.
TEST(PushCli, MaxTimeBoundsAServerThatNeverAnswers) {
  TempDir tmp;
  const std::string db = tmp.File("cap.db");
  ASSERT_TRUE(WriteCapture(db, SampleProfile()).ok());
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  ASSERT_EQ(listen(fd, 8), 0);
  socklen_t len = sizeof addr;
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  const std::string url = "http://127.0.0.1:" + std::to_string(ntohs(addr.sin_port));
  const auto start = std::chrono::steady_clock::now();
  auto [code, out] = RunCapture({kArcprof, "push", "-i", db, url, "--max-time", "2"});
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  close(fd);
  EXPECT_EQ(code, 1) << out;
  // The whole test: 2.16-2.27 s in 10 runs at load average 30; the bug took 30 s.
  EXPECT_LT(seconds, 6.0) << out;
  EXPECT_NE(out.find("pushed 0 windows"), std::string::npos) << out;
}

// A continuous store (one file per window): `arcprof push -i DIR` while the
// server is down keeps both windows unsent; a third window closes, the server
// comes up, and every window arrives exactly once with its store id's profile id.
TEST(PushCli, StoreServerDownForTwoWindowsThenUp) {
  REQUIRE_TOOLS();
  TempDir tmp;
  const std::string dir = tmp.File("store");
  std::vector<std::string> ids;
  {
    auto store = WindowStore::OpenForWriting(dir);
    ASSERT_TRUE(store.ok()) << store.error().message;
    for (int w = 0; w < 2; ++w) {
      auto id = store->Append(Window(w));
      ASSERT_TRUE(id.ok()) << id.error().message;
      ids.push_back(*id);
    }
  }
  const int port = FreePort();
  const std::string url = "http://127.0.0.1:" + std::to_string(port);
  auto [down, out] = RunCapture({kArcprof, "push", "-i", dir, url, "--max-time", "1", "--service-name", "svc"});
  EXPECT_EQ(down, 1) << out;
  {
    auto store = WindowStore::OpenForWriting(dir);
    ASSERT_TRUE(store.ok()) << store.error().message;
    EXPECT_EQ(store->Unsent(Destination(url))->size(), 2u);
    auto id = store->Append(Window(2));
    ASSERT_TRUE(id.ok()) << id.error().message;
    ids.push_back(*id);
  }
  std::filesystem::create_directory(tmp.File("srv-out"));
  Server server(tmp.File("srv-out"), port);
  auto [up, text] = RunCapture({kArcprof, "push", "-i", dir, url, "--service-name", "svc"});
  EXPECT_EQ(up, 0) << text;
  EXPECT_NE(text.find("pushed 3 windows"), std::string::npos) << text;
  auto [again, text2] = RunCapture({kArcprof, "push", "-i", dir, url, "--service-name", "svc"});
  EXPECT_EQ(again, 0);
  EXPECT_NE(text2.find("pushed 0 windows"), std::string::npos) << text2;

  std::map<std::string, int> received;
  for (const auto& request : server.Requests()) {
    for (const auto& series : request["series"]) {
      for (const auto& sample : series["samples"]) ++received[sample["id"].get<std::string>()];
    }
  }
  ASSERT_EQ(received.size(), 3u);
  for (const std::string& id : ids) EXPECT_EQ(received[ProfileUuid(id)], 1) << id;
}

// A real `arcprof continuous --window 2s --push SCHEME127.0.0.1:PORT` of one
// spinning process (root: BPF sampling) whose server comes up only after two
// windows closed unsent (checked); returns after at least 4 windows exist and
// 3 were sent, the daemon stopped by SIGTERM and exited 0. The server stays up
// for the caller to read; `windows()` lists the store.
struct LateServerRun {
  std::string dir;
  std::unique_ptr<Server> server;
  std::vector<StoredWindow> windows() const {
    auto store = WindowStore::OpenForReading(dir);
    return store.ok() ? store->List() : std::vector<StoredWindow>{};
  }
};

void RunContinuousWithLateServer(TempDir& tmp, const std::string& scheme, const std::vector<std::string>& daemon_args,
                                 const std::vector<std::string>& server_args, LateServerRun& run) {
  run.dir = tmp.File("store");
  const int port = FreePort();
  Subprocess spin({"/bin/sh", "-c", "while :; do :; done"}, false);
  std::vector<std::string> argv = {kArcprof, "continuous", "--store", run.dir, "--window", "2s", "-p",
                                   std::to_string(spin.pid()), "--no-java", "--push",
                                   scheme + "127.0.0.1:" + std::to_string(port)};
  argv.insert(argv.end(), daemon_args.begin(), daemon_args.end());
  Subprocess daemon(argv);
  ASSERT_TRUE(daemon.WaitForStderr("continuous capture", 30)) << daemon.stderr_text();
  ASSERT_TRUE(WaitFor([&] { return run.windows().size() >= 2; }, 30s)) << daemon.stderr_text();
  for (const StoredWindow& w : run.windows()) EXPECT_FALSE(w.sent) << w.id;  // nobody listening yet

  std::filesystem::create_directory(tmp.File("srv-out"));
  run.server = std::make_unique<Server>(tmp.File("srv-out"), port, server_args);
  ASSERT_EQ(run.server->port(), port) << run.server->stderr_text();
  // The backed-up windows and at least one more arrive while it runs.
  ASSERT_TRUE(WaitFor(
      [&] {
        const auto w = run.windows();
        size_t sent = 0;
        for (const StoredWindow& x : w) sent += x.sent;
        return w.size() >= 4 && sent >= 3;
      },
      60s))
      << daemon.stderr_text();
  daemon.Signal(SIGTERM);
  ASSERT_EQ(daemon.Wait(), 0) << daemon.stderr_text();
}

// End to end: a real `arcprof continuous --push URL` (root: BPF sampling) with
// the server down for its first two windows, then up. Every window of the
// store arrives exactly once (its profile id from the store's window id), is
// decoded with the real protos by the server and read by `go tool pprof`
// with the window's own sample count; the store ends with no unsent window.
TEST(PushContinuous, ServerDownForTwoWindowsThenUpEveryWindowOnce) {
  REQUIRE_TOOLS();
  if (geteuid() != 0) {
    if (InCi()) FAIL() << "needs root to load BPF programs (CI=true: must not skip)";
    GTEST_SKIP() << "needs root to load BPF programs";
  }
  TempDir tmp;
  LateServerRun run;
  RunContinuousWithLateServer(tmp, "http://", {"--service-name", "arcprof-e2e"}, {}, run);
  if (HasFatalFailure()) return;
  const Server& server = *run.server;
  const std::string dir = run.dir;
  auto windows = [&] { return run.windows(); };

  std::map<std::string, int> received;
  std::map<std::string, std::string> file_of;
  uint64_t request_bytes = 0;
  size_t requests = 0;
  for (const auto& request : server.Requests()) {
    EXPECT_EQ(request["path"], "/push.v1.PusherService/Push");
    ++requests;
    for (const auto& series : request["series"]) {
      EXPECT_EQ(series["labels"]["__name__"], "process_cpu");
      EXPECT_EQ(series["labels"]["service_name"], "arcprof-e2e");
      for (const auto& sample : series["samples"]) {
        const std::string id = sample["id"].get<std::string>();
        ++received[id];
        file_of[id] = sample["file"].get<std::string>();
        request_bytes += sample["bytes"].get<uint64_t>();
      }
    }
  }
  const auto stored = windows();
  ASSERT_GE(stored.size(), 4u);
  EXPECT_EQ(received.size(), stored.size());
  auto store = WindowStore::OpenForReading(dir);
  ASSERT_TRUE(store.ok());
  uint64_t samples = 0;
  for (const StoredWindow& w : stored) {
    EXPECT_TRUE(w.sent) << w.id;
    const std::string uuid = ProfileUuid(w.id);
    EXPECT_EQ(received[uuid], 1) << "window " << w.id;
    auto profile = store->Read(w.id);
    ASSERT_TRUE(profile.ok()) << profile.error().message;
    samples += profile->total_samples();
    if (profile->total_samples() == 0 || !file_of.count(uuid)) continue;
    std::string top;
    EXPECT_EQ(GoPprofTotal(tmp.path(), file_of[uuid], &top), profile->total_samples()) << top;
  }
  EXPECT_GT(samples, 0u);
  std::cout << stored.size() << " windows, " << requests << " requests, " << request_bytes
            << " pprof bytes pushed (" << request_bytes / stored.size() << " per 2 s window)\n";
}


// ---------------------------------------------------------------- OTLP

std::string Hex(const std::string& bytes) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  for (unsigned char c : bytes) {
    out += digits[c >> 4];
    out += digits[c & 15];
  }
  return out;
}

// The id of the first profile (resource 0, samples) of the window with this stable id.
std::string OtlpWindowId(const std::string& stable_id) { return Hex(reports::StableId16(stable_id + "/0/0")); }

// The OTLP requests the server took, by the id of their first profile.
std::map<std::string, std::vector<nlohmann::json>> OtlpByWindow(const Server& server) {
  std::map<std::string, std::vector<nlohmann::json>> out;
  for (const auto& request : server.Requests()) {
    if (!request.contains("otlp")) continue;
    const auto& ids = request["otlp"]["profile_ids"];
    out[ids.empty() ? "" : ids[0].get<std::string>()].push_back(request["otlp"]);
  }
  return out;
}

// What the server decoded equals the window's capture: totals of every
// sample type and the samples of every stack.
void ExpectOtlpEqualsWindow(const nlohmann::json& otlp, const Profile& window) {
  EXPECT_EQ(otlp["error"], "");
  const testing::OtlpContent want = testing::CaptureContent(window);
  std::map<std::string, int64_t> totals;
  for (const auto& [type, total] : otlp["totals"].items()) totals[type] = total.get<int64_t>();
  EXPECT_EQ(totals, want.totals);
  std::map<std::string, int64_t> stacks;
  if (otlp["stacks"].contains("samples")) {
    for (const auto& [key, value] : otlp["stacks"]["samples"].items()) stacks[key] = value.get<int64_t>();
  }
  const auto expected = want.stacks.count("samples") ? want.stacks.at("samples") : std::map<std::string, int64_t>{};
  EXPECT_EQ(stacks, expected);
}

// StoreWindows::Keep: the next Read of the kept window returns the profile
// kept, once (a resend reads the store); any other window is the store's; a
// second Keep drops the first.
TEST(StoreWindows, AKeptWindowIsReadOnceFromMemory) {
  TempDir tmp;
  const std::string dir = tmp.File("store");
  auto writer = WindowStore::OpenForWriting(dir);
  ASSERT_TRUE(writer.ok()) << writer.error().message;
  auto first = writer->Append(Window(0));
  auto second = writer->Append(Window(1));
  ASSERT_TRUE(first.ok() && second.ok());
  auto source = StoreWindows::Open(dir);
  ASSERT_TRUE(source.ok()) << source.error().message;
  auto unsent = (*source)->Unsent("d");
  ASSERT_TRUE(unsent.ok());
  ASSERT_EQ(unsent->size(), 2u);
  const WindowInfo& w0 = (*unsent)[0];
  const WindowInfo& w1 = (*unsent)[1];
  ASSERT_EQ(w1.stable_id, *second);
  auto marked = [](int i, const std::string& target) {
    Profile p = Window(i);
    p.meta.target = target;
    return p;
  };
  (*source)->Keep(*first, marked(0, "kept-first"));
  (*source)->Keep(*second, marked(1, "kept-second"));  // drops the first
  auto read0 = (*source)->Read(w0);
  ASSERT_TRUE(read0.ok());
  EXPECT_EQ(read0->meta.target, Window(0).meta.target);
  EXPECT_EQ(read0->total_samples(), Window(0).total_samples());
  auto read1 = (*source)->Read(w1);
  ASSERT_TRUE(read1.ok());
  EXPECT_EQ(read1->meta.target, "kept-second");
  auto again = (*source)->Read(w1);  // a resend: from the store
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->meta.target, Window(1).meta.target);
  EXPECT_EQ(again->total_samples(), read1->total_samples());
}

// `continuous --push` hands the push thread the window it has just written
// (StoreWindows::Keep) instead of letting it read the window back: the bytes
// pushed must be the same. A real continuous session in this process (root:
// BPF) of a shell starting short processes, with PTT, 1 s windows; each
// window's Pyroscope push request and OTLP body, encoded from the profile the
// session handed over and from the store's read-back, are compared.
TEST(PushContinuous, AKeptWindowPushesTheBytesOfItsReadBack) {
  if (geteuid() != 0) {
    if (InCi()) FAIL() << "needs root to load BPF programs (CI=true: must not skip)";
    GTEST_SKIP() << "needs root to load BPF programs";
  }
  TempDir tmp;
  Subprocess churn({"/bin/sh", "-c", "while :; do /bin/true; i=0; while [ $i -lt 300 ]; do i=$((i+1)); done; done"},
                   false);
  ContinuousOptions options;
  options.store_dir = tmp.File("store");
  options.window_ns = 1'000'000'000;
  options.record.pids = {static_cast<uint32_t>(churn.pid())};
  options.record.frequency_hz = 999;
  options.record.java = false;
  options.record.ptt = true;
  options.record.quiet = true;
  std::vector<std::pair<std::string, Profile>> handed;
  std::mutex mutex;
  bool ended = false;
  std::condition_variable end;
  auto stop_churn = [&] {
    churn.Signal(SIGKILL);
    churn.Wait();
  };
  options.on_window_written = [&](const std::string& id, Profile&& window) {
    std::lock_guard lock(mutex);
    handed.emplace_back(id, std::move(window));
    if (handed.size() == 3 && !ended) {
      ended = true;
      stop_churn();  // the session ends once its -p process is gone
      end.notify_all();
    }
  };
  std::thread watchdog([&] {
    std::unique_lock lock(mutex);
    if (!end.wait_for(lock, 60s, [&] { return ended; })) {
      ended = true;
      stop_churn();
    }
  });
  auto run = RunContinuous(options);
  {
    std::lock_guard lock(mutex);
    ended = true;
    end.notify_all();
  }
  watchdog.join();
  ASSERT_TRUE(run.ok()) << run.error().message;
  auto store = WindowStore::OpenForReading(options.store_dir);
  ASSERT_TRUE(store.ok());
  ASSERT_GE(handed.size(), 3u);
  EXPECT_EQ(handed.size(), store->List().size());
  uint64_t samples = 0;
  for (const auto& [id, window] : handed) {
    auto read = store->Read(id);
    ASSERT_TRUE(read.ok()) << read.error().message;
    samples += window.total_samples();
    EXPECT_EQ(window.total_samples(), read->total_samples()) << id;
    auto kept = SplitWindow(window, id, "", "h1", {{"env", "ci"}});
    auto stored = SplitWindow(*read, id, "", "h1", {{"env", "ci"}});
    ASSERT_TRUE(kept.ok() && stored.ok());
    EXPECT_EQ(kept->size(), stored->size()) << id;
    EXPECT_TRUE(EncodePushRequest(*kept) == EncodePushRequest(*stored)) << "window " << id;
    reports::OtlpOptions otlp;
    otlp.profile_id_seed = id;
    otlp.resource_attributes = {{"host.name", "h1"}};
    EXPECT_TRUE(reports::EncodeOtlp(window, {}, otlp) == reports::EncodeOtlp(*read, {}, otlp)) << "window " << id;
  }
  EXPECT_GT(samples, 0u);
}

TEST(PushOtlp, Urls) {
  EXPECT_TRUE(IsOtlpUrl("otlp+http://h:4318"));
  EXPECT_TRUE(IsOtlpUrl("otlp+https://h"));
  EXPECT_FALSE(IsOtlpUrl("http://h:4318"));
  EXPECT_EQ(OtlpProfilesUrl("otlp+http://h:4318/"), "http://h:4318/v1development/profiles");
  EXPECT_EQ(OtlpProfilesUrl("otlp+https://u:p@h/base"), "https://u:p@h/base/v1development/profiles");
  // Sent marks: an OTLP destination is not the Pyroscope one on the same host.
  EXPECT_EQ(Destination("otlp+http://u:secret@h:4318/"), "otlp+http://h:4318");
}

// The receiver is down while two windows close, then comes up: every window
// arrives once at /v1development/profiles (gzipped binary protobuf), decodes
// with the real protos, and its totals and stacks equal the window's; the
// resource carries host.name, service.name and the --label attributes.
TEST(PushOtlp, ServerDownForTwoWindowsThenUpEveryWindowOnce) {
  REQUIRE_TOOLS();
  TempDir tmp;
  const int port = FreePort();
  MemoryStore store;
  PushOptions options;
  options.url = "otlp+http://127.0.0.1:" + std::to_string(port);
  options.service_name = "checkout";
  options.labels = {{"env", "ci"}};
  store.identity = kContainer;
  PushStats stats;
  const auto late = PushThreeWindowsToALateServer(tmp, port, options, store, {"--otlp-python", kOtlpPython}, stats);
  if (HasFailure()) return;
  const Server& server = *late;

  for (const auto& request : server.Requests()) {
    EXPECT_EQ(request["path"], "/v1development/profiles");
    EXPECT_EQ(request["content_type"], "application/x-protobuf");
    EXPECT_EQ(request["content_encoding"], "gzip");
  }
  const auto received = OtlpByWindow(server);
  ASSERT_EQ(received.size(), 3u);
  for (int64_t w = 1; w <= 3; ++w) {
    const auto it = received.find(OtlpWindowId(store.stable_id(w)));
    ASSERT_NE(it, received.end()) << "window " << w;
    ASSERT_EQ(it->second.size(), 1u) << "window " << w;
    const auto& otlp = it->second[0];
    ExpectOtlpEqualsWindow(otlp, WithIdentity(Window(static_cast<int>(w - 1)), kContainer));
    // The busy process's container and pod, and the rest of the machine.
    ASSERT_EQ(otlp["resources"].size(), 2u);
    std::set<std::string> containers;
    for (const auto& resource : otlp["resources"]) {
      EXPECT_EQ(resource["host.name"], "testhost");
      EXPECT_EQ(resource["service.name"], "checkout");  // --service-name replaces the process's
      EXPECT_EQ(resource["env"], "ci");
      containers.insert(resource.value("container.id", ""));
      if (resource.contains("container.id")) EXPECT_EQ(resource["k8s.pod.uid"], kPod);
    }
    EXPECT_EQ(containers, (std::set<std::string>{"", kContainer}));
  }
  EXPECT_EQ(stats.windows_sent, 3u);
}

// `arcprof push` of one capture to an OTLP receiver and to Pyroscope on the
// same server: separate destinations, each sent once.
TEST(PushOtlp, CliPushesToBothBackendsOnce) {
  REQUIRE_TOOLS();
  TempDir tmp;
  const std::string db = tmp.File("cap.db");
  ASSERT_TRUE(WriteCapture(db, WithIdentity(SampleProfile(), kContainer)).ok());
  Server server(tmp.path(), 0, {"--otlp-python", kOtlpPython});
  const std::string otlp = "otlp+http://127.0.0.1:" + std::to_string(server.port());
  for (int run = 0; run < 2; ++run) {
    auto [code, out] = RunCapture({kArcprof, "push", "-i", db, otlp});
    EXPECT_EQ(code, 0) << out;
    EXPECT_NE(out.find(run == 0 ? "pushed 1 window" : "pushed 0 windows"), std::string::npos) << out;
  }
  auto [code, out] = RunCapture({kArcprof, "push", "-i", db, server.url()});
  EXPECT_EQ(code, 0) << out;
  EXPECT_NE(out.find("pushed 1 window"), std::string::npos) << out;
  const auto requests = server.Requests();
  ASSERT_EQ(requests.size(), 2u);
  EXPECT_EQ(requests[0]["path"], "/v1development/profiles");
  ExpectOtlpEqualsWindow(requests[0]["otlp"], SampleProfile());
  // No --service-name: each process's own service.name, from the capture.
  std::map<std::string, std::string> service_of;
  for (const auto& resource : requests[0]["otlp"]["resources"]) {
    service_of[resource.value("container.id", "")] = resource.value("service.name", "");
  }
  EXPECT_EQ(service_of, (std::map<std::string, std::string>{{"", ""}, {kContainer, "busy"}}));
  EXPECT_EQ(requests[1]["path"], "/push.v1.PusherService/Push");
  auto [bad, text] = RunCapture({kArcprof, "push", "-i", db, "otlp+ftp://x"});
  EXPECT_EQ(bad, 1) << text;
}

// End to end: a real `arcprof continuous --push otlp+http://...` (root: BPF
// sampling) with the receiver down for its first two windows, then up. Every
// window of the store arrives exactly once, decodes with the real protos, and
// its totals and stacks equal the window's capture; host.name is the machine's.
TEST(PushContinuous, OtlpServerDownForTwoWindowsThenUpEveryWindowOnce) {
  REQUIRE_TOOLS();
  if (geteuid() != 0) {
    if (InCi()) FAIL() << "needs root to load BPF programs (CI=true: must not skip)";
    GTEST_SKIP() << "needs root to load BPF programs";
  }
  TempDir tmp;
  LateServerRun run;
  RunContinuousWithLateServer(tmp, "otlp+http://", {}, {"--otlp-python", kOtlpPython}, run);
  if (HasFatalFailure()) return;
  const Server& server = *run.server;
  auto windows = [&] { return run.windows(); };
  auto store = WindowStore::OpenForReading(run.dir);
  ASSERT_TRUE(store.ok());

  const auto received = OtlpByWindow(server);
  uint64_t body_bytes = 0, decoded_bytes = 0;
  for (const auto& request : server.Requests()) {
    EXPECT_EQ(request["path"], "/v1development/profiles");
    body_bytes += request["body_bytes"].get<uint64_t>();
    decoded_bytes += request.value("decoded_bytes", uint64_t{0});
  }
  const auto stored = windows();
  ASSERT_GE(stored.size(), 4u);
  EXPECT_EQ(received.size(), stored.size());
  uint64_t samples = 0;
  for (const StoredWindow& w : stored) {
    EXPECT_TRUE(w.sent) << w.id;
    auto profile = store->Read(w.id);
    ASSERT_TRUE(profile.ok()) << profile.error().message;
    samples += profile->total_samples();
    const auto it = received.find(OtlpWindowId(w.id));
    ASSERT_NE(it, received.end()) << "window " << w.id;
    ASSERT_EQ(it->second.size(), 1u) << "window " << w.id;
    ExpectOtlpEqualsWindow(it->second[0], *profile);
    // The resources are the window's processes' identities (container.id,
    // service.name as the capture has them), on this machine.
    std::set<std::pair<std::string, std::string>> want, got;
    for (const ThreadRecord& t : profile->threads) want.emplace(t.identity.container_id, t.identity.service_name);
    // A window without threads (the last one can close within milliseconds of
    // its start) is still one empty profile of the machine.
    if (want.empty()) want.emplace("", "");
    for (const auto& resource : it->second[0]["resources"]) {
      EXPECT_EQ(resource["host.name"], profile->meta.host);
      got.emplace(resource.value("container.id", ""), resource.value("service.name", ""));
    }
    EXPECT_EQ(got, want) << "window " << w.id;
  }
  EXPECT_GT(samples, 0u);
  std::cout << stored.size() << " windows, " << body_bytes << " gzipped OTLP bytes pushed (" << decoded_bytes
            << " decoded; " << body_bytes / stored.size() << " per 2 s window)\n";
}

}  // namespace
}  // namespace arcprof::push
