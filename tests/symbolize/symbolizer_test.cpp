// The symbolizer against real processes: fixture programs in every layout,
// stripped and debug-file variants, deleted binaries, the vDSO, plus
// synthetic event streams.
#include "symbolize/symbolizer.h"

#include <elf.h>
#include <signal.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "spaces/proc_parse.h"
#include "tests/symbolize/fixture_process.h"
#include "tests/symbolize/test_util.h"
#include "tests/layer_names.h"

namespace arcprof {
namespace {

using testing::FixtureProcess;
using testing::TempDir;

const std::vector<std::string> kMainFunctions = {"fixture_alpha", "fixture_beta", "fixture_gamma",
                                                 "fixture_static_delta"};

std::string Canonical(const std::string& path) { return std::filesystem::canonical(path).string(); }

SymbolizerOptions NoDebugDirs() {
  SymbolizerOptions options;
  options.debug_dirs = {};
  return options;
}

// A pid above pid_max (2^22): never a live process.
constexpr uint32_t kFakePid = 50'000'000;

struct Layout {
  const char* name;
  const char* path;
  bool fixed_address;  // non-PIE: symbol addresses equal runtime addresses
};

class FixtureLayout : public ::testing::TestWithParam<Layout> {};

TEST_P(FixtureLayout, ResolvesKnownFunctions) {
  const Layout& layout = GetParam();
  FixtureProcess fixture(layout.path);
  ASSERT_TRUE(fixture.ok()) << fixture.error();
  AddressSpaces spaces;
  Symbolizer symbolizer(spaces, NoDebugDirs());
  spaces.SnapshotProcess(fixture.pid(), 1000);

  std::vector<int64_t> biases;
  for (const std::string& name : kMainFunctions) {
    const uint64_t addr = fixture.address(name);
    ASSERT_NE(addr, 0u) << name;
    for (uint64_t probe : {addr, addr + 5}) {
      SymbolizedFrame f = symbolizer.ResolveUser(fixture.pid(), probe, 2000);
      EXPECT_EQ(f.symbol, name) << layout.name << " at +" << (probe - addr)
                                << " reason " << UnknownReasonName(f.reason);
      EXPECT_EQ(f.module, Canonical(layout.path));
      EXPECT_EQ(f.kind, FrameKind::kNative);
      EXPECT_EQ(f.reason, UnknownReason::kNone);
      EXPECT_EQ(f.offset - f.address, probe - addr);
    }
    SymbolizedFrame f = symbolizer.ResolveUser(fixture.pid(), addr, 2000);
    biases.push_back(static_cast<int64_t>(addr - f.address));
  }
  // One load bias for the whole binary; zero when it was linked at a fixed address.
  for (int64_t bias : biases) EXPECT_EQ(bias, biases[0]);
  if (layout.fixed_address) EXPECT_EQ(biases[0], 0);
  else EXPECT_NE(biases[0], 0);
}

INSTANTIATE_TEST_SUITE_P(
    Layouts, FixtureLayout,
    ::testing::Values(Layout{"nopie", FIXTURE_NOPIE, true}, Layout{"pie", FIXTURE_PIE, false},
                      Layout{"odd", FIXTURE_ODD, true}, Layout{"noseparate", FIXTURE_NOSEPARATE, false},
                      Layout{"exported", FIXTURE_EXPORTED, false}),
    [](const ::testing::TestParamInfo<Layout>& info) { return std::string(info.param.name); });

TEST(Symbolizer, OddLoadAddressIsWhereTheLinkerPutIt) {
  FixtureProcess fixture(FIXTURE_ODD);
  ASSERT_TRUE(fixture.ok()) << fixture.error();
  EXPECT_GE(fixture.address("fixture_alpha"), 0x13570000u);
  EXPECT_LT(fixture.address("fixture_alpha"), 0x14000000u);  // within the first MBs of it
}

TEST(Symbolizer, SharedLibrary) {
  const std::string lib_dir = std::filesystem::path(FIXTURE_LIB).parent_path().string();
  FixtureProcess fixture(FIXTURE_USELIB, {"LD_LIBRARY_PATH=" + lib_dir});
  ASSERT_TRUE(fixture.ok()) << fixture.error();
  AddressSpaces spaces;
  Symbolizer symbolizer(spaces, NoDebugDirs());
  spaces.SnapshotProcess(fixture.pid(), 1000);
  for (const std::string name : {"fixture_lib_alpha", "fixture_lib_static"}) {
    const uint64_t addr = fixture.address(name);
    ASSERT_NE(addr, 0u);
    SymbolizedFrame f = symbolizer.ResolveUser(fixture.pid(), addr + 5, 2000);
    EXPECT_EQ(f.symbol, name);
    EXPECT_EQ(f.module, Canonical(FIXTURE_LIB));
    EXPECT_EQ(f.address + 5, f.offset);
  }
}

// With a symbol budget smaller than any table, each file's tables are given
// back when another file is used and read again when needed: the names stay
// right, only the work is repeated.
TEST(Symbolizer, SymbolBudgetReleasesAndReloadsTables) {
  const std::string lib_dir = std::filesystem::path(FIXTURE_LIB).parent_path().string();
  FixtureProcess lib_user(FIXTURE_USELIB, {"LD_LIBRARY_PATH=" + lib_dir});
  ASSERT_TRUE(lib_user.ok()) << lib_user.error();
  FixtureProcess pie(FIXTURE_PIE);
  ASSERT_TRUE(pie.ok()) << pie.error();
  SymbolizerOptions options = NoDebugDirs();
  options.symbol_budget_bytes = 1;
  AddressSpaces spaces;
  Symbolizer symbolizer(spaces, options);
  spaces.SnapshotProcess(lib_user.pid(), 1000);
  spaces.SnapshotProcess(pie.pid(), 1000);
  const uint64_t in_lib = lib_user.address("fixture_lib_alpha");
  const uint64_t in_pie = pie.address("fixture_alpha");
  ASSERT_NE(in_lib, 0u);
  ASSERT_NE(in_pie, 0u);
  for (uint64_t i = 1; i <= 4; ++i) {  // new addresses: no cached answers
    EXPECT_EQ(symbolizer.ResolveUser(lib_user.pid(), in_lib + i, 2000).symbol, "fixture_lib_alpha");
    EXPECT_EQ(symbolizer.ResolveUser(pie.pid(), in_pie + i, 2000).symbol, "fixture_alpha");
  }
  EXPECT_GE(symbolizer.stats().symbol_tables_released, 6u);
  // One file's tables are held at most (the one in use).
  EXPECT_GT(symbolizer.stats().symbol_bytes, 0u);

  AddressSpaces roomy_spaces;
  Symbolizer roomy(roomy_spaces, NoDebugDirs());
  roomy_spaces.SnapshotProcess(lib_user.pid(), 1000);
  roomy_spaces.SnapshotProcess(pie.pid(), 1000);
  for (uint64_t i = 1; i <= 4; ++i) {
    roomy.ResolveUser(lib_user.pid(), in_lib + i, 2000);
    roomy.ResolveUser(pie.pid(), in_pie + i, 2000);
  }
  EXPECT_EQ(roomy.stats().symbol_tables_released, 0u);
  EXPECT_GT(roomy.stats().symbol_bytes, symbolizer.stats().symbol_bytes);
}

// A daemon releases the interned names past a budget between windows:
// names are right again afterwards (cached answers dropped, tables reread).
TEST(Symbolizer, ReleasedNamesAreInternedAgainOnTheNextLookup) {
  FixtureProcess pie(FIXTURE_PIE);
  ASSERT_TRUE(pie.ok()) << pie.error();
  AddressSpaces spaces;
  Symbolizer symbolizer(spaces, NoDebugDirs());
  spaces.SnapshotProcess(pie.pid(), 1000);
  const uint64_t alpha = pie.address("fixture_alpha");
  ASSERT_NE(alpha, 0u);
  EXPECT_EQ(symbolizer.ResolveUser(pie.pid(), alpha + 1, 2000).symbol, "fixture_alpha");
  EXPECT_GT(symbolizer.stats().name_bytes, 0u);
  EXPECT_EQ(symbolizer.ReleaseNames(1u << 20), 0u);  // under the budget: nothing
  EXPECT_EQ(symbolizer.ReleaseNames(0), 1u);
  EXPECT_EQ(symbolizer.stats().name_bytes, 0u);
  EXPECT_EQ(symbolizer.stats().names_released, 1u);
  // The same address (a cached answer before) and a new one.
  EXPECT_EQ(symbolizer.ResolveUser(pie.pid(), alpha + 1, 2000).symbol, "fixture_alpha");
  EXPECT_EQ(symbolizer.ResolveUser(pie.pid(), alpha + 2, 2000).symbol, "fixture_alpha");
  EXPECT_GT(symbolizer.stats().name_bytes, 0u);
}

// Two processes of one binary: the second's lookup of an offset the first
// resolved is answered by file and offset (other load address, same frame),
// and a release of the name pool drops those answers too.
TEST(Symbolizer, SecondProcessOfABinaryReusesTheFirstsAnswers) {
  FixtureProcess first(FIXTURE_PIE);
  ASSERT_TRUE(first.ok()) << first.error();
  FixtureProcess second(FIXTURE_PIE);
  ASSERT_TRUE(second.ok()) << second.error();
  AddressSpaces spaces;
  Symbolizer symbolizer(spaces, NoDebugDirs());
  spaces.SnapshotProcess(first.pid(), 1000);
  spaces.SnapshotProcess(second.pid(), 1000);
  const uint64_t a1 = first.address("fixture_alpha"), a2 = second.address("fixture_alpha");
  ASSERT_NE(a1, 0u);
  ASSERT_NE(a2, 0u);
  const SymbolizedFrame f1 = symbolizer.ResolveUser(first.pid(), a1 + 3, 2000);
  EXPECT_EQ(f1.symbol, "fixture_alpha");
  EXPECT_EQ(symbolizer.stats().file_cache_hits, 0u);
  const SymbolizedFrame f2 = symbolizer.ResolveUser(second.pid(), a2 + 3, 2000);
  EXPECT_EQ(symbolizer.stats().file_cache_hits, 1u);
  EXPECT_EQ(f2.symbol, "fixture_alpha");
  EXPECT_EQ(f2.module, f1.module);
  EXPECT_EQ(f2.offset, f1.offset);
  EXPECT_EQ(f2.address, f1.address);
  EXPECT_EQ(f2.kind, f1.kind);
  EXPECT_EQ(f2.reason, UnknownReason::kNone);
  EXPECT_EQ(symbolizer.ReleaseNames(0), 1u);
  EXPECT_EQ(symbolizer.ResolveUser(second.pid(), a2 + 4, 2000).symbol, "fixture_alpha");
  EXPECT_EQ(symbolizer.ResolveUser(first.pid(), a1 + 4, 2000).symbol, "fixture_alpha");
  EXPECT_EQ(symbolizer.stats().file_cache_hits, 2u);
}

TEST(Symbolizer, StrippedSharedLibraryFallsBackToDynsym) {
  const std::string lib = std::string(FIXTURE_DIR) + "/stripped_lib/libfixture_lib.so";
  FixtureProcess fixture(FIXTURE_USELIB, {"LD_LIBRARY_PATH=" + std::string(FIXTURE_DIR) + "/stripped_lib"});
  ASSERT_TRUE(fixture.ok()) << fixture.error();
  AddressSpaces spaces;
  Symbolizer symbolizer(spaces, NoDebugDirs());
  spaces.SnapshotProcess(fixture.pid(), 1000);

  SymbolizedFrame exported = symbolizer.ResolveUser(fixture.pid(), fixture.address("fixture_lib_alpha"), 2000);
  EXPECT_EQ(exported.symbol, "fixture_lib_alpha");
  EXPECT_EQ(exported.module, Canonical(lib));

  SymbolizedFrame local = symbolizer.ResolveUser(fixture.pid(), fixture.address("fixture_lib_static"), 2000);
  EXPECT_EQ(local.symbol, "");
  EXPECT_EQ(local.reason, UnknownReason::kStripped);
  EXPECT_EQ(local.kind, FrameKind::kNative);
  EXPECT_EQ(local.module, Canonical(lib));
  // The unnamed function is keyed by its start from .eh_frame_hdr (where the
  // symbol would start), and the instruction keeps its own offset.
  EXPECT_EQ(local.address, local.offset);
  SymbolizedFrame inside =
      symbolizer.ResolveUser(fixture.pid(), fixture.address("fixture_lib_static") + 5, 2000);
  EXPECT_EQ(inside.reason, UnknownReason::kStripped);
  EXPECT_EQ(inside.address, local.address);
  EXPECT_EQ(inside.offset, local.offset + 5);
}

TEST(Symbolizer, CppNamesAreDemangled) {
  FixtureProcess fixture(FIXTURE_CPP);
  ASSERT_TRUE(fixture.ok()) << fixture.error();
  AddressSpaces spaces;
  Symbolizer symbolizer(spaces, NoDebugDirs());
  spaces.SnapshotProcess(fixture.pid(), 1000);
  EXPECT_EQ(symbolizer.ResolveUser(fixture.pid(), fixture.address("cpp_alpha") + 5, 2000).symbol,
            "fixture_ns::cpp_alpha(int)");
  EXPECT_EQ(symbolizer.ResolveUser(fixture.pid(), fixture.address("widget_spin") + 5, 2000).symbol,
            "fixture_ns::Widget::Spin(double)");
}

// Runs `binary` (a copy placed by the caller) and resolves the exported and the
// local function with the given options.
// Frames copied out: the views of a SymbolizedFrame die with its Symbolizer.
struct OwnedFrame {
  explicit OwnedFrame(const SymbolizedFrame& f)
      : module(f.module), symbol(f.symbol), kind(f.kind), reason(f.reason), offset(f.offset) {}
  std::string module;
  std::string symbol;
  FrameKind kind;
  UnknownReason reason;
  uint64_t offset;
};
struct StrippedResult {
  OwnedFrame exported;
  OwnedFrame local;
};
StrippedResult ResolveStripped(const std::string& binary, const SymbolizerOptions& options) {
  FixtureProcess fixture(binary);
  EXPECT_TRUE(fixture.ok()) << fixture.error();
  AddressSpaces spaces;
  Symbolizer symbolizer(spaces, options);
  spaces.SnapshotProcess(fixture.pid(), 1000);
  return {OwnedFrame(symbolizer.ResolveUser(fixture.pid(), fixture.address("fixture_alpha") + 5, 2000)),
          OwnedFrame(symbolizer.ResolveUser(fixture.pid(), fixture.address("fixture_static_delta") + 5, 2000))};
}

TEST(Symbolizer, StrippedWithoutDebugInfo) {
  TempDir tmp;
  const std::string binary = tmp.path() + "/bin/fixture_stripped";
  testing::CopyFile(std::string(FIXTURE_DIR) + "/fixture_exported.stripped", binary);
  SymbolizerOptions options;
  options.debug_dirs = {tmp.path() + "/empty_debug"};
  StrippedResult r = ResolveStripped(binary, options);
  EXPECT_EQ(r.exported.symbol, "fixture_alpha");  // exported: .dynsym names it
  EXPECT_EQ(r.exported.reason, UnknownReason::kNone);
  EXPECT_EQ(r.local.symbol, "");
  EXPECT_EQ(r.local.reason, UnknownReason::kStripped);
  EXPECT_EQ(r.local.kind, FrameKind::kNative);
  EXPECT_EQ(r.local.module, binary);
  EXPECT_NE(r.local.offset, 0u);
}

TEST(Symbolizer, StrippedWithBuildIdDebugDir) {
  TempDir tmp;
  const std::string binary = tmp.path() + "/bin/fixture_stripped";
  testing::CopyFile(std::string(FIXTURE_DIR) + "/fixture_exported.stripped", binary);
  const std::string build_id = testing::ReadelfBuildId(binary);
  ASSERT_EQ(build_id.size(), 40u) << "readelf -n gave no sha1 build-id";
  testing::CopyFile(std::string(FIXTURE_DIR) + "/fixture_exported.debug",
                    tmp.path() + "/debug/.build-id/" + build_id.substr(0, 2) + "/" +
                        build_id.substr(2) + ".debug");
  SymbolizerOptions options;
  options.debug_dirs = {tmp.path() + "/nothing_here", tmp.path() + "/debug"};
  StrippedResult r = ResolveStripped(binary, options);
  EXPECT_EQ(r.exported.symbol, "fixture_alpha");
  EXPECT_EQ(r.local.symbol, "fixture_static_delta");
  EXPECT_EQ(r.local.reason, UnknownReason::kNone);
}

TEST(Symbolizer, DebugLinkNextToTheBinary) {
  TempDir tmp;
  const std::string binary = tmp.path() + "/bin/fixture_linked";
  testing::CopyFile(std::string(FIXTURE_DIR) + "/fixture_exported.linked", binary);
  testing::CopyFile(std::string(FIXTURE_DIR) + "/fixture_exported.debug",
                    tmp.path() + "/bin/fixture_exported.debug");
  StrippedResult r = ResolveStripped(binary, NoDebugDirs());
  EXPECT_EQ(r.local.symbol, "fixture_static_delta");
}

TEST(Symbolizer, DebugLinkInDotDebug) {
  TempDir tmp;
  const std::string binary = tmp.path() + "/bin/fixture_linked";
  testing::CopyFile(std::string(FIXTURE_DIR) + "/fixture_exported.linked", binary);
  testing::CopyFile(std::string(FIXTURE_DIR) + "/fixture_exported.debug",
                    tmp.path() + "/bin/.debug/fixture_exported.debug");
  StrippedResult r = ResolveStripped(binary, NoDebugDirs());
  EXPECT_EQ(r.local.symbol, "fixture_static_delta");
}

TEST(Symbolizer, DebugLinkUnderDebugDirMirror) {
  TempDir tmp;
  const std::string binary = tmp.path() + "/bin/fixture_linked";
  testing::CopyFile(std::string(FIXTURE_DIR) + "/fixture_exported.linked", binary);
  testing::CopyFile(std::string(FIXTURE_DIR) + "/fixture_exported.debug",
                    tmp.path() + "/debug" + tmp.path() + "/bin/fixture_exported.debug");
  SymbolizerOptions options;
  options.debug_dirs = {tmp.path() + "/debug"};
  StrippedResult r = ResolveStripped(binary, options);
  EXPECT_EQ(r.local.symbol, "fixture_static_delta");
}

TEST(Symbolizer, DebugLinkCrcWithoutBuildId) {
  TempDir tmp;
  const std::string binary = tmp.path() + "/bin/fixture_linked";
  const std::string debug = tmp.path() + "/bin/.debug/fixture_nobuildid.debug";
  testing::CopyFile(std::string(FIXTURE_DIR) + "/fixture_nobuildid.linked", binary);
  testing::CopyFile(std::string(FIXTURE_DIR) + "/fixture_nobuildid.debug", debug);
  ASSERT_EQ(testing::ReadelfBuildId(binary), "");

  EXPECT_EQ(ResolveStripped(binary, NoDebugDirs()).local.symbol, "fixture_static_delta");

  // A different file under the linked name: the CRC rejects it.
  std::ofstream(debug, std::ios::app) << "tampered";
  StrippedResult tampered = ResolveStripped(binary, NoDebugDirs());
  EXPECT_EQ(tampered.local.reason, UnknownReason::kStripped);
  EXPECT_EQ(tampered.exported.symbol, "fixture_alpha");

  SymbolizerOptions no_crc = NoDebugDirs();
  no_crc.verify_debuglink_crc = false;
  EXPECT_EQ(ResolveStripped(binary, no_crc).local.symbol, "fixture_static_delta");
}

TEST(Symbolizer, DeletedBinaryStillResolves) {
  TempDir tmp;
  const std::string binary = tmp.path() + "/fixture_deleted";
  testing::CopyFile(FIXTURE_PIE, binary);
  FixtureProcess fixture(binary);
  ASSERT_TRUE(fixture.ok()) << fixture.error();
  AddressSpaces spaces;
  Symbolizer symbolizer(spaces, NoDebugDirs());
  spaces.SnapshotProcess(fixture.pid(), 1000);
  const uint32_t pid = static_cast<uint32_t>(fixture.pid());
  fixture.Kill();
  spaces.OnExit(pid, 1500);
  std::filesystem::remove(binary);
  ASSERT_FALSE(std::filesystem::exists(binary));

  const uint64_t loaded_before = symbolizer.stats().elf_files_loaded;
  for (const std::string& name : kMainFunctions) {
    SymbolizedFrame f = symbolizer.ResolveUser(pid, fixture.address(name) + 5, 1200);
    EXPECT_EQ(f.symbol, name);
    EXPECT_EQ(f.module, binary);
  }
  EXPECT_EQ(symbolizer.stats().elf_files_loaded, loaded_before + 1);  // parsed lazily, after deletion
  ASSERT_NE(spaces.Process(pid), nullptr);
  EXPECT_EQ(spaces.Process(pid)->comm, "fixture_deleted");
}

TEST(Symbolizer, MmapEventsOfAProcessThatIsGoneAndDeleted) {
  TempDir tmp;
  const std::string binary = tmp.path() + "/fixture_events";
  testing::CopyFile(FIXTURE_NOPIE, binary);
  FixtureProcess fixture(binary);
  ASSERT_TRUE(fixture.ok()) << fixture.error();
  const uint32_t pid = static_cast<uint32_t>(fixture.pid());
  std::ifstream maps_file("/proc/" + std::to_string(pid) + "/maps");
  std::string maps((std::istreambuf_iterator<char>(maps_file)), std::istreambuf_iterator<char>());

  AddressSpaces spaces;
  Symbolizer symbolizer(spaces, NoDebugDirs());
  spaces.OnExec(pid, 100, "fixture_events");
  for (const procfs::MapsEntry& e : procfs::ParseMaps(maps)) {
    if (!(e.prot & procfs::kProtExec)) continue;
    MappingEvent m;
    m.start = e.start;
    m.len = e.end - e.start;
    m.pgoff = e.pgoff;
    m.prot = PROT_READ | PROT_EXEC;
    m.maj = e.dev_major;
    m.min = e.dev_minor;
    m.ino = e.inode;
    m.path = e.path.empty() ? "//anon" : e.path;
    spaces.OnMmap(pid, 110, m);
  }
  fixture.Kill();
  spaces.OnExit(pid, 500);
  std::filesystem::remove(binary);

  SymbolizedFrame f = symbolizer.ResolveUser(pid, fixture.address("fixture_beta") + 5, 200);
  EXPECT_EQ(f.symbol, "fixture_beta");
  EXPECT_EQ(f.module, binary);
  EXPECT_EQ(f.address, fixture.address("fixture_beta"));  // non-PIE: vaddr == runtime address
  EXPECT_EQ(spaces.Process(pid)->comm, "fixture_events");
}

TEST(Symbolizer, ProcessesOfOneBinaryShareOneFile) {
  FixtureProcess first(FIXTURE_PIE);
  FixtureProcess second(FIXTURE_PIE);
  ASSERT_TRUE(first.ok() && second.ok());
  AddressSpaces spaces;
  Symbolizer symbolizer(spaces, NoDebugDirs());
  spaces.SnapshotProcess(first.pid(), 1000);
  spaces.SnapshotProcess(second.pid(), 1000);
  const uint64_t loaded_before = symbolizer.stats().elf_files_loaded;
  EXPECT_EQ(symbolizer.ResolveUser(first.pid(), first.address("fixture_alpha"), 2000).symbol, "fixture_alpha");
  EXPECT_EQ(symbolizer.ResolveUser(second.pid(), second.address("fixture_beta"), 2000).symbol, "fixture_beta");
  EXPECT_EQ(symbolizer.stats().elf_files_loaded, loaded_before + 1);

  auto a = spaces.FindMappedFile(first.pid(), first.address("fixture_alpha"), 2000);
  auto b = spaces.FindMappedFile(second.pid(), second.address("fixture_alpha"), 2000);
  ASSERT_TRUE(a && b);
  EXPECT_EQ(a->fd, b->fd);
  EXPECT_GE(a->fd, 0);
  EXPECT_EQ(a->path, Canonical(FIXTURE_PIE));
  EXPECT_EQ(a->build_id, testing::ReadelfBuildId(FIXTURE_PIE));
}

TEST(Symbolizer, RepeatedLookupsHitTheCache) {
  FixtureProcess fixture(FIXTURE_PIE);
  ASSERT_TRUE(fixture.ok()) << fixture.error();
  AddressSpaces spaces;
  Symbolizer symbolizer(spaces, NoDebugDirs());
  spaces.SnapshotProcess(fixture.pid(), 1000);
  const uint64_t addr = fixture.address("fixture_gamma") + 3;
  symbolizer.ResolveUser(fixture.pid(), addr, 2000);
  const SymbolizerStats before = symbolizer.stats();
  for (int i = 0; i < 1000; ++i) {
    ASSERT_EQ(symbolizer.ResolveUser(fixture.pid(), addr, 2000 + i).symbol, "fixture_gamma");
  }
  EXPECT_EQ(symbolizer.stats().lookups, before.lookups + 1000);
  EXPECT_EQ(symbolizer.stats().cache_hits, before.cache_hits + 1000);
}

TEST(Symbolizer, ProcessInfoAndThreadNames) {
  FixtureProcess fixture(FIXTURE_PIE);
  ASSERT_TRUE(fixture.ok()) << fixture.error();
  const uint32_t pid = static_cast<uint32_t>(fixture.pid());
  AddressSpaces spaces;
  Symbolizer symbolizer(spaces, NoDebugDirs());
  spaces.SnapshotAllProcesses(1000);
  const ProcessInfo* info = spaces.Process(pid);
  ASSERT_NE(info, nullptr);
  EXPECT_EQ(info->pid, pid);
  EXPECT_EQ(info->comm, "fixture_pie");
  EXPECT_EQ(info->cmdline, FIXTURE_PIE);
  EXPECT_EQ(info->uid, getuid());
  EXPECT_EQ(info->ns_pid, pid);  // same pid namespace as the test
  EXPECT_EQ(spaces.ThreadName(pid, pid), "fixture_pie");

  spaces.OnComm(pid, pid + 1, 1100, "worker-1");
  EXPECT_EQ(spaces.ThreadName(pid, pid + 1), "worker-1");
  EXPECT_EQ(spaces.ThreadName(pid, pid + 2), "fixture_pie");
  spaces.OnComm(pid, pid, 1200, "renamed");
  EXPECT_EQ(spaces.Process(pid)->comm, "renamed");

  // Our own process is in the snapshot too.
  ASSERT_NE(spaces.Process(getpid()), nullptr);
  EXPECT_EQ(spaces.Process(kFakePid), nullptr);
}

TEST(Symbolizer, UnknownReasons) {
  FixtureProcess fixture(FIXTURE_PIE);
  ASSERT_TRUE(fixture.ok()) << fixture.error();
  AddressSpaces spaces;
  Symbolizer symbolizer(spaces, NoDebugDirs());
  // Never snapshotted: resolved through a lazy snapshot of the live process.
  EXPECT_EQ(symbolizer.ResolveUser(fixture.pid(), fixture.address("fixture_alpha"), 2000).symbol,
            "fixture_alpha");

  SymbolizedFrame unmapped = symbolizer.ResolveUser(fixture.pid(), 0x10, 2000);
  EXPECT_EQ(unmapped.reason, UnknownReason::kUnmapped);
  EXPECT_EQ(unmapped.kind, FrameKind::kUnknown);
  EXPECT_EQ(unmapped.offset, 0x10u);

  SymbolizedFrame gone = symbolizer.ResolveUser(kFakePid, 0x401000, 2000);
  EXPECT_EQ(gone.reason, UnknownReason::kNoProcess);
  EXPECT_EQ(gone.symbol, "");
  // Cached, and still right after the pid appears through events.
  EXPECT_EQ(symbolizer.ResolveUser(kFakePid, 0x401000, 2001).reason, UnknownReason::kNoProcess);
  MappingEvent anon;
  anon.start = 0x400000;
  anon.len = 0x2000;
  anon.prot = PROT_READ | PROT_EXEC;
  anon.path = "//anon";
  spaces.OnMmap(kFakePid, 2100, anon);
  SymbolizedFrame jit = symbolizer.ResolveUser(kFakePid, 0x401000, 2200);
  EXPECT_EQ(jit.reason, UnknownReason::kJitNoMap);
  EXPECT_EQ(jit.kind, FrameKind::kJit);
  EXPECT_EQ(jit.module, "JITCODE");
}

TEST(Symbolizer, AnonymousExecutableMemoryIsJit) {
  AddressSpaces spaces;
  Symbolizer symbolizer(spaces, NoDebugDirs());
  spaces.OnExec(kFakePid, 100, "jitter");
  const std::vector<std::string> names = {"//anon", "", "[anon:v8 code]", "/memfd:jit-cache (deleted)"};
  for (size_t i = 0; i < names.size(); ++i) {
    MappingEvent m;
    m.start = 0x10000000 + i * 0x100000;
    m.len = 0x1000;
    m.prot = PROT_READ | PROT_EXEC;
    m.path = names[i];
    spaces.OnMmap(kFakePid, 110, m);
    SymbolizedFrame f = symbolizer.ResolveUser(kFakePid, m.start + 0x10, 200);
    EXPECT_EQ(f.kind, FrameKind::kJit) << names[i];
    EXPECT_EQ(f.reason, UnknownReason::kJitNoMap) << names[i];
    EXPECT_EQ(f.module, "JITCODE") << names[i];
  }
  // Non-executable mappings are not code.
  MappingEvent data;
  data.start = 0x20000000;
  data.len = 0x1000;
  data.prot = PROT_READ | PROT_WRITE;
  data.path = "//anon";
  spaces.OnMmap(kFakePid, 110, data);
  EXPECT_EQ(symbolizer.ResolveUser(kFakePid, 0x20000010, 200).reason, UnknownReason::kUnmapped);

  // The JIT hook: a per-process source names the code.
  class FixedSource : public JitSymbolSource {
   public:
    std::optional<JitSymbol> Find(uint64_t addr, uint64_t) override {
      if (addr >= 0x10000000 && addr < 0x10000100) return JitSymbol{"LazyCompile:*hot", 0x10000000};
      return std::nullopt;
    }
  };
  uint32_t factory_calls = 0;
  symbolizer.SetJitSymbolSourceFactory([&](const ProcessInfo& process) -> std::unique_ptr<JitSymbolSource> {
    ++factory_calls;
    EXPECT_EQ(process.comm, "jitter");
    return std::make_unique<FixedSource>();
  });
  SymbolizedFrame named = symbolizer.ResolveUser(kFakePid, 0x10000010, 200);
  EXPECT_EQ(named.symbol, "LazyCompile:*hot");
  EXPECT_EQ(named.address, 0x10000000u);
  EXPECT_EQ(named.kind, FrameKind::kJit);
  EXPECT_EQ(named.reason, UnknownReason::kNone);
  EXPECT_EQ(symbolizer.ResolveUser(kFakePid, 0x10000200, 200).reason, UnknownReason::kJitNoMap);
  EXPECT_EQ(factory_calls, 1u);
}

// Interpreted frames' method names: interned once per name the source gives
// (a view of it is remembered by address), the latest name of a reused
// Method* at its time, and right again after the name pool is released.
TEST(Symbolizer, InterpretedMethodNamesSurviveANamesRelease) {
  AddressSpaces spaces;
  Symbolizer symbolizer(spaces, NoDebugDirs());
  spaces.OnExec(kFakePid, 100, "jvm");
  class Methods : public JitSymbolSource {
   public:
    std::optional<JitSymbol> Find(uint64_t, uint64_t) override { return std::nullopt; }
    std::optional<std::string_view> MethodName(uint64_t method, uint64_t t_ns) override {
      if (method != 0x1000) return std::nullopt;
      return t_ns < 500 ? std::string_view(first_) : std::string_view(second_);
    }
    std::string first_ = "Hot.alpha", second_ = "Hot.beta";  // stable for the source's life
  };
  symbolizer.SetJitSymbolSourceFactory(
      [](const ProcessInfo&) -> std::unique_ptr<JitSymbolSource> { return std::make_unique<Methods>(); });
  EXPECT_EQ(symbolizer.InterpretedMethodName(kFakePid, 0x1000, 200), "Hot.alpha");
  EXPECT_EQ(symbolizer.InterpretedMethodName(kFakePid, 0x1000, 300), "Hot.alpha");
  EXPECT_EQ(symbolizer.InterpretedMethodName(kFakePid, 0x1000, 600), "Hot.beta");
  EXPECT_EQ(symbolizer.InterpretedMethodName(kFakePid, 0x2000, 600), std::nullopt);
  EXPECT_GT(symbolizer.ReleaseNames(0), 0u);
  EXPECT_EQ(symbolizer.stats().name_bytes, 0u);
  // The pool's strings are gone: the name is interned again, not a view
  // remembered from before the release (it would dangle).
  const std::string again(symbolizer.InterpretedMethodName(kFakePid, 0x1000, 200).value_or(""));
  EXPECT_EQ(again, "Hot.alpha");
  EXPECT_GT(symbolizer.stats().name_bytes, 0u);
  EXPECT_EQ(symbolizer.InterpretedMethodName(kFakePid, 0x1000, 700), "Hot.beta");
}

TEST(Symbolizer, TimeVersionedMappingsThroughEvents) {
  AddressSpaces spaces;
  Symbolizer symbolizer(spaces, NoDebugDirs());
  spaces.OnExec(kFakePid, 100, "versions");
  MappingEvent m;
  m.start = 0x400000;
  m.len = 0x10000;
  m.prot = PROT_READ | PROT_EXEC;
  m.path = FIXTURE_NOPIE;
  spaces.OnMmap(kFakePid, 200, m);
  m.path = std::string(FIXTURE_PIE) + " (deleted)";
  spaces.OnMmap(kFakePid, 300, m);

  EXPECT_EQ(symbolizer.ResolveUser(kFakePid, 0x400100, 250).module, FIXTURE_NOPIE);
  EXPECT_EQ(symbolizer.ResolveUser(kFakePid, 0x400100, 350).module, FIXTURE_PIE);
  EXPECT_EQ(symbolizer.ResolveUser(kFakePid, 0x400100, 250).module, FIXTURE_NOPIE);  // cached per time range
  EXPECT_EQ(symbolizer.ResolveUser(kFakePid, 0x400100, 150).module, FIXTURE_NOPIE);  // raced its mmap

  spaces.OnFork(kFakePid, kFakePid + 1, 400);
  EXPECT_EQ(symbolizer.ResolveUser(kFakePid + 1, 0x400100, 450).module, FIXTURE_PIE);
  EXPECT_EQ(spaces.Process(kFakePid + 1)->comm, "versions");

  spaces.OnExec(kFakePid, 500, "next");
  EXPECT_EQ(symbolizer.ResolveUser(kFakePid, 0x400100, 500 + 25'000'000).reason,
            UnknownReason::kUnmapped);
  EXPECT_EQ(symbolizer.ResolveUser(kFakePid, 0x400100, 350).module, FIXTURE_PIE);
  EXPECT_EQ(symbolizer.ResolveUser(kFakePid + 1, 0x400100, 550).module, FIXTURE_PIE);
}

// Finds a dynamic symbol of this process's vDSO by walking its section
// headers by hand (independent of libelf).
uint64_t VdsoSymbolAddress(const char* wanted) {
  const auto base = static_cast<uintptr_t>(getauxval(AT_SYSINFO_EHDR));
  if (base == 0) return 0;
  const auto* ehdr = reinterpret_cast<const Elf64_Ehdr*>(base);
  const auto* shdrs = reinterpret_cast<const Elf64_Shdr*>(base + ehdr->e_shoff);
  const auto* phdrs = reinterpret_cast<const Elf64_Phdr*>(base + ehdr->e_phoff);
  uint64_t load_vaddr = 0;
  for (int i = 0; i < ehdr->e_phnum; ++i) {
    if (phdrs[i].p_type == PT_LOAD) {
      load_vaddr = phdrs[i].p_vaddr - phdrs[i].p_offset;
      break;
    }
  }
  for (int i = 0; i < ehdr->e_shnum; ++i) {
    if (shdrs[i].sh_type != SHT_DYNSYM) continue;
    const auto* syms = reinterpret_cast<const Elf64_Sym*>(base + shdrs[i].sh_offset);
    const char* strtab = reinterpret_cast<const char*>(base + shdrs[shdrs[i].sh_link].sh_offset);
    for (size_t j = 0; j < shdrs[i].sh_size / sizeof(Elf64_Sym); ++j) {
      if (std::strcmp(strtab + syms[j].st_name, wanted) == 0) return base + syms[j].st_value - load_vaddr;
    }
  }
  return 0;
}

TEST(Symbolizer, Vdso) {
  const uint64_t addr = VdsoSymbolAddress("__vdso_clock_gettime");
  if (addr == 0) GTEST_SKIP() << "this process has no vDSO with __vdso_clock_gettime";
  AddressSpaces spaces;
  Symbolizer symbolizer(spaces, NoDebugDirs());
  spaces.SnapshotProcess(getpid(), 1000);
  for (uint64_t probe : {addr, addr + 4}) {
    SymbolizedFrame f = symbolizer.ResolveUser(getpid(), probe, 2000);
    EXPECT_EQ(f.symbol, "__vdso_clock_gettime");
    EXPECT_EQ(f.module, "[vdso]");
    EXPECT_EQ(f.kind, FrameKind::kNative);
  }
}

}  // namespace
}  // namespace arcprof

namespace arcprof {
namespace {

// MMAP2 records that carry a build-id have no device/inode: the build-id
// keys the cache and guards against a path that now names another file.
TEST(Symbolizer, BuildIdOnlyMmapEvents) {
  FixtureProcess fixture(FIXTURE_NOPIE);  // only for the function addresses (non-PIE: fixed)
  ASSERT_TRUE(fixture.ok()) << fixture.error();
  const uint64_t alpha = fixture.address("fixture_alpha");
  AddressSpaces spaces;
  Symbolizer symbolizer(spaces, NoDebugDirs());
  spaces.OnExec(kFakePid, 100, "by_build_id");
  MappingEvent m;
  m.start = 0x400000;
  m.len = 0x100000;
  m.pgoff = 0;
  m.prot = PROT_READ | PROT_EXEC;
  m.path = FIXTURE_NOPIE;
  m.build_id = testing::ReadelfBuildId(FIXTURE_NOPIE);
  ASSERT_EQ(m.build_id.size(), 40u);
  spaces.OnMmap(kFakePid, 110, m);
  EXPECT_EQ(symbolizer.ResolveUser(kFakePid, alpha + 5, 200).symbol, "fixture_alpha");

  spaces.OnExec(kFakePid + 2, 100, "stale");
  m.build_id = std::string(40, 'e');
  spaces.OnMmap(kFakePid + 2, 110, m);
  SymbolizedFrame stale = symbolizer.ResolveUser(kFakePid + 2, alpha + 5, 200);
  EXPECT_EQ(stale.reason, UnknownReason::kFileUnavailable);
  EXPECT_EQ(stale.module, FIXTURE_NOPIE);
}

}  // namespace
}  // namespace arcprof
