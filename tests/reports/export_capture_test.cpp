// Exports of real captures read by independent tools: `go tool pprof -top`
// must agree with `arcprof report` on totals and top functions, and
// `arcprof diff` of the ground-truth program at 3:1 and 1:3 must show f_heavy
// losing about 50 points. Runtime tests: root, BPF, RUN_SERIAL.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <regex>
#include <set>
#include <sys/stat.h>
#include <sstream>

#include <nlohmann/json.hpp>

#include "tests/loader/runtime_util.h"
#include "tests/layer_names.h"

namespace arcprof::testing {
namespace {

const std::string kArcprof = ARCPROF_BIN;
const std::string kGroundTruth = std::string(ARCPROF_TEST_PROGRAMS) + "/ground_truth";
const std::string kGo = "/usr/bin/go";

void Record(const std::string& db, const std::string& ratio) {
  Subprocess rec({kArcprof, "record", "-q", "-o", db, "--", kGroundTruth, "3", ratio});
  ASSERT_EQ(rec.Wait(), 0) << rec.stderr_text();
}

// tprof's symbol rows (--by sym) as name -> ticks (--metric's unit); names carry " (module)".
std::map<std::string, uint64_t> TprofBySymbol(const std::string& db, uint64_t* total,
                                              const std::string& metric = "samples") {
  auto [code, text] =
      RunCapture({kArcprof, "report", "-i", db, "--by", "sym", "--format", "json", "--metric", metric});
  EXPECT_EQ(code, 0);
  const auto json = nlohmann::json::parse(text);
  *total = json["header"]["total_samples"].get<uint64_t>();
  std::map<std::string, uint64_t> rows;
  for (const auto& row : json["rows"]) rows[row["symbol"].get<std::string>()] += row["ticks"].get<uint64_t>();
  return rows;
}

TEST(ExportCapture, GoToolPprofAgreesWithTheTprofReport) {
  ARCPROF_REQUIRE_RECORD_CAPABLE();
  ARCPROF_REQUIRE_TOOL(kGo, "golang-go");
  TempDir tmp;
  const std::string db = tmp.path("gt.db");
  const std::string pb = tmp.path("gt.pb.gz");
  Record(db, "3:1");
  auto [export_code, unused] = RunCapture({kArcprof, "export", "--format", "pprof", "-i", db, "-o", pb});
  ASSERT_EQ(export_code, 0);

  // go needs a writable home and build cache; keep both in the test's directory.
  auto [code, top] = RunCapture({"/usr/bin/env", "HOME=" + tmp.dir(), "GOCACHE=" + tmp.path("gocache"),
                                 "GOPATH=" + tmp.path("gopath"), "GOTOOLCHAIN=local", "GOFLAGS=", kGo, "tool",
                                 "pprof", "-top", "-nodecount=50", "-sample_index=samples", pb});
  ASSERT_EQ(code, 0) << top;

  uint64_t total = 0;
  const auto tprof = TprofBySymbol(db, &total);
  std::smatch m;
  ASSERT_TRUE(std::regex_search(top, m, std::regex(R"(Total samples = (\d+))"))) << top;
  EXPECT_EQ(std::stoull(m[1]), total) << top;

  // "  flat  flat%   sum%   cum   cum%  name" rows.
  std::map<std::string, uint64_t> flat;
  std::istringstream lines(top);
  std::string line;
  const std::regex row(R"(^\s*(\d+)\s+[\d.]+%\s+[\d.]+%\s+(\d+)\s+[\d.]+%\s+(.+)$)");
  std::vector<std::string> order;
  while (std::getline(lines, line)) {
    if (std::regex_match(line, m, row)) {
      flat[m[3]] = std::stoull(m[1]);
      order.push_back(m[3]);
    }
  }
  ASSERT_GE(order.size(), 2u) << top;
  // pprof sorts by flat: the two hottest functions are the ground truth's.
  EXPECT_EQ(order[0], "f_heavy") << top;
  EXPECT_EQ(order[1], "f_light") << top;
  EXPECT_EQ(flat["f_heavy"], tprof.at("f_heavy"));
  EXPECT_EQ(flat["f_light"], tprof.at("f_light"));
  EXPECT_NEAR(static_cast<double>(flat["f_heavy"]) / static_cast<double>(flat["f_heavy"] + flat["f_light"]), 0.75,
              0.04);

  // The cpu sample type: samples times the period (1e9 / 999 Hz ns).
  auto [cpu_code, cpu_top] = RunCapture({"/usr/bin/env", "HOME=" + tmp.dir(), "GOCACHE=" + tmp.path("gocache"),
                                         "GOTOOLCHAIN=local", kGo, "tool", "pprof", "-raw", pb});
  ASSERT_EQ(cpu_code, 0);
  EXPECT_NE(cpu_top.find("PeriodType: cpu nanoseconds"), std::string::npos) << cpu_top;
  EXPECT_NE(cpu_top.find("Period: 1001001"), std::string::npos);
  EXPECT_NE(cpu_top.find("comm:[ground_truth]"), std::string::npos);
  EXPECT_NE(cpu_top.find("thread_name:[ground_truth]"), std::string::npos);
}

// pprof's cpu is --metric cpu: on a `record --ptt` capture, the CPU time PTT
// measured for the thread (not samples x period), shared out over its
// samples exactly as `arcprof report --metric cpu` shares it.
TEST(ExportCapture, GoToolPprofCpuIsTheReportsMetricCpu) {
  ARCPROF_REQUIRE_RECORD_CAPABLE();
  ARCPROF_REQUIRE_TOOL(kGo, "golang-go");
  TempDir tmp;
  const std::string db = tmp.path("ptt.db");
  const std::string pb = tmp.path("ptt.pb.gz");
  Subprocess rec({kArcprof, "record", "-q", "--ptt", "-o", db, "--", kGroundTruth, "2", "3:1"});
  ASSERT_EQ(rec.Wait(), 0) << rec.stderr_text();
  auto [export_code, unused] = RunCapture({kArcprof, "export", "--format", "pprof", "-i", db, "-o", pb});
  ASSERT_EQ(export_code, 0);
  auto [code, top] = RunCapture({"/usr/bin/env", "HOME=" + tmp.dir(), "GOCACHE=" + tmp.path("gocache"),
                                 "GOPATH=" + tmp.path("gopath"), "GOTOOLCHAIN=local", "GOFLAGS=", kGo, "tool",
                                 "pprof", "-top", "-nodecount=50", "-unit=us", "-sample_index=cpu", pb});
  ASSERT_EQ(code, 0) << top;
  EXPECT_NE(top.find("cpu: per-thread CPU time measured by PTT"), std::string::npos) << top;

  // The CPU time PTT measured for ground_truth's one thread (PTT sees the
  // whole machine: other ground_truth runs may be in it).
  auto [pid_code, pid_text] = RunCapture({kArcprof, "report", "-i", db, "--by", "pid", "--format", "json"});
  ASSERT_EQ(pid_code, 0) << pid_text;
  const auto by_pid = nlohmann::json::parse(pid_text);
  ASSERT_EQ(by_pid["rows"].size(), 1u) << pid_text;
  const int64_t pid = by_pid["rows"][0]["pid"].get<int64_t>();
  auto [ptt_code, ptt_text] = RunCapture({kArcprof, "report", "-i", db, "--view", "ptt", "--format", "json"});
  ASSERT_EQ(ptt_code, 0) << ptt_text;
  double ptt_us = -1;
  const auto ptt = nlohmann::json::parse(ptt_text);
  for (const auto& thread : ptt["threads"]) {
    if (thread["pid"].get<int64_t>() == pid && thread["tid"].get<int64_t>() == pid) ptt_us = thread["cpu_ms"].get<double>() * 1000;
  }
  ASSERT_GT(ptt_us, 100'000) << ptt_text;  // 2 s of burning, however loaded the machine

  std::smatch m;
  ASSERT_TRUE(std::regex_search(top, m, std::regex(R"(Total samples = ([\d.]+)us)"))) << top;
  const double pprof_total_us = std::stod(m[1]);
  EXPECT_NEAR(pprof_total_us, ptt_us, 1.0) << top;
  uint64_t samples = 0;
  TprofBySymbol(db, &samples);
  // Not samples x period: these differ by far more than a microsecond (a
  // sample is 1001 us) unless the two agree by chance.
  EXPECT_GT(std::abs(pprof_total_us - static_cast<double>(samples) * 1001.001), 1.0)
      << "pprof cpu looks like samples x period\n" << top;

  // Function by function, the report's --metric cpu (us) is pprof's flat.
  uint64_t total_us = 0;
  const auto report = TprofBySymbol(db, &total_us, "cpu");
  EXPECT_NEAR(static_cast<double>(total_us), pprof_total_us, 1.0 + 0.5 * static_cast<double>(report.size()));
  std::map<std::string, double> flat;
  std::istringstream lines(top);
  std::string line;
  const std::regex row(R"(^\s*([\d.]+)(us)?\s+[\d.]+%\s+[\d.]+%\s+[\d.]+(us)?\s+[\d.]+%\s+(.+)$)");
  while (std::getline(lines, line)) {
    if (std::regex_match(line, m, row)) flat[m[4]] = std::stod(m[1]);
  }
  for (const char* fn : {"f_heavy", "f_light"}) {
    SCOPED_TRACE(fn);
    ASSERT_TRUE(report.count(fn)) << top;
    ASSERT_TRUE(flat.count(fn)) << top;
    EXPECT_NEAR(flat[fn], static_cast<double>(report.at(fn)), 1.0) << top;
  }
  EXPECT_NEAR(flat["f_heavy"] / (flat["f_heavy"] + flat["f_light"]), 0.75, 0.04) << top;
}

TEST(ExportCapture, DiffOfSwappedRatiosMovesFHeavyByFiftyPoints) {
  ARCPROF_REQUIRE_RECORD_CAPABLE();
  TempDir tmp;
  const std::string before = tmp.path("before.db");
  const std::string after = tmp.path("after.db");
  Record(before, "3:1");
  Record(after, "1:3");
  auto [code, text] = RunCapture({kArcprof, "diff", before, after, "--comm", "ground_truth", "-o",
                                  tmp.path("diff.svg"), "--format", "json", "--top", "5"});
  ASSERT_EQ(code, 0) << text;
  const auto json = nlohmann::json::parse(text);
  std::map<std::string, nlohmann::json> rows;
  for (const auto& row : json["rows"]) rows[row["name"]] = row;
  ASSERT_TRUE(rows.count("f_heavy")) << text;
  ASSERT_TRUE(rows.count("f_light")) << text;
  // 75% -> 25% of the program's samples; a loaded 2-core machine blurs it a bit.
  EXPECT_NEAR(rows["f_heavy"]["self_delta"].get<double>(), -50, 6) << text;
  EXPECT_NEAR(rows["f_light"]["self_delta"].get<double>(), 50, 6) << text;
  // The two functions are the top of the table.
  std::set<std::string> top2 = {json["rows"][0]["name"], json["rows"][1]["name"]};
  EXPECT_EQ(top2, (std::set<std::string>{"f_heavy", "f_light"}));
  // The graph is written, private, and coloured: f_heavy's box carries its delta.
  struct stat st {};
  ASSERT_EQ(stat(tmp.path("diff.svg").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
}

}  // namespace
}  // namespace arcprof::testing
