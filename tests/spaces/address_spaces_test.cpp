// AddressSpaces' forget pass against stock binaries: which files it closes.
#include "spaces/address_spaces.h"

#include <gtest/gtest.h>
#include <sys/mman.h>

#include <string>

#include "tests/layer_names.h"
#include "tests/symbolize/test_util.h"

namespace arcprof {
namespace {

MappingEvent Exec(const std::string& path, uint64_t start) {
  MappingEvent m;
  m.start = start;
  m.len = 0x1000;
  m.prot = PROT_READ | PROT_EXEC;
  m.path = path;
  return m;
}

// Address spaces over an empty /proc (files open by their path), forgetting
// a process 1 s after its exit.
class AddressSpacesTest : public ::testing::Test {
 protected:
  static AddressSpacesOptions Options(const std::string& proc_root) {
    AddressSpacesOptions options;
    options.proc_root = proc_root;
    options.exited_retention_ns = 1'000'000'000;
    return options;
  }
  testing::TempDir proc_;
  AddressSpaces spaces_{Options(proc_.path())};
  static constexpr uint64_t s = 1'000'000'000;
};

// A file stays open while any remembered process maps it, in any of its
// generations (a fork's child inherits its parent's mappings, and keeps them
// after its exec for samples drained later), and closes with the last.
TEST_F(AddressSpacesTest, ForgetClosesAFileWithItsLastMapping) {
  AddressSpaces& spaces = spaces_;
  spaces.OnExec(100, 1 * s, "parent", /*exited=*/true);
  spaces.OnMmap(100, 1 * s + 1, Exec("/usr/bin/true", 0x10000));
  spaces.OnMmap(100, 1 * s + 2, Exec("/usr/bin/env", 0x20000));
  const auto t = spaces.FindMappedFile(100, 0x10010, 2 * s);
  const auto e = spaces.FindMappedFile(100, 0x20010, 2 * s);
  ASSERT_TRUE(t && e) << "cannot open /usr/bin/true or /usr/bin/env";
  ASSERT_NE(t->file_id, e->file_id);
  // The child inherits both, then execs and maps true again elsewhere.
  spaces.OnFork(100, 101, 2 * s);
  spaces.OnExec(101, 2 * s + 10, "child", /*exited=*/true);
  spaces.OnMmap(101, 2 * s + 20, Exec("/usr/bin/true", 0x30000));
  spaces.OnExit(100, 3 * s);
  spaces.ForgetExited(5 * s);
  EXPECT_FALSE(spaces.KnowsProcess(100));
  EXPECT_EQ(spaces.stats().processes_forgotten, 1u);
  // env: still in the child's first generation.
  EXPECT_TRUE(spaces.FileOpen(t->file_id));
  EXPECT_TRUE(spaces.FileOpen(e->file_id));
  spaces.OnExit(101, 6 * s);
  spaces.ForgetExited(8 * s);
  EXPECT_FALSE(spaces.KnowsProcess(101));
  EXPECT_FALSE(spaces.FileOpen(t->file_id));
  EXPECT_FALSE(spaces.FileOpen(e->file_id));
  EXPECT_EQ(spaces.stats().files_closed, 2u);
  EXPECT_EQ(spaces.open_files(), 0u);
}

// A parent and the child it forked (which inherited its mapping) forgotten in
// one pass: the file closes.
TEST_F(AddressSpacesTest, ForgetClosesTheFileOfAForkedPair) {
  AddressSpaces& spaces = spaces_;
  spaces.OnExec(7, 1 * s, "a", /*exited=*/true);
  spaces.OnMmap(7, 1 * s + 1, Exec("/usr/bin/true", 0x10000));
  spaces.OnFork(7, 8, 1 * s + 5);
  spaces.OnExit(7, 2 * s);
  spaces.OnExit(8, 2 * s);
  spaces.ForgetExited(4 * s);
  EXPECT_EQ(spaces.stats().processes_forgotten, 2u);
  EXPECT_EQ(spaces.open_files(), 0u);
}

}  // namespace
}  // namespace arcprof
