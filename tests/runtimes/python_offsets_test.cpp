// The per-version CPython offsets (runtimes/python) against each installed
// version's own headers, and 3.13's _Py_DebugOffsets against both.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
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
                                         "-I/usr/include/x86_64-linux-gnu/python3." + std::to_string(py.minor),
                                         ARCPROF_PY_PROBE, "-o", exe};
    auto [cc_status, cc_out] = RunCapture(cc);
    ASSERT_EQ(cc_status, 0) << cc_out;
    auto [status, printed] = RunCapture({exe});
    unlink(exe.c_str());
    EXPECT_EQ(status, 0) << "co_name and co_qualname no longer follow co_filename";
    auto table = runtimes::PythonOffsetsFor(py.minor);
    ASSERT_TRUE(table.has_value());
    EXPECT_EQ(printed, runtimes::PythonOffsetsText(*table));
    ++checked;
  }
  if (checked == 0) GTEST_SKIP() << "no CPython 3.11+ headers installed (python3.11-dev, or pyenv)";
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
  EXPECT_EQ(runtimes::PythonOffsetsText(*debug), runtimes::PythonOffsetsText(*runtimes::PythonOffsetsFor(13)));
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
  memcpy(bytes.data(), w, sizeof(w));
  EXPECT_FALSE(runtimes::PythonOffsetsFromDebug(bytes, 12).has_value()) << "version mismatch";
  EXPECT_TRUE(runtimes::PythonOffsetsFromDebug(bytes, 13).has_value()) << "all zero offsets fit";
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
