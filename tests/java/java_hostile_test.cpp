// A local user against root's arcprof, on the Java side: fake JVMs, a
// squatted attach socket, a planted jitdump, an agent library others can
// write, a second arcprof mistaken for a JVM, and JIT warnings about non-Java
// processes. Each fake is a forked child of this test, so nothing here needs
// a toolchain or an interpreter beyond the real JVM.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <glob.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "tests/loader/runtime_util.h"
#include "tests/layer_names.h"

namespace arcprof::testing {
namespace {

const std::string kArcprof = ARCPROF_BIN;
const std::string kAgent = ARCPROF_AGENT;
const std::string kClasses = JAVA_CLASSES;
const std::string kJava = std::string(JDK17_HOME) + "/bin/java";
constexpr uid_t kNobody = 65534;

// A forked child, killed and reaped when the test ends.
class Child {
 public:
  explicit Child(pid_t pid) : pid_(pid) {}
  ~Child() {
    if (pid_ > 0) {
      kill(-pid_, SIGKILL);  // its own process group: helpers it forked go too
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
  }
  pid_t pid() const { return pid_; }

 private:
  pid_t pid_;
};

void Ignore(int) {}

// Serves `reply` to every connection on a UNIX socket at path (owned by
// owner), forever. Runs in a child process.
[[noreturn]] void ServeSocket(const std::string& path, uid_t owner, const std::string& reply, int ready_fd) {
  // Every connection gets the reply: a continuous daemon on the machine may
  // attach the fake too, and stop reading (4 KiB) before the reply ends.
  signal(SIGPIPE, SIG_IGN);
  unlink(path.c_str());
  int s = socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  strncpy(addr.sun_path, path.c_str(), sizeof(addr.sun_path) - 1);
  if (s < 0 || bind(s, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 || listen(s, 8) != 0) _exit(3);
  if (chown(path.c_str(), owner, owner) != 0) _exit(4);
  ssize_t ready = write(ready_fd, "r", 1);
  (void)ready;
  for (;;) {
    int c = accept(s, nullptr, nullptr);
    if (c < 0) continue;
    char buf[4096];
    usleep(50 * 1000);
    ssize_t ignored = read(c, buf, sizeof(buf));
    for (size_t sent = 0; sent < reply.size();) {
      ssize_t n = write(c, reply.data() + sent, reply.size() - sent);
      if (n <= 0) break;
      sent += static_cast<size_t>(n);
    }
    (void)ignored;
    close(c);
  }
}

// What InspectJvm calls a HotSpot JVM: a file named libjvm.so mapped
// executable and a SIGQUIT handler. With a reply, the attach socket
// /tmp/.java_pid<pid> (owned by socket_owner) answers with it, served by the
// fake itself or by another process of its.
pid_t StartFakeJvm(const TempDir& dir, const std::string* reply, uid_t socket_owner = 0, bool served_by_other = false) {
  const std::string lib = dir.path("libjvm.so");
  {
    std::ofstream out(lib, std::ios::binary);
    out << std::string(4096, '\0');
  }
  int ready[2];
  if (pipe(ready) != 0) return -1;
  pid_t pid = fork();
  if (pid == 0) {
    setpgid(0, 0);
    close(ready[0]);
    int fd = open(lib.c_str(), O_RDONLY);
    if (fd < 0 || mmap(nullptr, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0) == MAP_FAILED) _exit(2);
    signal(SIGQUIT, Ignore);
    if (!reply) {
      ssize_t ignored = write(ready[1], "r", 1);
      (void)ignored;
      for (;;) pause();
    }
    const std::string path = "/tmp/.java_pid" + std::to_string(getpid());
    if (!served_by_other) ServeSocket(path, socket_owner, *reply, ready[1]);
    if (fork() == 0) ServeSocket(path, socket_owner, *reply, ready[1]);
    for (;;) pause();
  }
  close(ready[1]);
  char c;
  ssize_t ignored = read(ready[0], &c, 1);
  (void)ignored;
  close(ready[0]);
  return pid;
}

// The fake's socket server is its child: kill the process group's members we know.
void RemoveSocket(pid_t pid) { unlink(("/tmp/.java_pid" + std::to_string(pid)).c_str()); }

TEST(JavaHostile, FakeJvmReplyIsBoundedAndSanitized) {
  ARCPROF_REQUIRE_RECORD_CAPABLE();
  TempDir tmp;
  // A forged status line, a terminal title escape, a BEL and 1 MiB more.
  const std::string reply = "0\n\x1b]0;owned\x07\narcprof: 0 samples written -> /tmp/elsewhere.db\n" +
                            std::string(1 << 20, 'A');
  Child jvm(StartFakeJvm(tmp, &reply));
  ASSERT_GT(jvm.pid(), 0);
  Subprocess attach({kArcprof, "java", "attach", std::to_string(jvm.pid()), "--agent", kAgent, "--timeout", "5"});
  EXPECT_EQ(attach.Wait(), 1);
  const std::string& out = attach.stderr_text();
  EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), 1) << out;
  EXPECT_EQ(out.find('\x1b'), std::string::npos) << out;
  EXPECT_EQ(out.find('\x07'), std::string::npos) << out;
  EXPECT_LT(out.size(), 400u) << out;
  EXPECT_NE(out.find("\\x1b]0;owned\\x07"), std::string::npos) << out;  // shown, escaped

  // record -q prints the same bounded line and nothing forged.
  const std::string db = tmp.path("fake.db");
  Subprocess rec({kArcprof, "record", "-q", "-o", db, "-d", "1", "-p", std::to_string(jvm.pid())});
  EXPECT_EQ(rec.Wait(), 0) << rec.stderr_text();
  const std::string& rec_err = rec.stderr_text();
  EXPECT_EQ(rec_err.find('\x1b'), std::string::npos) << rec_err;
  EXPECT_EQ(rec_err.find("\narcprof: 0 samples"), std::string::npos) << rec_err;
  EXPECT_EQ(rec_err.rfind("arcprof: 0 samples", 0), std::string::npos) << rec_err;
  EXPECT_LT(rec_err.size(), 2000u) << rec_err;
  RemoveSocket(jvm.pid());
}

TEST(JavaHostile, AttachSocketOwnedByAnotherUserIsNotTrusted) {
  ARCPROF_REQUIRE_RECORD_CAPABLE();  // root: chown, and the JVM side of the attach
  TempDir tmp;
  const std::string reply = "0\nreturn code: 0\n";
  Child jvm(StartFakeJvm(tmp, &reply, kNobody));
  ASSERT_GT(jvm.pid(), 0);
  auto [code, out] = RunCapture({kArcprof, "java", "attach", std::to_string(jvm.pid()), "--agent", kAgent,
                                 "--timeout", "3"});
  EXPECT_EQ(code, 1) << out;
  EXPECT_EQ(out.find("agent loaded"), std::string::npos) << out;
  Subprocess attach({kArcprof, "java", "attach", std::to_string(jvm.pid()), "--agent", kAgent, "--timeout", "3"});
  EXPECT_EQ(attach.Wait(), 1);
  EXPECT_NE(attach.stderr_text().find("owned by uid 65534, not by the JVM's uid 0"), std::string::npos)
      << attach.stderr_text();
  auto [scode, status] = RunCapture({kArcprof, "java", "status", std::to_string(jvm.pid())});
  EXPECT_EQ(scode, 0);
  EXPECT_EQ(status.find("attach listener: running"), std::string::npos) << status;
  RemoveSocket(jvm.pid());
}

TEST(JavaHostile, AttachSocketServedByAnotherProcessIsNotTrusted) {
  ARCPROF_REQUIRE_RECORD_CAPABLE();  // root: chown, and the JVM side of the attach
  TempDir tmp;
  // Right owner (root, the JVM's uid), but the listener is not the JVM.
  const std::string reply = "0\nreturn code: 0\n";
  Child jvm(StartFakeJvm(tmp, &reply, 0, /*served_by_other=*/true));
  ASSERT_GT(jvm.pid(), 0);
  Subprocess attach({kArcprof, "java", "attach", std::to_string(jvm.pid()), "--agent", kAgent, "--timeout", "3"});
  EXPECT_EQ(attach.Wait(), 1);
  EXPECT_NE(attach.stderr_text().find("not by the JVM (pid " + std::to_string(jvm.pid())), std::string::npos)
      << attach.stderr_text();
  RemoveSocket(jvm.pid());
}

TEST(JavaHostile, AgentOthersCanWriteIsRefused) {
  ARCPROF_REQUIRE_RECORD_CAPABLE();  // root: chown, and the JVM side of the attach
  TempDir tmp;
  Child jvm(StartFakeJvm(tmp, nullptr));
  ASSERT_GT(jvm.pid(), 0);
  auto attach_with = [&](const std::string& agent) {
    Subprocess attach({kArcprof, "java", "attach", std::to_string(jvm.pid()), "--agent", agent, "--timeout", "2"});
    EXPECT_EQ(attach.Wait(), 1) << agent;
    return attach.stderr_text();
  };
  namespace fs = std::filesystem;
  // World-writable file.
  const std::string open_file = tmp.path("open.so");
  fs::copy_file(kAgent, open_file);
  chmod(open_file.c_str(), 0666);
  EXPECT_NE(attach_with(open_file).find("is writable by everyone"), std::string::npos);
  // Another user's file.
  const std::string users = tmp.path("users.so");
  fs::copy_file(kAgent, users);
  chmod(users.c_str(), 0644);
  ASSERT_EQ(chown(users.c_str(), kNobody, kNobody), 0);
  EXPECT_NE(attach_with(users).find("owned by uid 65534, not root"), std::string::npos);
  // A good file in a folder its group can write, reached through a symlink.
  const std::string folder = tmp.path("group");
  fs::create_directory(folder);
  chmod(folder.c_str(), 0775);
  fs::copy_file(kAgent, folder + "/agent.so");
  chmod((folder + "/agent.so").c_str(), 0644);
  ASSERT_EQ(symlink((folder + "/agent.so").c_str(), tmp.path("link.so").c_str()), 0);
  EXPECT_NE(attach_with(tmp.path("link.so")).find(folder + " is writable by its group"), std::string::npos);
}

TEST(JavaHostile, AnotherProfilerIsNotAJvm) {
  ARCPROF_REQUIRE_RECORD_CAPABLE();  // root: chown, and the JVM side of the attach
  // A profiler maps libjvm.so and our agent to read their symbols, not to
  // run them (read-only mappings): that process is no JVM.
  TempDir tmp;
  const std::string lib = tmp.path("libjvm.so"), agent = tmp.path("libarcprof_jvmti.so");
  for (const std::string& path : {lib, agent}) {
    std::ofstream(path, std::ios::binary) << std::string(4096, '\0');
  }
  int ready[2];
  ASSERT_EQ(pipe(ready), 0);
  pid_t pid = fork();
  if (pid == 0) {
    for (const std::string& path : {lib, agent}) {
      int fd = open(path.c_str(), O_RDONLY);
      if (fd < 0 || mmap(nullptr, 4096, PROT_READ, MAP_PRIVATE, fd, 0) == MAP_FAILED) _exit(2);
    }
    signal(SIGQUIT, Ignore);
    ssize_t ignored = write(ready[1], "r", 1);
    (void)ignored;
    for (;;) pause();
  }
  Child profiler(pid);
  char c;
  close(ready[1]);
  ASSERT_EQ(read(ready[0], &c, 1), 1);
  close(ready[0]);
  Subprocess status({kArcprof, "java", "status", std::to_string(pid)});
  EXPECT_EQ(status.Wait(), 1);
  EXPECT_NE(status.stderr_text().find("is not a JVM"), std::string::npos) << status.stderr_text();
}

TEST(JavaHostile, SecondArcprofDoesNotTakeTheFirstForAJvm) {
  ARCPROF_REQUIRE_RECORD_CAPABLE();
  TempDir tmp;
  // The first arcprof records a JVM (and so maps libjvm.so for its symbols).
  Subprocess first({kArcprof, "record", "-q", "-o", tmp.path("first.db"), "--", kJava, "-XX:+PreserveFramePointer",
                    "-agentpath:" + kAgent + "=quiet", "-cp", kClasses, "Burn", "6"});
  std::this_thread::sleep_for(std::chrono::seconds(3));
  Subprocess second({kArcprof, "record", "-o", tmp.path("second.db"), "-d", "1", "-p", std::to_string(first.pid())});
  EXPECT_EQ(second.Wait(), 0) << second.stderr_text();
  EXPECT_EQ(second.stderr_text().find("already has the agent"), std::string::npos) << second.stderr_text();
  EXPECT_EQ(second.stderr_text().find("JVM " + std::to_string(first.pid())), std::string::npos)
      << second.stderr_text();
  Profile p = LoadCapture(tmp.path("second.db"));
  EXPECT_EQ(p.counters["java.jvms_attached"], 0);
  EXPECT_EQ(p.counters["java.attach_failed"], 0);
  EXPECT_EQ(first.Wait(), 0) << first.stderr_text();
  for (const ThreadRecord& t : LoadCapture(tmp.path("first.db")).threads) {
    if (t.comm == "main") {
      unlink(("/tmp/jit-" + std::to_string(t.pid) + ".dump").c_str());
      unlink(("/tmp/jit-" + std::to_string(t.pid) + ".arcprof").c_str());
    }
  }
}

TEST(JavaHostile, PlantedJitdumpDoesNotBlockTheAgent) {
  ARCPROF_REQUIRE_RECORD_CAPABLE();
  TempDir tmp;
  // The files are planted before the JVM exists (its pid is the shell's,
  // which execs it once they are there): a continuous daemon on the machine
  // attaches a JVM within a second, and its agent must meet them too.
  const std::string go = tmp.path("go");
  ASSERT_EQ(mkfifo(go.c_str(), 0600), 0);
  Subprocess java({"/bin/sh", "-c", "read x < '" + go + "'; exec " + kJava + " -XX:+PreserveFramePointer -cp '" +
                                        kClasses + "' Burn 30"});
  const pid_t pid = java.pid();
  const std::string planted = "/tmp/jit-" + std::to_string(pid) + ".dump";
  const std::string planted_side = "/tmp/jit-" + std::to_string(pid) + ".arcprof";
  for (const std::string& path : {planted, planted_side}) {
    std::ofstream(path) << "not yours";
    ASSERT_EQ(chown(path.c_str(), kNobody, kNobody), 0);
  }
  std::ofstream(go) << "go\n";
  ASSERT_TRUE(java.WaitForStderr("burn: running", 30)) << java.stderr_text();
  const std::string db = tmp.path("planted.db");
  Subprocess rec({kArcprof, "record", "-o", db, "-d", "4", "-p", std::to_string(pid)});
  EXPECT_EQ(rec.Wait(), 0) << rec.stderr_text();
  // Attached by this arcprof, or by another one first (then its agent wrote
  // into the private folder).
  EXPECT_TRUE(JvmHasAgent(rec.stderr_text(), pid)) << rec.stderr_text();
  // The agent wrote into a private folder; the planted file is left alone.
  glob_t g{};
  const std::string pattern = "/tmp/.arcprof-jit-" + std::to_string(pid) + "-*/jit-" + std::to_string(pid) + ".dump";
  EXPECT_EQ(glob(pattern.c_str(), 0, nullptr, &g), 0) << pattern;
  globfree(&g);
  std::ifstream in(planted);
  std::string content((std::istreambuf_iterator<char>(in)), {});
  EXPECT_EQ(content, "not yours");
  Profile p = LoadCapture(db);
  uint64_t named = 0;
  for (const auto& [stack, count] : Stacks(p, [pid](const ThreadRecord& t) { return static_cast<pid_t>(t.pid) == pid; })) {
    for (const std::string& f : stack) {
      if (f == "Burn.heavy" || f == "Burn.light") {
        named += count;
        break;
      }
    }
  }
  EXPECT_GT(named, 300u);
  java.Signal(SIGKILL);
  java.Wait();
  unlink(planted.c_str());
  unlink(planted_side.c_str());
  std::error_code ec;
  glob_t dirs{};
  if (glob(("/tmp/.arcprof-jit-" + std::to_string(pid) + "-*").c_str(), 0, nullptr, &dirs) == 0) {
    for (size_t i = 0; i < dirs.gl_pathc; ++i) std::filesystem::remove_all(dirs.gl_pathv[i], ec);
  }
  globfree(&dirs);
}

TEST(JavaHostile, JitWarningsForANonJavaProcessAreNotJava) {
  ARCPROF_REQUIRE_RECORD_CAPABLE();
  // A process running code from anonymous executable memory (as any JIT
  // does), with a perf map that another user planted for it.
  int ready[2];
  ASSERT_EQ(pipe(ready), 0);
  pid_t pid = fork();
  if (pid == 0) {
    void* page = mmap(nullptr, 4096, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (page == MAP_FAILED) _exit(2);
    static const unsigned char kSpin[] = {0xeb, 0xfe};  // jmp .
    memcpy(page, kSpin, sizeof(kSpin));
    ssize_t ignored = write(ready[1], "r", 1);
    (void)ignored;
    reinterpret_cast<void (*)()>(page)();
    _exit(0);
  }
  Child spinner(pid);
  char c;
  close(ready[1]);
  ASSERT_EQ(read(ready[0], &c, 1), 1);
  close(ready[0]);
  const std::string map = "/tmp/perf-" + std::to_string(pid) + ".map";
  std::ofstream(map) << "1000 10 planted\n";
  ASSERT_EQ(chown(map.c_str(), kNobody, kNobody), 0);
  TempDir tmp;
  Subprocess rec({kArcprof, "record", "-o", tmp.path("spin.db"), "-d", "1", "-p", std::to_string(pid)});
  EXPECT_EQ(rec.Wait(), 0) << rec.stderr_text();
  unlink(map.c_str());
  const std::string& err = rec.stderr_text();
  const size_t at = err.find("perf-" + std::to_string(pid) + ".map: owned by uid 65534");
  ASSERT_NE(at, std::string::npos) << err;
  const size_t line = err.rfind('\n', at) == std::string::npos ? 0 : err.rfind('\n', at) + 1;
  EXPECT_EQ(err.substr(line, 13), "arcprof: jit:") << err;
  EXPECT_EQ(err.find("java:"), std::string::npos) << err;
}

}  // namespace
}  // namespace arcprof::testing
