#include "spaces/proc_parse.h"

#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include "tests/layer_names.h"

namespace arcprof::procfs {
namespace {

TEST(ParseMapsLine, FileBackedExecutable) {
  auto e = ParseMapsLine(
      "7f3c1a228000-7f3c1a3bd000 r-xp 00028000 fe:01 1837913                    "
      "/usr/lib/x86_64-linux-gnu/libc.so.6\n");
  ASSERT_TRUE(e.ok()) << e.error().message;
  EXPECT_EQ(e->start, 0x7f3c1a228000u);
  EXPECT_EQ(e->end, 0x7f3c1a3bd000u);
  EXPECT_EQ(e->pgoff, 0x28000u);
  EXPECT_EQ(e->prot, kProtRead | kProtExec);
  EXPECT_FALSE(e->shared);
  EXPECT_EQ(e->dev_major, 0xfeu);
  EXPECT_EQ(e->dev_minor, 0x01u);
  EXPECT_EQ(e->inode, 1837913u);
  EXPECT_EQ(e->path, "/usr/lib/x86_64-linux-gnu/libc.so.6");
  EXPECT_FALSE(e->deleted);
}

TEST(ParseMapsLine, PathWithSpacesAndDeletedSuffix) {
  auto e = ParseMapsLine("00400000-00401000 r-xp 00000000 08:02 42    /tmp/my dir/a b (deleted)");
  ASSERT_TRUE(e.ok()) << e.error().message;
  EXPECT_EQ(e->path, "/tmp/my dir/a b");
  EXPECT_TRUE(e->deleted);
}

TEST(ParseMapsLine, AnonymousAndPseudoPaths) {
  auto anon = ParseMapsLine("7ffd5b5f0000-7ffd5b5f2000 rw-p 00000000 00:00 0");
  ASSERT_TRUE(anon.ok());
  EXPECT_EQ(anon->path, "");
  EXPECT_EQ(anon->prot, kProtRead | kProtWrite);
  auto vdso = ParseMapsLine("7ffd5b5f4000-7ffd5b5f6000 r-xp 00000000 00:00 0                          [vdso]");
  ASSERT_TRUE(vdso.ok());
  EXPECT_EQ(vdso->path, "[vdso]");
  auto shared = ParseMapsLine("7f0000000000-7f0000001000 rwxs 00000000 00:01 7 /memfd:jit (deleted)");
  ASSERT_TRUE(shared.ok());
  EXPECT_TRUE(shared->shared);
  EXPECT_EQ(shared->prot, kProtRead | kProtWrite | kProtExec);
  EXPECT_EQ(shared->path, "/memfd:jit");
  EXPECT_TRUE(shared->deleted);
}

TEST(ParseMapsLine, RejectsMalformed) {
  for (const char* line : {"", "zzzz-1000 r-xp 0 00:00 0", "1000-2000", "1000-2000 rxp 0 00:00 0",
                           "2000-1000 r-xp 00000000 00:00 0", "1000-2000 r-xp 00000000 00:00",
                           "1000-2000 r-xp 00000000 0000 0", "1000-2000 r-xq 00000000 00:00 0",
                           "1000-2000 r-xp 00000000 00:00 0x"}) {
    EXPECT_FALSE(ParseMapsLine(line).ok()) << line;
  }
}

TEST(ParseMaps, SkipsAndCountsBadLines) {
  size_t malformed = 0;
  auto entries = ParseMaps(
      "00400000-00401000 r-xp 00000000 08:02 42 /bin/a\n"
      "garbage\n"
      "\n"
      "00600000-00601000 rw-p 00000000 08:02 42 /bin/a",
      &malformed);
  ASSERT_EQ(entries.size(), 2u);
  EXPECT_EQ(malformed, 1u);
  EXPECT_EQ(entries[1].start, 0x600000u);
  EXPECT_EQ(entries[1].path, "/bin/a");
}

TEST(ParseComm, StripsNewline) {
  EXPECT_EQ(ParseComm("bash\n"), "bash");
  EXPECT_EQ(ParseComm("kworker/0:1H\n"), "kworker/0:1H");
  EXPECT_EQ(ParseComm(""), "");
}

TEST(ParseCmdline, NulsBecomeSpaces) {
  using namespace std::string_view_literals;
  EXPECT_EQ(ParseCmdline("/usr/bin/python3\0-m\0http.server\0"sv), "/usr/bin/python3 -m http.server");
  EXPECT_EQ(ParseCmdline("nginx: worker process\0\0\0"sv), "nginx: worker process");
  EXPECT_EQ(ParseCmdline(""sv), "");
}

TEST(ParseStatus, UidAndNamespacePids) {
  auto s = ParseStatus(
      "Name:\tjava\nUmask:\t0022\nState:\tS (sleeping)\nTgid:\t4242\nNgid:\t0\nPid:\t4242\n"
      "PPid:\t1\nUid:\t1000\t1001\t1000\t1000\nGid:\t1000\t1000\t1000\t1000\n"
      "NSpid:\t4242\t17\n");
  ASSERT_TRUE(s.ok()) << s.error().message;
  EXPECT_EQ(s->name, "java");
  EXPECT_EQ(s->tgid, 4242u);
  EXPECT_EQ(s->uid, 1000u);
  EXPECT_EQ(s->euid, 1001u);
  EXPECT_EQ(s->nspid, (std::vector<uint32_t>{4242, 17}));
}

TEST(ParseStatus, RejectsMissingOrBadUid) {
  EXPECT_FALSE(ParseStatus("Name:\tx\n").ok());
  EXPECT_FALSE(ParseStatus("Uid:\tabc\n").ok());
  EXPECT_FALSE(ParseStatus("Uid:\t1\t2\t3\t4\nNSpid:\t1\tx\n").ok());
}

// Field 22 of /proc/PID/stat, after a name that holds spaces and ')' (a
// process names itself).
TEST(ParseStatStartTicks, ReadsFieldTwentyTwoAfterTheLastParen) {
  const std::string rest =
      " R 11203 11203 18746 0 -1 4194304 99 0 0 0 0 0 0 0 20 0 1 0 3656921 3133440 394 18446744073709551615 0\n";
  auto plain = ParseStatStartTicks("11251 (cat)" + rest);
  ASSERT_TRUE(plain.ok()) << plain.error().message;
  EXPECT_EQ(*plain, 3656921u);
  auto hostile = ParseStatStartTicks("11251 (a) 1 2 3 (x))" + rest);
  ASSERT_TRUE(hostile.ok()) << hostile.error().message;
  EXPECT_EQ(*hostile, 3656921u);
  EXPECT_FALSE(ParseStatStartTicks("11251 cat R 1 2").ok());
  EXPECT_FALSE(ParseStatStartTicks("11251 (cat) R 11203 11203").ok());
  EXPECT_FALSE(ParseStatStartTicks("11251 (cat) R 1 1 1 0 -1 4 9 0 0 0 0 0 0 0 20 0 1 0 -5 3").ok());
  EXPECT_FALSE(ParseStatStartTicks("11251 (cat) R 1 1 1 0 -1 4 9 0 0 0 0 0 0 0 20 0 1 0 36x 3").ok());
  EXPECT_FALSE(ParseStatStartTicks("11251 (cat) R 1 1 1 0 -1 4 9 0 0 0 0 0 0 0 20 0 1 0 99999999999999999999999").ok());
  EXPECT_FALSE(ParseStatStartTicks("").ok());
  // This process's own.
  std::ifstream self("/proc/self/stat");
  std::string text((std::istreambuf_iterator<char>(self)), std::istreambuf_iterator<char>());
  EXPECT_TRUE(ParseStatStartTicks(text).ok()) << text;
}

}  // namespace
}  // namespace arcprof::procfs
