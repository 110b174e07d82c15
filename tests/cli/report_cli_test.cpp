#include "cli/report_cli.h"

#include <gtest/gtest.h>
#include <spdlog/spdlog.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

#include "cli/error_stream.h"
#include "store/capture_store.h"
#include "tests/reports/golden.h"
#include "tests/model/test_profiles.h"
#include "tests/layer_names.h"

namespace arcprof {
namespace {

using testing::ExpectGolden;
using testing::SampleProfile;
using testing::TempDir;

struct RunResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};

// Parses `args` as main() would and runs the selected subcommand.
RunResult RunArcprof(std::vector<std::string> args,
              const std::function<void(ReportCommands&)>& customize = nullptr) {
  CLI::App app("arcprof");
  ReportCommands commands(app);
  if (customize) customize(commands);
  std::vector<std::string> reversed(args.rbegin(), args.rend());
  RunResult result;
  try {
    app.parse(reversed);
  } catch (const CLI::ParseError& e) {
    std::ostringstream out, err;
    result.exit_code = app.exit(e, out, err);
    result.err = err.str();
    return result;
  }
  std::ostringstream out, err;
  const std::optional<int> code = commands.RunIfSelected(out, err);
  result.exit_code = code.value_or(-100);
  result.out = out.str();
  result.err = err.str();
  return result;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

class ReportCli : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(WriteCapture(capture_, SampleProfile()).ok()); }
  TempDir dir_;
  std::string capture_ = dir_.File("arcprof.db");
};

TEST_F(ReportCli, ReportDefaultsToTprofByPidTidModSym) {
  const RunResult r = RunArcprof({"report", "-i", capture_});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  ExpectGolden("tprof_pid_tid_mod_sym.txt", r.out);
}

TEST_F(ReportCli, NoParamsDropsCxxParameterLists) {
  Profile p = SampleProfile();
  FrameRecord f;
  f.module = p.frames.InternModule("/usr/bin/busy");
  f.symbol = "ns::Worker::step(std::vector<int, std::allocator<int> > const&) const";
  f.kind = FrameKind::kNative;
  f.address = 0x1300;
  const uint32_t id = p.frames.Intern(f);
  p.threads[0].tree.AddStack(std::vector<uint32_t>{id}, 500);
  ASSERT_TRUE(WriteCapture(capture_, p).ok());
  RunResult r = RunArcprof({"report", "-i", capture_});
  EXPECT_NE(r.out.find("ns::Worker::step(std::vector"), std::string::npos) << r.out;
  r = RunArcprof({"report", "-i", capture_, "--no-params"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("ns::Worker::step\n"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("std::vector"), std::string::npos) << r.out;
  r = RunArcprof({"export", "-i", capture_, "--format", "folded", "--no-params"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("ns::Worker::step 500"), std::string::npos) << r.out;
}

TEST_F(ReportCli, ReportOptionsReachTheView) {
  RunResult r = RunArcprof({"report", "-i", capture_, "--by", "pid,mod,sym"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  ExpectGolden("tprof_pid_mod_sym.txt", r.out);
  r = RunArcprof({"report", "-i", capture_, "--min", "5"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  ExpectGolden("tprof_min5.txt", r.out);
  r = RunArcprof({"report", "-i", capture_, "--comm", "java", "--tid", "4156"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  ExpectGolden("tprof_filter_comm_tid.txt", r.out);
  r = RunArcprof({"report", "-i", capture_, "--by", "mod,sym", "--min", "2", "--pid", "900,1", "--format",
           "json", "--view", "tprof"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  ExpectGolden("tprof_mod_sym_min2_pids.json", r.out);
}

TEST_F(ReportCli, ExportFoldedToStdout) {
  const RunResult r = RunArcprof({"export", "--format", "folded", "-i", capture_});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  ExpectGolden("folded_all.txt", r.out);
  const RunResult java = RunArcprof({"export", "--format", "folded", "-i", capture_, "--pid", "4156"});
  ExpectGolden("folded_pid4156.txt", java.out);
}

TEST_F(ReportCli, ExportFoldedToAFileIsAtomicAnd0600) {
  const std::string output = dir_.File("out.folded");
  const mode_t old_umask = ::umask(0);
  const RunResult r = RunArcprof({"export", "--format", "folded", "-i", capture_, "-o", output});
  ::umask(old_umask);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "");
  ExpectGolden("folded_all.txt", ReadFile(output));
  struct stat st {};
  ASSERT_EQ(::stat(output.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0600u);
  EXPECT_EQ(dir_.Entries(), (std::vector<std::string>{"arcprof.db", "out.folded"}));
}

// A link planted by another user (in /tmp, say) is neither followed nor
// replaced; one of our own (or root's, like /dev/stdout) is written through.
TEST_F(ReportCli, ExportFollowsOnlyItsOwnSymlinks) {
  const std::string victim = dir_.File("victim");
  std::ofstream(victim) << "precious";
  const std::string output = dir_.File("out.folded");
  ASSERT_EQ(::symlink(victim.c_str(), output.c_str()), 0);
  if (geteuid() == 0) {
    ASSERT_EQ(::lchown(output.c_str(), 65534, 65534), 0);
    const RunResult r = RunArcprof({"export", "--format", "folded", "-i", capture_, "-o", output});
    EXPECT_EQ(r.exit_code, 1) << r.err;
    EXPECT_NE(r.err.find("owned by another user"), std::string::npos) << r.err;
    EXPECT_EQ(ReadFile(victim), "precious");
    struct stat st {};
    ASSERT_EQ(::lstat(output.c_str(), &st), 0);
    EXPECT_TRUE(S_ISLNK(st.st_mode));
    ASSERT_EQ(::lchown(output.c_str(), 0, 0), 0);
  }
  const RunResult r = RunArcprof({"export", "--format", "folded", "-i", capture_, "-o", output});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  ExpectGolden("folded_all.txt", ReadFile(victim));
  struct stat st {};
  ASSERT_EQ(::lstat(output.c_str(), &st), 0);
  EXPECT_TRUE(S_ISLNK(st.st_mode));
}

TEST_F(ReportCli, CaptureErrorsExitWith2AndOneLine) {
  std::ofstream(dir_.File("junk.db")) << "this is not a database, just text that is long enough";
  for (const std::string& path : {dir_.File("missing.db"), dir_.File("junk.db")}) {
    for (const std::vector<std::string>& args :
         {std::vector<std::string>{"report", "-i", path},
          std::vector<std::string>{"export", "--format", "folded", "-i", path}}) {
      const RunResult r = RunArcprof(args);
      EXPECT_EQ(r.exit_code, 2) << args[0] << " " << path;
      EXPECT_EQ(r.out, "");
      ASSERT_FALSE(r.err.empty());
      EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << r.err;
      EXPECT_NE(r.err.find(path), std::string::npos) << r.err;
    }
  }
}

TEST_F(ReportCli, ExportErrorsLeaveNoFile) {
  const RunResult r =
      RunArcprof({"export", "--format", "folded", "-i", capture_, "-o", dir_.File("nodir/out.folded")});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("cannot create"), std::string::npos) << r.err;
  EXPECT_EQ(dir_.Entries(), std::vector<std::string>{"arcprof.db"});
}

TEST_F(ReportCli, UsageErrorsExitWith1) {
  RunResult r = RunArcprof({"report", "-i", capture_, "--by", "pid,function"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err, "arcprof report: --by: unknown level 'function'; use a comma-separated list of "
                   "host, container, pod, service, pid, tid, mod, sym (e.g. pid,tid,mod,sym)\n");
  r = RunArcprof({"report", "-i", capture_, "--view", "nosuchview"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err.rfind("arcprof report: unknown view 'nosuchview'; use one of ", 0), 0u) << r.err;
  EXPECT_NE(r.err.find("tprof"), std::string::npos) << r.err;
  r = RunArcprof({"export", "--format", "gif", "-i", capture_});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err, "arcprof export: unknown format 'gif'; use one of folded, html, otlp, pprof, speedscope, svg, xprof, timeline-svg\n");
  // CLI11 rejects these before a view runs.
  EXPECT_NE(RunArcprof({"report", "--format", "xml"}).exit_code, 0);
  EXPECT_NE(RunArcprof({"report", "--min", "150"}).exit_code, 0);
  EXPECT_NE(RunArcprof({"report", "--pid", "abc"}).exit_code, 0);
  EXPECT_NE(RunArcprof({"export", "-i", capture_}).exit_code, 0);  // --format is required
}

TEST_F(ReportCli, NoSubcommandMeansNothingToRun) {
  CLI::App app("arcprof");
  ReportCommands commands(app);
  app.add_subcommand("record", "");
  std::vector<std::string> args = {"record"};
  app.parse(args);
  std::ostringstream out, err;
  EXPECT_FALSE(commands.RunIfSelected(out, err).has_value());
}

TEST_F(ReportCli, AddingAViewIsOneCall) {
  const RunResult r = RunArcprof({"report", "-i", capture_, "--view", "count"}, [](ReportCommands& c) {
    c.AddView("count", [](const Profile& p, const ReportRequest&, std::ostream& out, std::ostream&) {
      out << p.total_samples() << "\n";
      return 0;
    });
  });
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "1995\n");
}

// perf's habits: --stdio is accepted (text is the default), --sort keys that
// name tprof levels map onto --by, the others are refused with one line.
TEST_F(ReportCli, PerfStdioAndSortAliases) {
  const RunResult plain = RunArcprof({"report", "-i", capture_});
  RunResult r = RunArcprof({"report", "--stdio", "-i", capture_});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, plain.out);
  EXPECT_NE(RunArcprof({"report", "--stdio", "--format", "json", "-i", capture_}).exit_code, 0);

  r = RunArcprof({"report", "-i", capture_, "--sort", "pid,tid,dso,sym"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, plain.out);
  r = RunArcprof({"report", "-i", capture_, "--sort", "dso,symbol"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, RunArcprof({"report", "-i", capture_, "--by", "mod,sym"}).out);
  EXPECT_NE(r.out.find("Levels:             mod,sym\n"), std::string::npos) << r.out;

  for (const std::string& keys : {"comm", "pid,cpu", "srcline", ""}) {
    r = RunArcprof({"report", "-i", capture_, "--sort", keys});
    EXPECT_EQ(r.exit_code, 1) << keys;
    EXPECT_EQ(r.out, "");
    EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << r.err;
    EXPECT_EQ(r.err.rfind("arcprof report: --sort: '", 0), 0u) << r.err;
    EXPECT_NE(r.err.find("does not map onto a tprof level"), std::string::npos) << r.err;
  }
  r = RunArcprof({"report", "-i", capture_, "--sort", "pid", "--by", "tid"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err, "arcprof report: give the tprof levels with --by or with --sort, not both\n");
  // Other views keep their own --sort.
  r = RunArcprof({"report", "-i", capture_, "--view", "xprof", "--sort", "cum"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
}

// A path, view or format name holding ESC, BEL, CSI (U+009B) or a newline
// reaches the terminal escaped, on one line, in every error of report/export/diff.
TEST_F(ReportCli, ErrorMessagesEscapeControlCharacters) {
  const std::string hostile = "x\x1b]0;owned\x07\xc2\x9b" "2J\nforged line";
  auto expect_safe = [](const RunResult& r, const std::string& what) {
    EXPECT_NE(r.exit_code, 0) << what;
    ASSERT_FALSE(r.err.empty()) << what;
    EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << what << ": " << r.err;
    for (char c : r.err.substr(0, r.err.size() - 1)) {
      EXPECT_FALSE(static_cast<unsigned char>(c) < 0x20 || c == 0x7f) << what << ": " << r.err;
    }
    EXPECT_EQ(r.err.find("\xc2\x9b"), std::string::npos) << what;
    // The text is still there, inert (escaped as \xNN, or blanked by the capture reader).
    EXPECT_NE(r.err.find("owned"), std::string::npos) << what << ": " << r.err;
    EXPECT_NE(r.err.find("forged line"), std::string::npos) << what << ": " << r.err;
  };
  const std::string path = dir_.File(hostile + ".db");
  expect_safe(RunArcprof({"report", "-i", path}), "report -i");
  expect_safe(RunArcprof({"export", "--format", "folded", "-i", path}), "export -i");
  expect_safe(RunArcprof({"report", "-i", capture_, "--view", hostile}), "report --view");
  expect_safe(RunArcprof({"export", "--format", hostile, "-i", capture_}), "export --format");
  expect_safe(RunArcprof({"report", "-i", capture_, "--by", hostile}), "report --by (the view's error)");
  expect_safe(RunArcprof({"report", "-i", capture_, "--sort", hostile}), "report --sort");
  expect_safe(RunArcprof({"export", "--format", "folded", "-i", capture_, "-o", dir_.File(hostile + "/out")}),
              "export -o");
  expect_safe(RunArcprof({"diff", capture_, path}), "diff");
}

TEST(SafeErrorStream, EscapesEveryControlButTheLineEnds) {
  std::ostringstream target;
  {
    cli::SafeErrorStream err(target);
    err << "arcprof: a\x1b[31mred\x07 " << 42 << '\n' << "b\tc\xc2\x9b" << "\xff" << '\n' << "tail";
  }
  EXPECT_EQ(target.str(), "arcprof: a\\x1b[31mred\\x07 42\nb\\x09c\\xc2\\x9b\\xff\ntail");
  EXPECT_EQ(cli::ErrorLine("report", "bad\nname\x1b"), "arcprof report: bad\\x0aname\\x1b\n");
  EXPECT_EQ(cli::ErrorLine("", "plain"), "arcprof: plain\n");
}

// Warnings of every layer (spdlog) are escaped whole by the CLI's logger.
TEST(SafeErrorStream, LoggerEscapesWarnings) {
  TempDir dir;
  const std::string path = dir.File("stderr.txt");
  const int saved = dup(STDERR_FILENO);
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(dup2(fd, STDERR_FILENO), STDERR_FILENO);
  auto previous = spdlog::default_logger();
  cli::InstallEscapingLogger();
  spdlog::set_pattern("arcprof: %v");
  spdlog::warn("perf map of {}: bad line", "evil\x1b]0;t\x07\nforged");
  spdlog::default_logger()->flush();
  dup2(saved, STDERR_FILENO);
  close(saved);
  close(fd);
  spdlog::set_default_logger(previous);
  EXPECT_EQ(ReadFile(path), "arcprof: perf map of evil\\x1b]0;t\\x07\\x0aforged: bad line\n");
}

}  // namespace
}  // namespace arcprof
