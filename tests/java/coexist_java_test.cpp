// Two arcprofs and one JVM: a `continuous` daemon of another build (a copy of
// the binary and its agent in a folder of their own) attaches every JVM; an
// engineer records one of them with `record -p`, and starts another under
// `record -- java`, which both attach at the same moment. HotSpot runs one
// copy of the agent; every arcprof reads its jitdump and side file, and gets
// the Java names and thread names.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "store/window_store.h"
#include "tests/loader/runtime_util.h"
#include "tests/layer_names.h"

namespace arcprof::testing {
namespace {

const std::string kArcprof = ARCPROF_BIN;

// Burn.heavy's share of Burn.heavy + Burn.light on the JVM's thread named
// "main" (a Java thread name: the OS calls every JVM thread "java"), and the
// number of those samples.
std::pair<double, uint64_t> BurnShare(const Profile& p, uint32_t pid) {
  uint64_t heavy = 0, light = 0;
  for (const auto& [stack, n] :
       Stacks(p, [pid](const ThreadRecord& t) { return t.pid == pid && t.comm == "main"; })) {
    if (std::find(stack.begin(), stack.end(), "Burn.heavy") != stack.end()) heavy += n;
    if (std::find(stack.begin(), stack.end(), "Burn.light") != stack.end()) light += n;
  }
  return {heavy + light ? static_cast<double>(heavy) / static_cast<double>(heavy + light) : -1.0, heavy + light};
}

double Tolerance(uint64_t n) {
  return std::max(0.03, 4 * std::sqrt(0.75 * 0.25 / static_cast<double>(std::max<uint64_t>(n, 1))));
}

void RemoveJitFiles(pid_t pid) {
  for (const char* ext : {".dump", ".arcprof"}) unlink(("/tmp/jit-" + std::to_string(pid) + ext).c_str());
}

TEST(CoexistJava, DaemonAndRecordShareJvms) {
  ARCPROF_REQUIRE_RECORD_CAPABLE();
  const std::string java = std::string(JDK17_HOME) + "/bin/java";
  ARCPROF_REQUIRE_TOOL(java, "openjdk-17-jdk-headless");
  TempDir tmp;
  chmod(tmp.dir().c_str(), 0755);  // the JVM (root here) loads the daemon's agent from it
  const std::string daemon_bin = tmp.path("arcprof");
  std::filesystem::copy_file(kArcprof, daemon_bin);
  std::filesystem::copy_file(ARCPROF_AGENT, tmp.path("libarcprof_jvmti.so"));
  chmod(daemon_bin.c_str(), 0755);
  chmod(tmp.path("libarcprof_jvmti.so").c_str(), 0644);
  const std::string store = tmp.path("store");
  DetachedArcprof daemon(tmp.dir(), {daemon_bin, "continuous", "--store", store, "--window", "2s", "-F", "499",
                                     "--verbose-java"});
  ASSERT_TRUE(daemon.WaitForLog([](const std::string& log) { return log.find("continuous capture of") != std::string::npos; },
                                30))
      << daemon.log();

  // A JVM the daemon attaches first, then recorded with -p.
  Subprocess jvm({java, "-XX:+PreserveFramePointer", "-cp", JAVA_CLASSES, "Burn", "25"});
  ASSERT_TRUE(jvm.WaitForStderr("burn: running", 30)) << jvm.stderr_text();
  const pid_t first = jvm.pid();
  ASSERT_TRUE(daemon.WaitForLog([first](const std::string& log) { return JvmHasAgent(log, first); }, 30))
      << daemon.log();
  {
    const std::string db = tmp.path("p.db");
    Subprocess rec({kArcprof, "record", "-F", "4999", "-o", db, "-d", "4", "-p", std::to_string(first)});
    ASSERT_EQ(rec.Wait(), 0) << rec.stderr_text();
    EXPECT_NE(rec.stderr_text().find("JVM " + std::to_string(first) + " already has the agent"), std::string::npos)
        << rec.stderr_text();
    Profile p = LoadCapture(db);
    EXPECT_EQ(p.counters["java.attach_failed"], 0);
    const auto [share, n] = BurnShare(p, static_cast<uint32_t>(first));
    ASSERT_GT(n, 200u) << "few Java-named samples on the thread named 'main'";
    EXPECT_NEAR(share, 0.75, Tolerance(n)) << n << " samples";
  }

  // A JVM started by record while the daemon runs: both attach it at once,
  // with agents of two paths; one agent runs, both arcprofs name the code.
  pid_t second = 0;
  {
    const std::string db = tmp.path("cmd.db");
    Subprocess rec({kArcprof, "record", "-F", "4999", "-o", db, "--", java, "-XX:+PreserveFramePointer", "-cp",
                    JAVA_CLASSES, "Burn", "5"});
    ASSERT_EQ(rec.Wait(), 0) << rec.stderr_text();
    EXPECT_EQ(rec.stderr_text().find("cannot attach"), std::string::npos) << rec.stderr_text();
    Profile p = LoadCapture(db);
    for (const ThreadRecord& t : p.threads) {
      if (t.comm == "main") second = static_cast<pid_t>(t.pid);
    }
    std::string threads;
    for (const ThreadRecord& t : p.threads) threads += " " + std::to_string(t.pid) + "/" + std::to_string(t.tid) + ":" + t.comm;
    ASSERT_GT(second, 0) << "no Java thread named 'main' in the recording; threads:" << threads << "\n"
                         << rec.stderr_text() << "\ndaemon:\n" << daemon.log();
    EXPECT_TRUE(JvmHasAgent(rec.stderr_text(), second)) << rec.stderr_text();
    EXPECT_EQ(p.counters["java.attach_failed"], 0);
    const auto [share, n] = BurnShare(p, static_cast<uint32_t>(second));
    ASSERT_GT(n, 200u);
    EXPECT_NEAR(share, 0.75, Tolerance(n)) << n << " samples";
  }
  EXPECT_EQ(daemon.log().find("cannot attach to JVM " + std::to_string(second)), std::string::npos) << daemon.log();
  // (That each arcprof removes its own attach trigger and only that is
  // checked with a fake JVM below: here other arcprofs on the machine may be
  // attaching these JVMs, or have been killed in the middle of it.)
  jvm.Signal(SIGKILL);
  jvm.Wait();
  RemoveJitFiles(first);
  RemoveJitFiles(second);

  // The daemon named both JVMs' code too.
  ASSERT_TRUE(daemon.Stop()) << daemon.log();
  auto opened = WindowStore::OpenForReading(store);
  ASSERT_TRUE(opened) << daemon.log();
  auto all = opened->ReadRange(0, UINT64_MAX, nullptr);
  ASSERT_TRUE(all) << all.error().message;
  for (pid_t pid : {first, second}) {
    const auto [share, n] = BurnShare(*all, static_cast<uint32_t>(pid));
    EXPECT_GT(n, 100u) << "daemon: JVM " << pid;
    EXPECT_NEAR(share, 0.75, Tolerance(n)) << "daemon: JVM " << pid << ", " << n << " samples";
  }
}

// A fake HotSpot for the SIGQUIT protocol: a file named libjvm.so mapped
// executable, and (once told) a SIGQUIT handler. Like HotSpot, a SIGQUIT
// while the trigger /tmp/.attach_pid<pid> exists and no listener runs starts
// the listener (the socket answers every `load` with "0\nreturn code: 0");
// any other SIGQUIT is what makes HotSpot print a full thread dump on the
// JVM's stdout. The fake reports each as "L <sender pid>" or "D <sender pid>".
int g_signal_pipe = -1;
void OnQuit(int, siginfo_t* info, void*) {
  const pid_t sender = info->si_pid;
  ssize_t ignored = write(g_signal_pipe, &sender, sizeof(sender));
  (void)ignored;
}

class FakeHotspot {
 public:
  explicit FakeHotspot(const TempDir& dir) {
    const std::string lib = dir.path("libjvm.so");
    std::ofstream(lib, std::ios::binary) << std::string(4096, '\0');
    int control[2], report[2];
    if (pipe(control) != 0 || pipe(report) != 0) return;
    pid_ = fork();
    if (pid_ == 0) {
      close(control[1]);
      close(report[0]);
      const int fd = open(lib.c_str(), O_RDONLY);
      if (fd < 0 || mmap(nullptr, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0) == MAP_FAILED) _exit(2);
      Run(control[0], report[1]);
    }
    close(control[0]);
    close(report[1]);
    control_ = control[1];
    report_ = report[0];
  }
  ~FakeHotspot() {
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
      unlink(("/tmp/.java_pid" + std::to_string(pid_)).c_str());
    }
    if (control_ >= 0) close(control_);
    if (report_ >= 0) close(report_);
  }
  pid_t pid() const { return pid_; }
  // Installs the SIGQUIT handler (HotSpot does early in its start).
  void HandleSigquit() {
    ssize_t ignored = write(control_, "h", 1);
    (void)ignored;
    char c;
    ignored = read(report_, &c, 1);  // 'h': installed
  }
  // Stops the fake and returns its report.
  std::string Finish() {
    ssize_t ignored = write(control_, "q", 1);
    (void)ignored;
    std::string out;
    char buf[256];
    ssize_t n;
    while ((n = read(report_, buf, sizeof(buf))) > 0) out.append(buf, static_cast<size_t>(n));
    waitpid(pid_, nullptr, 0);
    unlink(("/tmp/.java_pid" + std::to_string(pid_)).c_str());
    pid_ = -1;
    return out;
  }

 private:
  [[noreturn]] static void Run(int control, int report) {
    int signals[2];
    if (pipe(signals) != 0) _exit(3);
    g_signal_pipe = signals[1];
    const std::string me = std::to_string(getpid());
    const std::string trigger = "/tmp/.attach_pid" + me, socket_path = "/tmp/.java_pid" + me;
    int listener = -1;
    for (;;) {
      pollfd fds[3] = {{control, POLLIN, 0}, {signals[0], POLLIN, 0}, {listener, POLLIN, 0}};
      if (poll(fds, listener >= 0 ? 3 : 2, -1) < 0) continue;
      if (fds[0].revents) {
        char c = 0;
        if (read(control, &c, 1) != 1 || c == 'q') _exit(0);
        struct sigaction sa {};
        sa.sa_sigaction = OnQuit;
        sa.sa_flags = SA_SIGINFO | SA_RESTART;
        sigaction(SIGQUIT, &sa, nullptr);
        ssize_t ignored = write(report, "h", 1);
        (void)ignored;
      }
      if (fds[1].revents) {
        pid_t sender = 0;
        if (read(signals[0], &sender, sizeof(sender)) != sizeof(sender)) continue;
        struct stat st {};
        std::string line;
        if (listener < 0 && stat(trigger.c_str(), &st) == 0) {
          unlink(socket_path.c_str());
          listener = socket(AF_UNIX, SOCK_STREAM, 0);
          sockaddr_un addr{};
          addr.sun_family = AF_UNIX;
          strncpy(addr.sun_path, socket_path.c_str(), sizeof(addr.sun_path) - 1);
          if (bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 || listen(listener, 8) != 0) _exit(4);
          line = "L " + std::to_string(sender) + "\n";
        } else {
          line = "D " + std::to_string(sender) + "\n";
        }
        ssize_t ignored = write(report, line.data(), line.size());
        (void)ignored;
      }
      if (listener >= 0 && fds[2].revents) {
        const int c = accept(listener, nullptr, nullptr);
        if (c < 0) continue;
        char buf[4096];
        ssize_t ignored = read(c, buf, sizeof(buf));
        const char reply[] = "0\nreturn code: 0\n";
        ignored = write(c, reply, sizeof(reply) - 1);
        (void)ignored;
        close(c);
      }
    }
  }

  pid_t pid_ = -1;
  int control_ = -1, report_ = -1;
};

constexpr auto kDaemonGivesUp = std::chrono::seconds(16);


// Whether another arcprof process runs on the machine (a daemon attaches
// every JVM it sees).
bool OtherArcprofRunning() {
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    std::error_code ec;
    const std::string exe = std::filesystem::read_symlink(entry.path() / "exe", ec);
    if (!ec && exe.substr(exe.rfind('/') + 1).find("arcprof") != std::string::npos &&
        !DescendsFrom(static_cast<pid_t>(std::atoi(entry.path().filename().c_str())), getpid())) {
      return true;
    }
  }
  return false;
}

// The trigger tests' start: a fake JVM that handles SIGQUIT (once a daemon
// on the machine has given up on it: it does not handle SIGQUIT within the
// daemon's 10 s start-up grace, counted from when the daemon first saw it,
// by the side band at once or by a full scan of /proc every 5 s), and the
// path of its trigger file, which the test owns: the fake is new, so a
// trigger already there is a leftover of an earlier process with the same
// pid (an attach killed before it cleaned up; one made a test fail in CI).
class CoexistJavaTrigger : public ::testing::Test {
 protected:
  void SetUp() override {
    ARCPROF_REQUIRE_RECORD_CAPABLE();
    jvm_ = std::make_unique<FakeHotspot>(tmp_);
    ASSERT_GT(jvm_->pid(), 0);
    if (OtherArcprofRunning()) std::this_thread::sleep_for(kDaemonGivesUp);
    jvm_->HandleSigquit();
    trigger_ = "/tmp/.attach_pid" + std::to_string(jvm_->pid());
    struct stat st {};
    if (lstat(trigger_.c_str(), &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == geteuid()) unlink(trigger_.c_str());
  }
  void TearDown() override {
    if (!trigger_.empty()) unlink(trigger_.c_str());
  }
  FakeHotspot& jvm() { return *jvm_; }
  Subprocess Attach(const char* timeout_s) {
    return Subprocess({kArcprof, "java", "attach", std::to_string(jvm_->pid()), "--agent", ARCPROF_AGENT, "--timeout", timeout_s});
  }
  TempDir tmp_;
  std::unique_ptr<FakeHotspot> jvm_;
  std::string trigger_;
};

// Two attaches at once: the first has created the trigger file and signalled
// the JVM. The second must not send its own SIGQUIT: once the listener runs,
// HotSpot answers one with a full thread dump on the JVM's stdout (a daemon
// and a `record` attaching a new JVM together printed one into the
// application's output). It waits for the socket the first attach brings up.
TEST_F(CoexistJavaTrigger, SecondAttachDoesNotMakeTheJvmDumpItsThreads) {
  // The other attach: its trigger file now, its SIGQUIT a moment later.
  {
    const int fd = open(trigger_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    ASSERT_GE(fd, 0) << strerror(errno);
    close(fd);
  }
  Subprocess attach = Attach("10");
  std::this_thread::sleep_for(std::chrono::seconds(1));
  kill(jvm().pid(), SIGQUIT);
  const int code = attach.Wait();
  unlink(trigger_.c_str());
  const std::string report = jvm().Finish();
  EXPECT_EQ(code, 0) << attach.stderr_text();
  // One SIGQUIT, the other attach's, started the listener; no thread dump.
  EXPECT_EQ(report, "L " + std::to_string(getpid()) + "\n") << "fake JVM saw (L = listener started, D = thread dump, "
                                                            << "by sender pid; arcprof was " << attach.pid() << "):\n"
                                                            << report;
}

// A trigger file left by an attach that died before it signalled (older than
// an attach takes) does not keep arcprof waiting: it signals the JVM itself.
TEST_F(CoexistJavaTrigger, StaleTriggerOfADeadAttachIsSignalledFor) {
  {
    const int fd = open(trigger_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    ASSERT_GE(fd, 0) << strerror(errno);
    const timespec ten_seconds_ago[2] = {{time(nullptr) - 10, 0}, {time(nullptr) - 10, 0}};
    futimens(fd, ten_seconds_ago);
    close(fd);
  }
  Subprocess attach = Attach("5");
  const int code = attach.Wait();
  EXPECT_EQ(access(trigger_.c_str(), F_OK), 0) << "arcprof removed a trigger it did not create";
  const std::string report = jvm().Finish();
  EXPECT_EQ(code, 0) << attach.stderr_text();
  EXPECT_EQ(report, "L " + std::to_string(attach.pid()) + "\n") << report;
}

// An attach removes the trigger it created once connected.
TEST_F(CoexistJavaTrigger, OwnTriggerIsRemovedOnceConnected) {
  Subprocess attach = Attach("5");
  const int code = attach.Wait();
  EXPECT_NE(access(trigger_.c_str(), F_OK), 0) << "arcprof left its trigger";
  const std::string report = jvm().Finish();
  EXPECT_EQ(code, 0) << attach.stderr_text();
  EXPECT_EQ(report, "L " + std::to_string(attach.pid()) + "\n") << report;
}

}  // namespace
}  // namespace arcprof::testing
