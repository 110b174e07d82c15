// Errors of the arcprof binary as a user meets them: one line, control
// characters escaped, an unknown command named back (the binary is run).
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <string>

#include "tests/loader/runtime_util.h"
#include "tests/layer_names.h"

namespace arcprof::testing {
namespace {

const std::string kArcprof = ARCPROF_BIN;

size_t Lines(const std::string& s) { return static_cast<size_t>(std::count(s.begin(), s.end(), '\n')); }

// Errors of the arcprof binary (CLI11's usage errors, report's and record's own)
// reach the terminal with control characters escaped, on one line.
TEST(CliErrors, ControlCharactersInErrorsAreEscaped) {
  TempDir tmp;
  const std::string hostile = "x\x1b]0;owned\x07\nforged line";
  auto expect_safe = [](Subprocess& p, const std::string& what) {
    EXPECT_NE(p.Wait(), 0) << what;
    const std::string& err = p.stderr_text();
    EXPECT_EQ(Lines(err), 1u) << what << ": " << err;
    EXPECT_EQ(err.find('\x1b'), std::string::npos) << what << ": " << err;
    EXPECT_EQ(err.find('\x07'), std::string::npos) << what << ": " << err;
    EXPECT_NE(err.find("forged line"), std::string::npos) << what << ": " << err;
  };
  Subprocess usage({kArcprof, "report", "--no-such-option", hostile});
  expect_safe(usage, "usage error");
  Subprocess report({kArcprof, "report", "-i", tmp.path(hostile + ".db")});
  expect_safe(report, "report -i");
  Subprocess record({kArcprof, "record", "-d", "1", "-o", tmp.path(hostile + "/x.db")});
  expect_safe(record, "record -o");
}

// A first word that names no command is named back, with the commands there
// are, exit 2; a hostile one is escaped. Options of a known command, and no
// command at all, stay CLI11's usage errors (exit 1).
TEST(CliErrors, AnUnknownCommandIsNamedWithTheCommandsThereAre) {
  Subprocess unknown({kArcprof, "profile", "-p", "1"});
  EXPECT_EQ(unknown.Wait(), 2);
  EXPECT_EQ(unknown.stderr_text(),
            "arcprof: unknown command 'profile'; commands: record, continuous, store, diff, report, export, "
            "java, push, merge, trace (see arcprof --help)\n");
  Subprocess verbose({kArcprof, "-v", "profile"});
  EXPECT_EQ(verbose.Wait(), 2);
  EXPECT_NE(verbose.stderr_text().find("unknown command 'profile'"), std::string::npos)
      << verbose.stderr_text();
  Subprocess hostile({kArcprof, "x\x1b]0;owned\x07\nforged"});
  EXPECT_EQ(hostile.Wait(), 2);
  EXPECT_EQ(Lines(hostile.stderr_text()), 1u) << hostile.stderr_text();
  EXPECT_EQ(hostile.stderr_text().find('\x1b'), std::string::npos) << hostile.stderr_text();
  Subprocess none({kArcprof});
  EXPECT_EQ(none.Wait(), 1);
  EXPECT_NE(none.stderr_text().find("A subcommand is required"), std::string::npos)
      << none.stderr_text();
  Subprocess known({kArcprof, "report", "--no-such-option"});
  EXPECT_EQ(known.Wait(), 1);
  EXPECT_EQ(known.stderr_text().find("unknown command"), std::string::npos) << known.stderr_text();
}

// The status lines of a recording that works (target, output path, stop
// reason) carry text the user or the recorded command chose: escaped too.
TEST(CliErrors, StatusLinesOfARecordingEscapeControlCharacters) {
  ARCPROF_REQUIRE_RECORD_CAPABLE();
  TempDir tmp;
  const std::string hostile = "x\x1b]0;owned\x07\nforged line";
  const std::string output = tmp.path(hostile + ".db");
  Subprocess rec({kArcprof, "record", "--no-java", "-o", output, "--", "/bin/echo", hostile});
  ASSERT_EQ(rec.Wait(), 0) << rec.stderr_text();
  const std::string& err = rec.stderr_text();
  EXPECT_EQ(err.find('\x1b'), std::string::npos) << err;
  EXPECT_EQ(err.find('\x07'), std::string::npos) << err;
  EXPECT_NE(err.find("\\x1b]0;owned"), std::string::npos) << err;  // shown escaped
  EXPECT_TRUE(std::filesystem::exists(output));  // the file itself has its real name
}

}  // namespace
}  // namespace arcprof::testing
