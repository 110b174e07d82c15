// AtomicFile against outputs that are not regular files, and the temporary
// files of writers that died (issue: `record -o /dev/null` replaced the
// machine's /dev/null with a regular file).
#include "store/atomic_file.h"

#include <gtest/gtest.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include "store/capture_store.h"
#include "tests/model/test_profiles.h"

#include "tests/layer_names.h"

namespace arcprof {
namespace {

using testing::SampleProfile;
using testing::TempDir;

bool IsCharDevice(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0 && S_ISCHR(st.st_mode);
}

// A private node with the numbers of /dev/null: what is done to it would have
// been done to the machine's /dev/null. Needs CAP_MKNOD (root).
std::string MakeNullNode(const TempDir& dir) {
  const std::string node = dir.File("null");
  if (::mknod(node.c_str(), S_IFCHR | 0666, makedev(1, 3)) != 0) return "";
  return node;
}

#define REQUIRE_NODE(node)                                                          \
  do {                                                                              \
    if ((node).empty()) {                                                           \
      const char* ci = getenv("CI");                                                \
      if (ci && std::string(ci) == "true") FAIL() << "mknod failed (CI=true)";      \
      GTEST_SKIP() << "mknod needs root (CAP_MKNOD)";                               \
    }                                                                               \
  } while (0)

TEST(AtomicFileTargets, ADeviceIsWrittenDirectlyNeverReplaced) {
  TempDir dir;
  const std::string node = MakeNullNode(dir);
  REQUIRE_NODE(node);
  auto file = AtomicFile::Create(node, AtomicFile::Streams::kWriteDirectly);
  ASSERT_TRUE(file.ok()) << file.error().message;
  EXPECT_TRUE(file->direct());
  ASSERT_TRUE(file->Write("flame graph bytes").ok());
  ASSERT_TRUE(file->Commit().ok());
  EXPECT_TRUE(IsCharDevice(node));
  EXPECT_EQ(dir.Entries(), std::vector<std::string>{"null"});  // no temporary file
}

TEST(AtomicFileTargets, CapturesRefuseDevices) {
  TempDir dir;
  const std::string node = MakeNullNode(dir);
  REQUIRE_NODE(node);
  auto file = AtomicFile::Create(node);
  ASSERT_FALSE(file.ok());
  EXPECT_NE(file.error().message.find("a character device"), std::string::npos) << file.error().message;
  auto written = WriteCapture(node, SampleProfile());
  ASSERT_FALSE(written.ok());
  EXPECT_TRUE(IsCharDevice(node));
  EXPECT_EQ(dir.Entries(), std::vector<std::string>{"null"});
}

TEST(AtomicFileTargets, AFifoIsWrittenToItsReader) {
  TempDir dir;
  const std::string fifo = dir.File("pipe");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  // Without a reader: an error at once, not a hang.
  auto lonely = AtomicFile::Create(fifo, AtomicFile::Streams::kWriteDirectly);
  ASSERT_FALSE(lonely.ok());
  EXPECT_NE(lonely.error().message.find("no process reads the FIFO"), std::string::npos);
  std::string received;
  std::thread reader([&] {
    std::ifstream in(fifo);
    received.assign(std::istreambuf_iterator<char>(in), {});
  });
  Result<AtomicFile> file = lonely.error();
  for (int i = 0; i < 200 && !file.ok(); ++i) {  // until the reader has opened its end
    file = AtomicFile::Create(fifo, AtomicFile::Streams::kWriteDirectly);
    if (!file.ok()) usleep(10 * 1000);
  }
  ASSERT_TRUE(file.ok()) << file.error().message;
  ASSERT_TRUE(file->Write("a;b 1\n").ok());
  ASSERT_TRUE(file->Commit().ok());
  reader.join();
  EXPECT_EQ(received, "a;b 1\n");
  struct stat st {};
  ASSERT_EQ(::lstat(fifo.c_str(), &st), 0);
  EXPECT_TRUE(S_ISFIFO(st.st_mode));
}

TEST(AtomicFileTargets, ADirectoryIsRefused) {
  TempDir dir;
  std::filesystem::create_directory(dir.File("out"));
  auto file = AtomicFile::Create(dir.File("out"), AtomicFile::Streams::kWriteDirectly);
  ASSERT_FALSE(file.ok());
  EXPECT_NE(file.error().message.find("is a directory"), std::string::npos);
}

pid_t DeadPid() {
  const pid_t pid = fork();
  if (pid == 0) _exit(0);
  waitpid(pid, nullptr, 0);
  return pid;
}

TEST(AtomicFileLeftovers, TemporaryFilesOfDeadWritersAreRemoved) {
  TempDir dir;
  const pid_t dead = DeadPid();
  const std::string dead_ours = ".arcprof.db.tmp." + std::to_string(dead) + ".0.12345";
  const std::string dead_other_user = ".x.svg.tmp." + std::to_string(dead) + ".1.999";
  const std::string alive = ".y.db.tmp.1.0.42";  // pid 1 runs
  const std::string mine = ".z.db.tmp." + std::to_string(getpid()) + ".7.7";
  for (const std::string& name : {dead_ours, dead_other_user, alive, mine}) {
    std::ofstream(dir.File(name)) << "partial";
  }
  if (geteuid() == 0) ASSERT_EQ(::chown(dir.File(dead_other_user).c_str(), 65534, 65534), 0);
  std::filesystem::create_directory(dir.File(".w.db.tmp." + std::to_string(dead) + ".0.1"));
  ASSERT_TRUE(WriteCapture(dir.File("arcprof.db"), SampleProfile()).ok());
  const auto entries = dir.Entries();
  auto has = [&](const std::string& name) {
    return std::find(entries.begin(), entries.end(), name) != entries.end();
  };
  EXPECT_FALSE(has(dead_ours));
  EXPECT_EQ(has(dead_other_user), geteuid() == 0);  // not ours: kept
  EXPECT_TRUE(has(alive));
  EXPECT_TRUE(has(mine));
  EXPECT_TRUE(has(".w.db.tmp." + std::to_string(dead) + ".0.1"));  // not a regular file
  EXPECT_TRUE(has("arcprof.db"));
}

}  // namespace
}  // namespace arcprof
