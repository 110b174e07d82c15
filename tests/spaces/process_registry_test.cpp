// The process registry against a fake /proc: what fork and exec events read.
#include "spaces/process_registry.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "tests/layer_names.h"
#include "tests/symbolize/test_util.h"

namespace arcprof {
namespace {

void WriteProc(const std::string& root, uint32_t pid, const std::string& leaf, const std::string& text) {
  const std::string dir = root + "/" + std::to_string(pid);
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/" + leaf) << text;
}

std::string Status(uint32_t uid, const std::string& nspid) {
  return "Name:\tx\nUid:\t" + std::to_string(uid) + "\t" + std::to_string(uid) + "\t" + std::to_string(uid) +
         "\t" + std::to_string(uid) + "\nNSpid:\t" + nspid + "\n";
}

TEST(ProcessRegistry, ForkCopiesTheParentWithoutReadingProc) {
  testing::TempDir proc;
  WriteProc(proc.path(), 100, "maps", "");
  WriteProc(proc.path(), 100, "comm", "parent\n");
  WriteProc(proc.path(), 100, "cmdline", std::string("parent\0--flag\0", 14));
  WriteProc(proc.path(), 100, "status", Status(1000, "100"));
  WriteProc(proc.path(), 100, "stat",
            "100 (par ent) S 1 100 100 0 -1 4194560 1 0 0 0 0 0 0 0 20 0 1 0 123456 1 2 3\n");
  ProcessRegistry registry(proc.path());
  ASSERT_TRUE(registry.Snapshot(100).has_value());
  EXPECT_EQ(registry.Find(100)->info.start_ns, StartNsOfTicks(123456));
  EXPECT_EQ(StartNsOfTicks(123456), uint64_t{123456} * 1'000'000'000 / static_cast<uint64_t>(sysconf(_SC_CLK_TCK)));
  // pid 101 has no /proc directory: everything it knows comes from its
  // parent, and its start from the event.
  registry.OnFork(100, 101, 7'000'000'000);
  const ProcessRegistry::Record* child = registry.Find(101);
  ASSERT_NE(child, nullptr);
  EXPECT_EQ(child->info.start_ns, 7'000'000'000u);
  EXPECT_EQ(child->info.cmdline, "parent --flag");
  EXPECT_EQ(child->info.uid, 1000u);
  EXPECT_EQ(child->info.ns_pid, 101u);  // the parent is in the initial namespace
  EXPECT_EQ(child->info.comm, "parent");

  // Exec reads the new command line, not the status (uid and namespace stay).
  WriteProc(proc.path(), 101, "cmdline", std::string("child\0", 6));
  WriteProc(proc.path(), 101, "status", Status(0, "101"));
  registry.OnExec(101, "child");
  EXPECT_EQ(registry.Find(101)->info.cmdline, "child");
  EXPECT_EQ(registry.Find(101)->info.uid, 1000u);
  EXPECT_EQ(registry.Find(101)->info.start_ns, 7'000'000'000u);  // the same process

  // An exec whose exit is already known reads nothing.
  WriteProc(proc.path(), 101, "cmdline", std::string("late\0", 5));
  registry.OnExec(101, "late", /*exited=*/true);
  EXPECT_EQ(registry.Find(101)->info.comm, "late");
  EXPECT_EQ(registry.Find(101)->info.cmdline, "");
}

TEST(ProcessRegistry, ChildOfAContainerProcessReadsItsStatusAtExec) {
  testing::TempDir proc;
  WriteProc(proc.path(), 200, "maps", "");
  WriteProc(proc.path(), 200, "comm", "init\n");
  WriteProc(proc.path(), 200, "cmdline", std::string("init\0", 5));
  WriteProc(proc.path(), 200, "status", Status(0, "200\t1"));
  ProcessRegistry registry(proc.path());
  ASSERT_TRUE(registry.Snapshot(200).has_value());
  EXPECT_EQ(registry.Find(200)->info.ns_pid, 1u);
  registry.OnFork(200, 201, 0);
  EXPECT_EQ(registry.Find(201)->info.ns_pid, 0u);  // not known without reading
  WriteProc(proc.path(), 201, "cmdline", std::string("java\0", 5));
  WriteProc(proc.path(), 201, "status", Status(0, "201\t7"));
  registry.OnExec(201, "java");
  EXPECT_EQ(registry.Find(201)->info.ns_pid, 7u);
}

// The one bounded reader of small files: the start of a file, a whole one,
// never through a symbolic link.
TEST(ReadFiles, BoundedAndNotThroughSymbolicLinks) {
  testing::TempDir dir;
  const std::string file = dir.path() + "/f", link = dir.path() + "/l";
  std::ofstream(file) << std::string(100000, 'x');
  auto start = ReadFileStart(file, 70000);
  ASSERT_TRUE(start.ok());
  EXPECT_EQ(start->size(), 70000u);
  auto whole = ReadWholeFile(file);
  ASSERT_TRUE(whole.ok());
  EXPECT_EQ(whole->size(), 100000u);
  std::filesystem::create_symlink(file, link);
  EXPECT_FALSE(ReadWholeFile(link).ok());
  EXPECT_FALSE(ReadFileStart(link, 10).ok());
  auto proc = ReadWholeFile("/proc/self/status");
  ASSERT_TRUE(proc.ok());
  EXPECT_NE(proc->find("Pid:"), std::string::npos);
}

}  // namespace
}  // namespace arcprof
