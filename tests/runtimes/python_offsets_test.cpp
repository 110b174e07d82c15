// The per-version CPython offsets (runtimes/python) against each installed
// version's own headers, and 3.13's _Py_DebugOffsets against both.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <sstream>
#include <string>

#include "common/scoped_fd.h"
#include "runtimes/python/python_runtime.h"
#include "symbolize/elf_symbols.h"
#include "tests/loader/subprocess.h"
#include "tests/runtimes/python_interpreters.h"

namespace arcprof::testing {
namespace {

using runtimes::PythonOffsets;

TEST(PythonOffsets, MatchTheHeaders) {
  int checked = 0;
  for (const Interpreter& py : Interpreters()) {
    if (py.include.empty()) continue;  // not installed: nothing to check it against
    SCOPED_TRACE(py.label);
    char tmpl[] = "/tmp/arcprof-pyprobe-XXXXXX";
    const int fd = mkstemp(tmpl);
    ASSERT_GE(fd, 0);
    close(fd);
    const std::string exe = tmpl;
    // Debian keeps pyconfig.h under the multiarch include directory.
    const std::vector<std::string> cc = {ARCPROF_CC, "-w", "-I" + py.include, "-I" + py.include + "/internal",
                                         "-I/usr/include/x86_64-linux-gnu/python" + std::to_string(py.major) + "." +
                                             std::to_string(py.minor),
                                         ARCPROF_PY_PROBE, "-o", exe};
    auto [cc_status, cc_out] = RunCapture(cc);
    ASSERT_EQ(cc_status, 0) << cc_out;
    auto [status, printed] = RunCapture({exe});
    unlink(exe.c_str());
    EXPECT_EQ(status, 0) << "co_name and co_qualname no longer follow co_filename";
    auto table = runtimes::PythonOffsetsFor(py.major, py.minor);
    ASSERT_TRUE(table.has_value());
    EXPECT_EQ(printed, runtimes::PythonOffsetsText(*table));
    ++checked;
  }
  if (checked == 0) GTEST_SKIP() << "no CPython 2.7 or 3.6+ headers installed (python3.11-dev, or pyenv)";
}

std::vector<uint8_t> Unhex(const std::string& hex) {
  std::vector<uint8_t> out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) out.push_back(static_cast<uint8_t>(std::stoul(hex.substr(i, 2), nullptr, 16)));
  return out;
}

// Line numbers from each version's line table (co_lnotab, 3.10's
// co_linetable, 3.11+'s location table) as CPython itself gives them, for
// every instruction offset of a few code objects.
TEST(PythonLines, AgreeWithTheInterpreter) {
  int checked = 0;
  for (const Interpreter& py : Interpreters()) {
    if (py.binary.empty()) continue;
    SCOPED_TRACE(py.label);
    auto [status, printed] = RunCapture({py.binary, std::string(ARCPROF_PY_PROGRAMS) + "/line_table.py"});
    ASSERT_EQ(status, 0) << printed;
    std::istringstream lines(printed);
    std::string line;
    int codes = 0;
    while (std::getline(lines, line)) {
      std::istringstream in(line);
      int first = 0;
      std::string hex, pair;
      in >> first >> hex;
      const std::vector<uint8_t> table = Unhex(hex);
      int offsets = 0;
      while (in >> pair) {
        const size_t colon = pair.find(':');
        const int64_t off = std::stoll(pair.substr(0, colon));
        const int want = std::stoi(pair.substr(colon + 1));
        EXPECT_EQ(runtimes::PythonLine(py.major, py.minor, table, first, off), want) << "offset " << off << " of " << line;
        ++offsets;
      }
      EXPECT_GE(offsets, 8);
      ++codes;
    }
    EXPECT_EQ(codes, 3);
    ++checked;
  }
  if (checked == 0) GTEST_SKIP() << "no CPython interpreter installed";
}

// A table of any bytes: an answer, within its bounds, never a crash.
TEST(PythonLines, CorruptTablesAreBounded) {
  const std::vector<uint8_t> junk = {0xff, 0xff, 0xff, 0xff, 0xf0, 0x7f, 0x7f, 0x7f, 0x7f, 0x7f, 0x7f, 0x7f};
  for (auto [major, minor] : {std::pair{2u, 7u}, {3u, 6u}, {3u, 9u}, {3u, 10u}, {3u, 12u}}) {
    for (int64_t addr : {-1, 0, 2, 1000}) (void)runtimes::PythonLine(major, minor, junk, 5, addr);
    EXPECT_EQ(runtimes::PythonLine(major, minor, {}, 5, 4), 5);
  }
}

// 3.13 documents its offsets in _PyRuntime: read from the library's file as
// arcprof reads them, they must say what the headers say.
TEST(PythonOffsets, DebugOffsetsAgreeWithTheHeaders) {
  const std::string prefix = PyenvPrefix(13);
  const std::string lib = prefix + "/lib/libpython3.13.so.1.0";
  if (prefix.empty() || access(lib.c_str(), R_OK) != 0) GTEST_SKIP() << "no CPython 3.13 (pyenv) installed";
  ScopedFd fd(open(lib.c_str(), O_RDONLY | O_CLOEXEC));
  ASSERT_TRUE(fd.valid());
  auto elf = OpenElfFd(fd.get());
  ASSERT_TRUE(elf.ok());
  auto info = ReadElfHeaderInfo(elf->get());
  ASSERT_TRUE(info.ok());
  auto runtime = FindSymbolValue(elf->get(), "_PyRuntime");
  ASSERT_TRUE(runtime.has_value());
  auto at = VaddrToFileOffset(info->loads, *runtime);
  ASSERT_TRUE(at.has_value());
  std::vector<uint8_t> bytes(71 * 8);
  ASSERT_EQ(pread(fd.get(), bytes.data(), bytes.size(), static_cast<off_t>(*at)), static_cast<ssize_t>(bytes.size()));
  auto debug = runtimes::PythonOffsetsFromDebug(bytes, 13);
  ASSERT_TRUE(debug.has_value()) << "no _Py_DebugOffsets at _PyRuntime";
  EXPECT_EQ(runtimes::PythonOffsetsText(*debug), runtimes::PythonOffsetsText(*runtimes::PythonOffsetsFor(3, 13)));
}

// A cookie with another version, a free-threaded build, offsets too large to
// be read in one frame read, or no cookie at all: not trusted.
TEST(PythonOffsets, DebugOffsetsThatDoNotFitAreRefused) {
  std::vector<uint8_t> bytes(71 * 8, 0);
  EXPECT_FALSE(runtimes::PythonOffsetsFromDebug(bytes, 13).has_value());
  memcpy(bytes.data(), "xdebugpy", 8);
  uint64_t w[71] = {};
  memcpy(w, "xdebugpy", 8);
  w[1] = 0x030d00f0;
  w[37] = 16;  // co_qualname, 16 bytes after co_filename (BPF reads both at once)
  memcpy(bytes.data(), w, sizeof(w));
  EXPECT_FALSE(runtimes::PythonOffsetsFromDebug(bytes, 12).has_value()) << "version mismatch";
  EXPECT_TRUE(runtimes::PythonOffsetsFromDebug(bytes, 13).has_value()) << "all zero offsets fit";
  w[37] = 40;  // a name BPF's 24-byte read at co_filename does not reach
  memcpy(bytes.data(), w, sizeof(w));
  EXPECT_FALSE(runtimes::PythonOffsetsFromDebug(bytes, 13).has_value());
  w[37] = 16;
  memcpy(bytes.data(), w, sizeof(w));
  w[2] = 1;  // free-threaded
  memcpy(bytes.data(), w, sizeof(w));
  EXPECT_FALSE(runtimes::PythonOffsetsFromDebug(bytes, 13).has_value());
  w[2] = 0;
  w[31] = 4096;  // instr_ptr past the bytes BPF reads of a frame
  memcpy(bytes.data(), w, sizeof(w));
  EXPECT_FALSE(runtimes::PythonOffsetsFromDebug(bytes, 13).has_value());
  w[31] = 0;
  w[9] = uint64_t{1} << 40;  // does not fit
  memcpy(bytes.data(), w, sizeof(w));
  EXPECT_FALSE(runtimes::PythonOffsetsFromDebug(bytes, 13).has_value());
  EXPECT_FALSE(runtimes::PythonOffsetsFromDebug(std::span<const uint8_t>(bytes.data(), 100), 13).has_value());
}

}  // namespace
}  // namespace arcprof::testing
