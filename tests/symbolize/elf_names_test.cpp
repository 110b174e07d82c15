// Names as perf and binutils give them: PLT stubs as "name@plt" (checked
// against objdump's labels), symbol versions not part of the name.
#include <fcntl.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstdio>
#include <map>
#include <regex>
#include <sstream>
#include <string>

#include "common/scoped_fd.h"
#include "symbolize/elf_symbols.h"
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

}  // namespace
}  // namespace arcprof
