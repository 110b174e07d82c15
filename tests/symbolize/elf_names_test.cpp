// Names as perf and binutils give them: PLT stubs as "name@plt" (checked
// against objdump's labels), symbol versions not part of the name; unnamed
// code keyed by the FDE that covers it (checked against readelf's FDEs), and
// a stripped program's entry point named _start.
#include <elf.h>
#include <fcntl.h>
#include <gelf.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "common/scoped_fd.h"
#include "symbolize/elf_file.h"
#include "symbolize/elf_symbols.h"
#include "symbolize/symbolizer.h"
#include "tests/symbolize/fixture_process.h"
#include "tests/symbolize/test_util.h"
#include "tests/layer_names.h"

namespace arcprof {
namespace {

// stdout of a command line (no shell metacharacters in our arguments).
std::string Output(const std::string& command) {
  std::string text;
  FILE* pipe = popen(command.c_str(), "r");
  if (!pipe) return text;
  char buf[65536];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), pipe)) > 0) text.append(buf, n);
  pclose(pipe);
  return text;
}

// objdump -d labels of PLT stubs: address -> "name@plt".
std::map<uint64_t, std::string> ObjdumpPltLabels(const std::string& path) {
  const std::string text = Output("/usr/bin/objdump -d -j .plt -j .plt.sec '" + path + "' 2>/dev/null");
  std::map<uint64_t, std::string> out;
  static const std::regex kLabel("^([0-9a-f]+) <([^>@]+)@plt>:$");
  std::istringstream lines(text);
  std::string line;
  std::smatch m;
  while (std::getline(lines, line)) {
    if (std::regex_match(line, m, kLabel)) out[std::stoull(m[1], nullptr, 16)] = m[2].str() + "@plt";
  }
  return out;
}

void ExpectPltNamed(const std::string& path, SymbolTable::Section section) {
  const auto labels = ObjdumpPltLabels(path);
  ASSERT_FALSE(labels.empty()) << "objdump shows no PLT stubs in " << path;
  ScopedFd fd(open(path.c_str(), O_RDONLY | O_CLOEXEC));
  ASSERT_TRUE(fd.valid());
  auto elf = OpenElfFd(fd.get());
  ASSERT_TRUE(elf.ok());
  SymbolTable table = SymbolTable::Load(elf->get(), section, elf->get());
  for (const auto& [addr, name] : labels) {
    const ElfSymbol* s = table.Find(addr + 5);  // inside the 16-byte stub
    ASSERT_NE(s, nullptr) << path << " " << name;
    EXPECT_EQ(s->name, name) << path << std::hex << " at 0x" << addr;
    EXPECT_EQ(s->start, addr);
  }
}

TEST(ElfNames, PltStubsOfAProgramAreNamed) {
  ExpectPltNamed(FIXTURE_USELIB, SymbolTable::Section::kSymtab);
}

TEST(ElfNames, PltStubsOfStrippedLibsqlite3AreNamed) {
  // Debian strips it: .dynsym plus the synthesized stubs.
  const std::string lib = "/usr/lib/x86_64-linux-gnu/libsqlite3.so.0";
  if (access(lib.c_str(), R_OK) != 0) GTEST_SKIP() << "libsqlite3 not installed";
  ExpectPltNamed(lib, SymbolTable::Section::kDynsym);
}

TEST(ElfNames, NamesCarryNoSymbolVersion) {
  // glibc's .symtab holds "__libc_start_main@@GLIBC_2.34" and similar.
  const std::string libc = "/usr/lib/x86_64-linux-gnu/libc.so.6";
  ScopedFd fd(open(libc.c_str(), O_RDONLY | O_CLOEXEC));
  ASSERT_TRUE(fd.valid());
  auto elf = OpenElfFd(fd.get());
  ASSERT_TRUE(elf.ok());
  const std::string nm = Output("/usr/bin/nm -D --defined-only " + libc);
  const size_t at = nm.find(" T __libc_start_main@@GLIBC_2.34");
  ASSERT_NE(at, std::string::npos) << "nm shows no versioned __libc_start_main";
  const uint64_t addr = std::stoull(nm.substr(nm.rfind('\n', at) + 1, at), nullptr, 16);
  for (auto section : {SymbolTable::Section::kSymtab, SymbolTable::Section::kDynsym}) {
    SymbolTable table = SymbolTable::Load(elf->get(), section, elf->get());
    if (table.empty()) continue;
    const ElfSymbol* s = table.Find(addr);
    ASSERT_NE(s, nullptr);
    EXPECT_EQ(s->name, "__libc_start_main");
  }
}


// ---- Functions by their FDEs ----

const std::string kGoldFull = std::string(FIXTURE_DIR) + "/gold_full/libfixture_gold.so";
const std::string kGoldStripped = std::string(FIXTURE_DIR) + "/gold_lib/libfixture_gold.so";
const std::string kNofdeStripped = std::string(FIXTURE_DIR) + "/fixture_nofde.stripped";
const std::string kLdSo = "/lib64/ld-linux-x86-64.so.2";
const std::string kLibLlvm = "/usr/lib/x86_64-linux-gnu/libLLVM-14.so.1";

std::unique_ptr<ElfFile> OpenFile(const std::string& path) {
  ScopedFd fd(open(path.c_str(), O_RDONLY | O_CLOEXEC));
  EXPECT_TRUE(fd.valid()) << path;
  return ElfFile::FromFd(std::move(fd), path);
}

// Function symbols with a size, from binutils' nm: start -> (size, name).
std::map<uint64_t, std::pair<uint64_t, std::string>> NmFunctions(const std::string& path) {
  const std::string text = Output("/usr/bin/nm -S --defined-only '" + path + "' 2>/dev/null");
  std::map<uint64_t, std::pair<uint64_t, std::string>> out;
  static const std::regex kLine("^([0-9a-f]+) ([0-9a-f]+) [tT] (\\S+)$");
  std::istringstream lines(text);
  std::string line;
  std::smatch m;
  while (std::getline(lines, line)) {
    if (!std::regex_match(line, m, kLine)) continue;
    const uint64_t size = std::stoull(m[2], nullptr, 16);
    if (size > 0) out[std::stoull(m[1], nullptr, 16)] = {size, m[3].str()};
  }
  return out;
}

// Every FDE's [begin, end) as binutils' readelf decodes .eh_frame.
std::vector<std::pair<uint64_t, uint64_t>> ReadelfFdes(const std::string& path) {
  const std::string text = Output("/usr/bin/readelf --debug-dump=frames '" + path + "' 2>/dev/null");
  std::vector<std::pair<uint64_t, uint64_t>> out;
  static const std::regex kFde(" FDE cie=[0-9a-f]+ pc=([0-9a-f]+)\\.\\.([0-9a-f]+)");
  std::istringstream lines(text);
  std::string line;
  std::smatch m;
  while (std::getline(lines, line)) {
    if (line.find(" FDE ") != std::string::npos && std::regex_search(line, m, kFde))
      out.emplace_back(std::stoull(m[1], nullptr, 16), std::stoull(m[2], nullptr, 16));
  }
  return out;
}

// The type of a section, by name; 0 when absent.
uint32_t SectionType(const std::string& path, const char* wanted) {
  ScopedFd fd(open(path.c_str(), O_RDONLY | O_CLOEXEC));
  auto elf = OpenElfFd(fd.get());
  if (!elf.ok()) return 0;
  size_t shstrndx = 0;
  if (elf_getshdrstrndx(elf->get(), &shstrndx) != 0) return 0;
  for (Elf_Scn* scn = nullptr; (scn = elf_nextscn(elf->get(), scn)) != nullptr;) {
    GElf_Shdr shdr;
    const char* name = gelf_getshdr(scn, &shdr) ? elf_strptr(elf->get(), shstrndx, shdr.sh_name) : nullptr;
    if (name && std::string(name) == wanted) return shdr.sh_type;
  }
  return 0;
}

uint64_t Entry(const std::string& path) { return OpenFile(path)->header().entry; }

TEST(FunctionRanges, GoldLinkedStrippedLibraryHasOneStartPerFunction) {
  // The layout Debian's libLLVM and libclang-cpp have: without reading it,
  // every instruction of an unnamed function was a frame of its own.
  ASSERT_EQ(SectionType(kGoldStripped, ".eh_frame_hdr"), uint32_t{SHT_X86_64_UNWIND});
  ASSERT_EQ(SectionType(kGoldStripped, ".symtab"), 0u) << "not stripped";
  const auto functions = NmFunctions(kGoldFull);
  ASSERT_GE(functions.size(), 5u);
  auto file = OpenFile(kGoldStripped);
  std::set<uint64_t> starts;
  for (const auto& [start, what] : functions) {
    for (uint64_t a = start; a < start + what.first; ++a) {
      const auto found = file->FunctionStart(a);
      ASSERT_TRUE(found.has_value()) << what.second << std::hex << " at 0x" << a;
      ASSERT_EQ(*found, start) << what.second << std::hex << " at 0x" << a;
      starts.insert(*found);
    }
  }
  EXPECT_EQ(starts.size(), functions.size());
}

// Our ranges are readelf's FDEs: each FDE gives its own range at its first
// and last byte, and nothing is covered that no FDE covers.
void ExpectRangesAreReadelfFdes(const std::string& path) {
  const auto fdes = ReadelfFdes(path);
  ASSERT_FALSE(fdes.empty()) << path;
  ScopedFd fd(open(path.c_str(), O_RDONLY | O_CLOEXEC));
  auto elf = OpenElfFd(fd.get());
  ASSERT_TRUE(elf.ok());
  const FunctionRanges ranges = FunctionRanges::Read(elf->get());
  std::map<uint64_t, uint64_t> by_start;
  for (const auto& [begin, end] : fdes)
    if (end > begin) by_start[begin] = std::max(by_start[begin], end);
  EXPECT_EQ(ranges.size(), by_start.size()) << path;
  size_t mismatches = 0;
  uint64_t previous_end = 0;
  for (const auto& [begin, end] : by_start) {
    for (uint64_t a : {begin, end - 1}) {
      const auto found = ranges.Find(a);
      if (!found || found->start != begin || found->end != end) {
        if (++mismatches <= 5) ADD_FAILURE() << path << std::hex << " FDE 0x" << begin << "..0x" << end << " at 0x" << a;
      }
    }
    if (begin > previous_end + 1 && previous_end != 0) {
      // A gap between two FDEs: its last byte belongs to no function.
      EXPECT_FALSE(ranges.Find(begin - 1).has_value()) << path << std::hex << " gap before 0x" << begin;
    }
    previous_end = std::max(previous_end, end);
  }
  EXPECT_EQ(mismatches, 0u) << path;
}

TEST(FunctionRanges, AreReadelfsFdesInGoldLinkedLibrary) { ExpectRangesAreReadelfFdes(kGoldStripped); }
TEST(FunctionRanges, AreReadelfsFdesInLibLlvm) {
  // Debian's libLLVM (gold, SHT_X86_64_UNWIND), ~95,000 FDEs; clang depends on it.
  if (access(kLibLlvm.c_str(), R_OK) != 0) GTEST_SKIP() << kLibLlvm << " not installed";
  ExpectRangesAreReadelfFdes(kLibLlvm);
}
TEST(FunctionRanges, AreReadelfsFdesInLibc) { ExpectRangesAreReadelfFdes("/usr/lib/x86_64-linux-gnu/libc.so.6"); }
TEST(FunctionRanges, AreReadelfsFdesInLdSo) { ExpectRangesAreReadelfFdes(kLdSo); }

TEST(FunctionRanges, CodeWithoutAnFdeHasNoFunctionStart) {
  const auto functions = NmFunctions(FIXTURE_NOFDE);
  std::map<std::string, uint64_t> at;
  for (const auto& [start, what] : functions) at[what.second] = start;
  ASSERT_TRUE(at.count("fixture_with_fde") && at.count("fixture_nofde_first") && at.count("fixture_nofde_second"));
  auto file = OpenFile(kNofdeStripped);
  EXPECT_EQ(file->FunctionStart(at["fixture_with_fde"] + 4), at["fixture_with_fde"]);
  for (const char* name : {"fixture_nofde_first", "fixture_nofde_second"}) {
    // Before: the start of whichever function preceded it.
    EXPECT_EQ(file->FunctionStart(at[name]), std::nullopt) << name;
    EXPECT_EQ(file->FunctionStart(at[name] + 5), std::nullopt) << name;
  }
}

TEST(FunctionRanges, LdSoEntryHasNoFunctionWhenNoFdeCoversIt) {
  // ld.so's _start is assembly without CFI on Debian 12: it was shown as the
  // function before it (_dl_help). readelf decides what is expected.
  const uint64_t entry = Entry(kLdSo);
  ASSERT_NE(entry, 0u);
  std::optional<uint64_t> covering;
  for (const auto& [begin, end] : ReadelfFdes(kLdSo))
    if (entry + 7 >= begin && entry + 7 < end) covering = begin;
  auto file = OpenFile(kLdSo);
  EXPECT_EQ(file->FunctionStart(entry + 7), covering);
  DebugSearchOptions no_debug;
  const ElfFile::Lookup found = file->Find(entry + 7, no_debug);
  // Not a program (no DF_1_PIE): its entry is not named _start from an FDE.
  EXPECT_EQ(found.symbol, nullptr);
}

// ---- The entry point of a stripped program ----

TEST(ElfNames, EntryOfAStrippedProgramIsStart) {
  for (const std::string& path : {kNofdeStripped, std::string("/usr/bin/sort"), std::string("/usr/bin/zstd")}) {
    if (access(path.c_str(), R_OK) != 0) continue;
    auto file = OpenFile(path);
    ASSERT_TRUE(file->header().executable) << path;
    const uint64_t entry = file->header().entry;
    DebugSearchOptions no_debug;
    for (uint64_t a : {entry, entry + 4}) {
      const ElfFile::Lookup found = file->Find(a, no_debug);
      ASSERT_NE(found.symbol, nullptr) << path;
      EXPECT_EQ(found.symbol->name, "_start") << path;
      EXPECT_EQ(found.symbol->start, entry) << path;
      EXPECT_EQ(found.reason, UnknownReason::kNone);
    }
  }
}

TEST(ElfNames, EntryOfALibraryIsNotStart) {
  // libc.so.6 runs as a program (its entry prints the version) and ld.so is
  // the interpreter: neither is a DF_1_PIE program; a library's e_entry may
  // be anything the linker chose.
  DebugSearchOptions no_debug;
  for (const std::string& path : {std::string("/usr/lib/x86_64-linux-gnu/libc.so.6"), kLdSo, kGoldStripped,
                                 std::string(FIXTURE_DIR) + "/stripped_lib/libfixture_lib.so"}) {
    auto file = OpenFile(path);
    EXPECT_FALSE(file->header().executable) << path;
    const uint64_t entry = file->header().entry;
    const ElfFile::Lookup found = file->Find(entry + 4, no_debug);
    if (found.symbol) {
      EXPECT_NE(found.symbol->name, "_start") << path;
    }
  }
}

// ---- The same through the symbolizer, in running processes ----

TEST(ElfNames, StrippedGoldLibraryFunctionsInAProcess) {
  testing::FixtureProcess fixture(FIXTURE_USEGOLD,
                                  {"LD_LIBRARY_PATH=" + std::string(FIXTURE_DIR) + "/gold_lib"});
  ASSERT_TRUE(fixture.ok()) << fixture.error();
  SymbolizerOptions options;
  options.debug_dirs = {};
  AddressSpaces spaces;
  Symbolizer symbolizer(spaces, options);
  spaces.SnapshotProcess(fixture.pid(), 1000);
  std::set<uint64_t> starts;
  for (const char* name : {"gold_local_one", "gold_local_two", "gold_local_three"}) {
    const uint64_t at = fixture.address(name);
    ASSERT_NE(at, 0u) << name;
    const SymbolizedFrame first = symbolizer.ResolveUser(fixture.pid(), at, 2000);
    const SymbolizedFrame inside = symbolizer.ResolveUser(fixture.pid(), at + 9, 2000);
    EXPECT_EQ(first.symbol, "") << name;
    EXPECT_EQ(first.reason, UnknownReason::kStripped) << name;
    EXPECT_EQ(first.address, first.offset) << name;  // the function's own start
    EXPECT_EQ(inside.address, first.address) << name;
    EXPECT_EQ(inside.offset, first.offset + 9) << name;
    starts.insert(first.address);
  }
  EXPECT_EQ(starts.size(), 3u);
  EXPECT_EQ(symbolizer.ResolveUser(fixture.pid(), fixture.address("fixture_gold_exported") + 3, 2000).symbol,
            "fixture_gold_exported");
}

TEST(ElfNames, NoFdeEntryAndLdSoEntryInAProcess) {
  testing::TempDir tmp;
  const std::string binary = tmp.path() + "/fixture_nofde";
  testing::CopyFile(kNofdeStripped, binary);
  testing::FixtureProcess fixture(binary);
  ASSERT_TRUE(fixture.ok()) << fixture.error();
  SymbolizerOptions options;
  options.debug_dirs = {};
  AddressSpaces spaces;
  Symbolizer symbolizer(spaces, options);
  spaces.SnapshotProcess(fixture.pid(), 1000);

  const SymbolizedFrame with = symbolizer.ResolveUser(fixture.pid(), fixture.address("fixture_with_fde") + 5, 2000);
  EXPECT_EQ(with.symbol, "");
  EXPECT_EQ(with.address, with.offset - 5);
  for (const char* name : {"fixture_nofde_first", "fixture_nofde_second"}) {
    const SymbolizedFrame f = symbolizer.ResolveUser(fixture.pid(), fixture.address(name) + 5, 2000);
    EXPECT_EQ(f.symbol, "") << name;
    EXPECT_EQ(f.reason, UnknownReason::kStripped) << name;
    EXPECT_EQ(f.address, 0u) << name << ": a neighbour's start";  // stored by its own offset
    EXPECT_NE(f.offset, 0u) << name;
  }

  const SymbolizedFrame start = symbolizer.ResolveUser(fixture.pid(), fixture.address("entry") + 4, 2000);
  EXPECT_EQ(start.symbol, "_start");
  EXPECT_EQ(start.address, Entry(kNofdeStripped));

  // ld.so's own entry, where its startup code (_start -> _dl_start) runs.
  const uint64_t ldso_entry = Entry(kLdSo);
  std::optional<uint64_t> covering;
  for (const auto& [begin, end] : ReadelfFdes(kLdSo))
    if (ldso_entry + 7 >= begin && ldso_entry + 7 < end) covering = begin;
  ASSERT_NE(fixture.address("ldso_base"), 0u);
  const SymbolizedFrame ld = symbolizer.ResolveUser(fixture.pid(), fixture.address("ldso_base") + ldso_entry + 7, 2000);
  EXPECT_EQ(ld.symbol, "");
  EXPECT_EQ(ld.offset, ldso_entry + 7);
  EXPECT_EQ(ld.address, covering.value_or(0));
}

}  // namespace
}  // namespace arcprof
