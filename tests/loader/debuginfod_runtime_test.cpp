// debuginfod against a real local server: Debian's `debuginfod -F DIR`
// serving the unstripped twin of a stripped test program.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

#include "tests/loader/runtime_util.h"
#include "tests/layer_names.h"

namespace arcprof::testing {
namespace {

const std::string kArcprof = ARCPROF_BIN;
const std::string kWork = std::string(ARCPROF_TEST_PROGRAMS) + "/debuginfod_work";

// A TCP port nobody listens on right now.
int FreePort() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(a);
  int port = -1;
  if (bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0) {
    port = ntohs(a.sin_port);
  }
  close(fd);
  return port;
}

std::string BuildId(const std::string& path) {
  auto [code, notes] = RunCapture({"/usr/bin/readelf", "-n", path});
  const size_t at = notes.find("Build ID: ");
  return at == std::string::npos ? "" : notes.substr(at + 10, 40);
}

// Environment variables set for the children of one test.
class ScopedEnv {
 public:
  void Set(const std::string& name, const std::string& value) {
    names_.push_back(name);
    setenv(name.c_str(), value.c_str(), 1);
  }
  ~ScopedEnv() {
    for (const auto& n : names_) unsetenv(n.c_str());
  }

 private:
  std::vector<std::string> names_;
};

class Debuginfod : public ::testing::Test {
 protected:
  void SetUp() override {
    if (access("/usr/bin/debuginfod", X_OK) != 0) {
      if (InCi()) FAIL() << "debuginfod is not installed (CI=true: must not skip)";
      GTEST_SKIP() << "debuginfod is not installed (Debian package debuginfod)";
    }
    std::filesystem::create_directories(tmp_.path("served"));
    // The unstripped program is served; the stripped twin is what runs.
    std::filesystem::copy_file(kWork, tmp_.path("served/debuginfod_work"));
    stripped_ = tmp_.path("work_stripped");
    auto [code, out] = RunCapture({"/usr/bin/strip", "--strip-all", "-o", stripped_, kWork});
    ASSERT_EQ(code, 0);
    build_id_ = BuildId(stripped_);
    ASSERT_EQ(build_id_.size(), 40u);
    ASSERT_EQ(build_id_, BuildId(kWork));
  }

  // Starts the server and waits until it serves the build-id.
  void StartServer() {
    port_ = FreePort();
    ASSERT_GT(port_, 0);
    server_ = std::make_unique<Subprocess>(std::vector<std::string>{
        "/usr/bin/debuginfod", "-F", tmp_.path("served"), "-p", std::to_string(port_), "-d",
        tmp_.path("index.sqlite"), "-t", "0", "-g", "0"});
    const std::string url = "http://127.0.0.1:" + std::to_string(port_);
    bool ready = false;
    for (int i = 0; i < 150 && !ready; ++i) {
      // Probed with the client of the same package, each time into a new
      // cache (the client remembers misses).
      auto [code, out] = RunCapture({"/usr/bin/env", "DEBUGINFOD_URLS=" + url,
                                     "DEBUGINFOD_CACHE_PATH=" + tmp_.path("probe-cache-" + std::to_string(i)),
                                     "/usr/bin/debuginfod-find", "debuginfo", build_id_});
      ready = code == 0;
      if (!ready) std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    ASSERT_TRUE(ready) << "debuginfod did not serve " << build_id_ << " within 30 s";
    env_.Set("DEBUGINFOD_URLS", url);
  }

  Profile Record(const std::string& name, std::string* stderr_text) {
    const std::string db = tmp_.path(name + ".db");
    Subprocess rec({kArcprof, "record", "-o", db, "--", stripped_, "1.5"});
    EXPECT_EQ(rec.Wait(), 0) << rec.stderr_text();
    *stderr_text = rec.stderr_text();
    return LoadCapture(db);
  }

  static std::map<std::string, uint64_t> Leaves(const Profile& p) {
    return LeafCounts(p, [](const ThreadRecord& t) { return t.comm == "work_stripped"; });
  }

  TempDir tmp_;
  std::string stripped_, build_id_;
  int port_ = -1;
  std::unique_ptr<Subprocess> server_;
  ScopedEnv env_;
};

TEST_F(Debuginfod, StrippedProgramNamedThroughLocalServer) {
  ARCPROF_REQUIRE_RECORD_CAPABLE();
  ASSERT_NO_FATAL_FAILURE(StartServer());
  env_.Set("DEBUGINFOD_CACHE_PATH", tmp_.path("cache"));
  std::string err;
  Profile p = Record("named", &err);
  EXPECT_NE(err.find("1 module named from debuginfod, 0 not found"), std::string::npos) << err;
  const auto leaves = Leaves(p);
  uint64_t total = 0;
  for (const auto& [name, n] : leaves) total += n;
  ASSERT_GT(total, 200u);
  auto hot = leaves.find("stripped_hot");
  ASSERT_NE(hot, leaves.end()) << "stripped_hot not named";
  EXPECT_GE(hot->second, total * 8 / 10) << hot->second << " of " << total;
  // The callers are named too, and nothing of the program stays unknown.
  bool outer = false;
  for (const auto& [stack, n] : Stacks(p, [](const ThreadRecord& t) { return t.comm == "work_stripped"; })) {
    for (const auto& f : stack) outer = outer || f == "stripped_outer";
  }
  EXPECT_TRUE(outer);
  for (const FrameRecord& f : p.frames.all()) {
    // A frame without a file address (a sample caught while the mapping was
    // being set up) cannot be looked up by anyone; every located one must be named.
    if (p.frames.module_of(f) == stripped_ && f.address != 0) EXPECT_FALSE(f.symbol.empty()) << "0x" << std::hex << f.address;
  }
  // The file is in the client's cache now.
  EXPECT_TRUE(std::filesystem::exists(tmp_.path("cache/" + build_id_ + "/debuginfo")));
}

// A capture recorded without debuginfod keeps module and offset of its
// stripped frames; report and export name them later from the server.
TEST_F(Debuginfod, ReportAndExportNameACaptureLater) {
  ARCPROF_REQUIRE_RECORD_CAPABLE();
  unsetenv("DEBUGINFOD_URLS");  // a login shell's default must not name them at record time
  std::string err;
  Profile p = Record("later", &err);
  EXPECT_EQ(err.find("from debuginfod"), std::string::npos) << err;
  bool unnamed = false;
  for (const FrameRecord& f : p.frames.all()) {
    unnamed = unnamed || (p.frames.module_of(f) == stripped_ && f.symbol.empty() && f.address != 0);
  }
  ASSERT_TRUE(unnamed) << "the capture has no unnamed frame of the stripped program";
  ASSERT_NO_FATAL_FAILURE(StartServer());
  env_.Set("DEBUGINFOD_CACHE_PATH", tmp_.path("cache"));
  const std::string db = tmp_.path("later.db");

  Subprocess exported({kArcprof, "export", "-i", db, "--format", "folded", "-o", tmp_.path("later.folded")});
  EXPECT_EQ(exported.Wait(), 0) << exported.stderr_text();
  EXPECT_NE(exported.stderr_text().find("arcprof export: 1 module named from debuginfod, 0 not found"),
            std::string::npos)
      << exported.stderr_text();
  std::ifstream in(tmp_.path("later.folded"));
  const std::string folded((std::istreambuf_iterator<char>(in)), {});
  EXPECT_NE(folded.find("stripped_outer;stripped_hot"), std::string::npos) << folded.substr(0, 2000);
  EXPECT_EQ(folded.find("[work_stripped+0x"), std::string::npos) << folded.substr(0, 2000);

  // report: the file is in the client's cache now, the view shows the names.
  auto [code, tprof] = RunCapture({kArcprof, "report", "-i", db});
  EXPECT_EQ(code, 0);
  EXPECT_NE(tprof.find("stripped_hot"), std::string::npos) << tprof;
  EXPECT_EQ(tprof.find("[work_stripped+0x"), std::string::npos) << tprof;
  // --debuginfod-budget 0 turns it off: the offsets stay.
  auto [off_code, off] = RunCapture({kArcprof, "report", "-i", db, "--debuginfod-budget", "0"});
  EXPECT_EQ(off_code, 0);
  EXPECT_NE(off.find("[work_stripped+0x"), std::string::npos) << off;
}

TEST_F(Debuginfod, UnreachableServerLeavesOffsetsAndDoesNotStall) {
  ARCPROF_REQUIRE_RECORD_CAPABLE();
  env_.Set("DEBUGINFOD_URLS", "http://127.0.0.1:" + std::to_string(FreePort()));
  env_.Set("DEBUGINFOD_CACHE_PATH", tmp_.path("cache"));
  std::string err;
  const auto t0 = std::chrono::steady_clock::now();
  Profile p = Record("unreachable", &err);
  const double secs =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_NE(err.find("0 modules named from debuginfod, 1 not found"), std::string::npos) << err;
  EXPECT_LT(secs, 15.0);
  // Unknown frames keep their module and where they are.
  bool offsets = false;
  for (const FrameRecord& f : p.frames.all()) {
    if (p.frames.module_of(f) == stripped_ && f.symbol.empty()) offsets = offsets || f.address != 0;
  }
  EXPECT_TRUE(offsets) << "stripped frames stored without their offsets";
  // Reports show them as module+offset, under their module in tprof.
  auto [code, tprof] = RunCapture({kArcprof, "report", "-i", tmp_.path("unreachable.db")});
  EXPECT_EQ(code, 0);
  const size_t mod = tprof.find("MOD");
  const size_t at = tprof.find("[work_stripped+0x");
  EXPECT_NE(at, std::string::npos) << tprof;
  EXPECT_LT(mod, at);
  auto [fcode, folded] =
      RunCapture({kArcprof, "export", "-i", tmp_.path("unreachable.db"), "--format", "folded"});
  EXPECT_NE(folded.find("[work_stripped+0x"), std::string::npos) << folded.substr(0, 2000);
}

}  // namespace
}  // namespace arcprof::testing
