#include "symbolize/kallsyms.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "symbolize/symbolizer.h"
#include "tests/symbolize/test_util.h"
#include "tests/layer_names.h"

namespace arcprof {
namespace {

// Unsorted on purpose, with data symbols, an alias and module symbols.
constexpr const char* kFixture =
    "ffffffff81000000 T _stext\n"
    "ffffffff81002000 t do_one_initcall\n"
    "ffffffff81001000 T startup_64\n"
    "ffffffff82000000 D some_data\n"
    "ffffffff81003000 W weak_func\n"
    "ffffffff81003ff0 T __pfx_schedule\n"
    "ffffffff81004000 T schedule\n"
    "ffffffff81004000 t schedule_alias_local\n"
    "ffffffff81005000 b bss_thing\n"
    "ffffffff81006000 T _etext\n"
    "ffffffffc0a01000 t ext4_read\t[ext4]\n"
    "ffffffffc0a01400 t ext4_write\t[ext4]\n"
    "ffffffffc0b00000 T nf_hook\t[nf_tables]\n";

TEST(KernelSymbols, ParsesSortsAndFilters) {
  auto table = KernelSymbols::Parse(kFixture);
  ASSERT_TRUE(table.ok()) << table.error().message;
  EXPECT_FALSE(table->addresses_hidden());
  // 12 lines minus data/bss, minus the duplicate address.
  EXPECT_EQ(table->size(), 10u);

  std::optional<KernelSymbol> s = table->Find(0xffffffff81001234);
  ASSERT_TRUE(s);
  EXPECT_EQ(s->name, "startup_64");
  EXPECT_EQ(s->module, "vmlinux");
  EXPECT_EQ(s->start, 0xffffffff81001000u);
  EXPECT_EQ(s->end, 0xffffffff81002000u);

  s = table->Find(0xffffffff81004010);
  ASSERT_TRUE(s);
  EXPECT_EQ(s->name, "schedule");  // the global alias wins

  s = table->Find(0xffffffff81003ff8);
  ASSERT_TRUE(s);
  EXPECT_EQ(s->name, "__pfx_schedule");

  s = table->Find(0xffffffff81003100);
  ASSERT_TRUE(s);
  EXPECT_EQ(s->name, "weak_func");

  // Data symbols are not text: the address belongs to the previous function.
  s = table->Find(0xffffffff81005800);
  ASSERT_TRUE(s);
  EXPECT_EQ(s->name, "schedule");

  s = table->Find(0xffffffffc0a01404);
  ASSERT_TRUE(s);
  EXPECT_EQ(s->name, "ext4_write");
  EXPECT_EQ(s->module, "ext4");
  // The last symbol of a module is capped, not extended to the next module.
  EXPECT_EQ(s->end, 0xffffffffc0a01400u + KernelSymbols::kMaxTailExtent);
  EXPECT_FALSE(table->Find(0xffffffffc0a01400 + KernelSymbols::kMaxTailExtent));

  s = table->Find(0xffffffffc0b00010);
  ASSERT_TRUE(s);
  EXPECT_EQ(s->module, "nf_tables");

  EXPECT_FALSE(table->Find(0xffffffff80000000));
}

TEST(KernelSymbols, AllZeroAddressesMeanHidden) {
  auto table = KernelSymbols::Parse(
      "0000000000000000 T _stext\n0000000000000000 T schedule\n0000000000000000 t x\t[mod]\n");
  ASSERT_TRUE(table.ok());
  EXPECT_TRUE(table->addresses_hidden());
  EXPECT_FALSE(table->Find(0));
  EXPECT_EQ(table->size(), 0u);
}

TEST(KernelSymbols, MalformedLinesAreSkippedButNotEverything) {
  auto table = KernelSymbols::Parse("nonsense\nffffffff81000000 T ok\nffffffff81000010 Tbad\n");
  ASSERT_TRUE(table.ok());
  EXPECT_EQ(table->size(), 1u);
  EXPECT_EQ(table->malformed_lines(), 2u);
  EXPECT_FALSE(KernelSymbols::Parse("").ok());
  EXPECT_FALSE(KernelSymbols::Parse("hello world\n").ok());
}

TEST(SymbolizerKernel, ResolvesFromAKallsymsFile) {
  testing::TempDir dir;
  const std::string path = dir.path() + "/kallsyms";
  std::ofstream(path) << kFixture;
  SymbolizerOptions options;
  options.kallsyms_path = path;
  AddressSpaces spaces;
  Symbolizer symbolizer(spaces, options);
  SymbolizedFrame f = symbolizer.ResolveKernel(0xffffffffc0a01010);
  EXPECT_EQ(f.module, "ext4");
  EXPECT_EQ(f.symbol, "ext4_read");
  EXPECT_EQ(f.address, 0xffffffffc0a01000u);
  EXPECT_EQ(f.kind, FrameKind::kKernel);
  EXPECT_EQ(f.reason, UnknownReason::kNone);

  f = symbolizer.ResolveKernel(0x1234);
  EXPECT_EQ(f.kind, FrameKind::kKernel);
  EXPECT_EQ(f.reason, UnknownReason::kKernelUnknown);
  EXPECT_EQ(f.symbol, "");

  const uint64_t hits_before = symbolizer.stats().cache_hits;
  for (int i = 0; i < 10; ++i) symbolizer.ResolveKernel(0xffffffffc0a01010);
  EXPECT_EQ(symbolizer.stats().cache_hits, hits_before + 10);
}

TEST(SymbolizerKernel, LiveKernelSchedule) {
  std::ifstream kallsyms("/proc/kallsyms");
  ASSERT_TRUE(kallsyms) << "cannot read /proc/kallsyms";
  std::string line;
  uint64_t schedule = 0;
  while (std::getline(kallsyms, line)) {
    std::istringstream fields(line);
    std::string addr, type, name;
    fields >> addr >> type >> name;
    if (name == "schedule" && (type == "T" || type == "t")) {
      schedule = std::stoull(addr, nullptr, 16);
      break;
    }
  }
  ASSERT_NE(line, "") << "no 'schedule' in /proc/kallsyms";
  if (schedule == 0) GTEST_SKIP() << "kernel.kptr_restrict hides kernel addresses from this user";
  AddressSpaces spaces;
  Symbolizer symbolizer(spaces);
  for (uint64_t addr : {schedule, schedule + 8}) {
    SymbolizedFrame f = symbolizer.ResolveKernel(addr);
    EXPECT_EQ(f.symbol, "schedule");
    EXPECT_EQ(f.module, "vmlinux");
    EXPECT_EQ(f.address, schedule);
    EXPECT_EQ(f.kind, FrameKind::kKernel);
  }
}

// The live kernel's table, compact: a daemon holds it for days. The former
// layout kept the whole kallsyms text plus 48 bytes a symbol (~11 MB on a
// 6.x kernel); the table now holds the kept names and 14 bytes a symbol
// (~4.8 MB here), under half of that with room to spare. Every symbol still
// resolves to itself.
TEST(KernelSymbols, LiveTableIsCompact) {
  std::ifstream in("/proc/kallsyms");
  ASSERT_TRUE(in) << "cannot read /proc/kallsyms";
  std::stringstream buffer;
  buffer << in.rdbuf();
  const std::string text = buffer.str();
  auto table = KernelSymbols::Parse(text);
  ASSERT_TRUE(table.ok()) << table.error().message;
  if (table->addresses_hidden()) GTEST_SKIP() << "kernel.kptr_restrict hides kernel addresses from this user";
  ASSERT_GT(table->size(), 10000u);
  const size_t former = text.size() + 48 * table->size();
  EXPECT_LT(table->bytes(), former / 2) << table->size() << " symbols, " << text.size() << " bytes of text";
  // Spot checks over the whole table: a symbol's own start finds it.
  std::istringstream lines(text);
  std::string line;
  size_t checked = 0;
  for (size_t i = 0; std::getline(lines, line); ++i) {
    if (i % 997 != 0) continue;
    std::istringstream fields(line);
    std::string addr, type, name;
    fields >> addr >> type >> name;
    if (type != "T" || name.starts_with("__pfx_") || name.starts_with("__cfi_")) continue;
    auto s = table->Find(std::stoull(addr, nullptr, 16));
    ASSERT_TRUE(s) << line;
    EXPECT_EQ(s->start, std::stoull(addr, nullptr, 16)) << line;
    EXPECT_GT(s->end, s->start);
    EXPECT_FALSE(s->name.empty());
    ++checked;
  }
  EXPECT_GT(checked, 10u);
}

}  // namespace
}  // namespace arcprof
