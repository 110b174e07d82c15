#include "reports/tprof.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <sstream>

#include "tests/reports/golden.h"
#include "tests/model/test_profiles.h"
#include "tests/layer_names.h"

namespace arcprof {
namespace {

using testing::ExpectGolden;
using testing::SampleProfile;

TprofOptions Options(const std::string& by, double min_percent = 0, ThreadFilter filter = {}) {
  auto levels = ParseTprofLevels(by);
  EXPECT_TRUE(levels.ok()) << by;
  TprofOptions options;
  options.levels = *levels;
  options.min_percent = min_percent;
  options.filter = std::move(filter);
  return options;
}

std::string Text(const TprofOptions& options) {
  std::ostringstream out;
  WriteTprofText(BuildTprof(SampleProfile(), options), out);
  return out.str();
}

std::string Json(const TprofOptions& options) {
  std::ostringstream out;
  WriteTprofJson(BuildTprof(SampleProfile(), options), out);
  return out.str();
}

TEST(TprofLevels, ParsesAnyOrder) {
  auto levels = ParseTprofLevels("sym,mod,tid,pid");
  ASSERT_TRUE(levels.ok());
  EXPECT_EQ(*levels, (std::vector<TprofLevel>{TprofLevel::kSymbol, TprofLevel::kModule,
                                              TprofLevel::kTid, TprofLevel::kPid}));
  levels = ParseTprofLevels("mod");
  ASSERT_TRUE(levels.ok());
  EXPECT_EQ(levels->size(), 1u);
}

TEST(TprofLevels, RejectsBadSpecsWithExitCode1) {
  for (const char* spec : {"", "pid,", "pid,pid", "pid,thread", "PID", "pid tid"}) {
    auto levels = ParseTprofLevels(spec);
    ASSERT_FALSE(levels.ok()) << spec;
    EXPECT_EQ(levels.error().kind, ErrorKind::kFailed);
    EXPECT_EQ(levels.error().message.rfind("--by: ", 0), 0u) << levels.error().message;
  }
}

TEST(Tprof, TicksGoToTheLeafFrameAndNestByLevel) {
  const TprofReport report = BuildTprof(SampleProfile(), Options("pid,tid,mod,sym"));
  EXPECT_EQ(report.total_samples, 1995u);
  EXPECT_EQ(report.selected_samples, 1995u);
  EXPECT_EQ(report.lost_samples, 7);
  ASSERT_EQ(report.rows.size(), 3u);
  const TprofRow& busy = report.rows[0];
  EXPECT_EQ(busy.name, "busy loop_900");
  EXPECT_EQ(busy.ticks, 1090u);
  EXPECT_NEAR(busy.percent, 100.0 * 1090 / 1995, 1e-9);
  EXPECT_EQ(report.rows[1].name, "java_4156");
  EXPECT_EQ(report.rows[1].ticks, 890u);
  EXPECT_EQ(report.rows[2].name, "systemd_1");
  EXPECT_EQ(report.rows[2].ticks, 15u);

  const TprofRow& java = report.rows[1];
  ASSERT_EQ(java.children.size(), 2u);
  EXPECT_EQ(java.children[0].name, "tid java_4156");
  EXPECT_EQ(java.children[0].ticks, 650u);
  EXPECT_EQ(java.children[1].name, "tid C2 CompilerThre_4170");
  EXPECT_EQ(java.children[1].ticks, 240u);
  // The main thread's leaf modules: JITCODE 500, vmlinux 120, //anon 30.
  const auto& modules = java.children[0].children;
  ASSERT_EQ(modules.size(), 3u);
  EXPECT_EQ(modules[0].name, "JITCODE");
  EXPECT_EQ(modules[0].ticks, 500u);
  EXPECT_EQ(modules[1].name, "vmlinux");
  EXPECT_EQ(modules[1].ticks, 120u);
  ASSERT_EQ(modules[1].children.size(), 1u);
  EXPECT_EQ(modules[1].children[0].name, "_raw_spin_unlock_irqrestore");
  // The one display name (model/frame_name.h); the reason is in the header lines.
  EXPECT_EQ(modules[2].children[0].name, "[anon]");

  // Unknown leaves: 30 anon + 25 stripped of 1995 ticks.
  EXPECT_EQ(report.unknown_leaf_ticks.unknown, 55u);
  EXPECT_EQ(report.unknown_leaf_ticks.by_reason.at("stripped"), 25u);
  // Unknown frames weighted by ticks: anon 30, stripped 25, truncation marker 5.
  EXPECT_EQ(report.unknown_frames.unknown, 60u);
  EXPECT_EQ(report.unknown_frames.by_reason.at("stack truncated"), 5u);
}

// A runtime's frames (python, js) show their kind in the module column, as
// Java's compiled code shows JITCODE; a function row names its file, and one
// function's lines (frames of their own) are one row.
TEST(Tprof, RuntimeKindsAreTheirModule) {
  Profile p = SampleProfile();
  const uint32_t a12 = testing::SourceFrame(p, "/srv/app.py", "alpha", FrameKind::kPython, 12);
  const uint32_t a13 = testing::SourceFrame(p, "/srv/app.py", "alpha", FrameKind::kPython, 13);
  const uint32_t b = testing::SourceFrame(p, "/srv/other.py", "alpha", FrameKind::kPython, 3);
  const uint32_t js = testing::SourceFrame(p, "/srv/app.js", "render", FrameKind::kJs, 7);
  ThreadRecord& t = p.threads[0];
  t.tree.AddStack(std::vector<uint32_t>{a12}, 3000);
  t.tree.AddStack(std::vector<uint32_t>{a13}, 2000);
  t.tree.AddStack(std::vector<uint32_t>{b}, 1000);
  t.tree.AddStack(std::vector<uint32_t>{js}, 1500);
  const TprofReport report = BuildTprof(p, Options("mod,sym"));
  ASSERT_GE(report.rows.size(), 2u);
  EXPECT_EQ(report.rows[0].name, "python");
  EXPECT_EQ(report.rows[0].ticks, 6000u);
  ASSERT_EQ(report.rows[0].children.size(), 2u);
  EXPECT_EQ(report.rows[0].children[0].name, "alpha (app.py)");
  EXPECT_EQ(report.rows[0].children[0].ticks, 5000u);
  EXPECT_EQ(report.rows[0].children[1].name, "alpha (other.py)");
  EXPECT_EQ(report.rows[1].name, "js");
  EXPECT_EQ(report.rows[1].children[0].name, "render (app.js)");
}

// A deep stack's "[frames elided]" marker is not code: counted apart from
// truncations, and never a leaf of its own.
TEST(Tprof, ElidedFramesMarkerIsCountedUnderItsOwnName) {
  Profile p = SampleProfile();
  model::FrameRecord marker;
  marker.symbol = std::string(kElidedFramesName);
  marker.kind = FrameKind::kUnknown;
  marker.reason = UnknownReason::kTruncated;
  const uint32_t elided = p.frames.Intern(marker);
  model::FrameRecord leaf;
  leaf.module = p.frames.InternModule("/usr/bin/deep");
  leaf.symbol = "burn";
  leaf.kind = FrameKind::kNative;
  const uint32_t burn = p.frames.Intern(leaf);
  const std::vector<uint32_t> stack = {elided, burn};
  p.threads[p.ThreadIndex(77, 77)].tree.AddStack(stack, 40);
  const TprofReport report = BuildTprof(p, Options("sym"));
  EXPECT_EQ(report.unknown_frames.by_reason.at("frames elided"), 40u);
  EXPECT_EQ(report.unknown_frames.by_reason.at("stack truncated"), 5u);
  EXPECT_EQ(report.unknown_leaf_ticks.unknown, 55u) << "the leaves stay burn";
  std::ostringstream out;
  WriteTprofText(report, out);
  EXPECT_NE(out.str().find("frames elided"), std::string::npos) << out.str();
}

TEST(Tprof, SymbolsWithoutAModuleLevelSayWhereTheyComeFrom) {
  const TprofReport report = BuildTprof(SampleProfile(), Options("sym"));
  ASSERT_FALSE(report.rows.empty());
  EXPECT_EQ(report.rows[0].name, "f_heavy (busy)");
  EXPECT_EQ(report.rows[0].ticks, 755u);  // 750 + 5 below the truncation marker
}

TEST(Tprof, MinHidesSmallRowsButKeepsTheTotal) {
  const TprofReport report = BuildTprof(SampleProfile(), Options("pid,mod", 5.0));
  EXPECT_EQ(report.total_samples, 1995u);
  ASSERT_EQ(report.rows.size(), 2u);  // systemd (0.75%) hidden
  for (const TprofRow& row : report.rows) {
    for (const TprofRow& child : row.children) EXPECT_GE(child.percent, 5.0) << child.name;
  }
}

TEST(Tprof, FiltersSelectThreadsAndPercentagesStayOfTheWholeCapture) {
  ThreadFilter filter;
  filter.tids = {4170};
  const TprofReport report = BuildTprof(SampleProfile(), Options("pid,tid", 0, filter));
  EXPECT_TRUE(report.filtered);
  EXPECT_EQ(report.selected_samples, 240u);
  ASSERT_EQ(report.rows.size(), 1u);
  EXPECT_NEAR(report.rows[0].percent, 100.0 * 240 / 1995, 1e-9);
}

TEST(Tprof, GoldenText) {
  ExpectGolden("tprof_pid_tid_mod_sym.txt", Text(Options("pid,tid,mod,sym")));
  ExpectGolden("tprof_mod_sym.txt", Text(Options("mod,sym")));
  ExpectGolden("tprof_pid_mod_sym.txt", Text(Options("pid,mod,sym")));
  ExpectGolden("tprof_sym_tid.txt", Text(Options("sym,tid")));
  ExpectGolden("tprof_min5.txt", Text(Options("pid,tid,mod,sym", 5.0)));
  ThreadFilter filter;
  filter.comms = {"java"};
  filter.tids = {4156};
  ExpectGolden("tprof_filter_comm_tid.txt", Text(Options("pid,tid,mod,sym", 0, filter)));
}

TEST(Tprof, GoldenJson) {
  ExpectGolden("tprof_pid_tid_mod_sym.json", Json(Options("pid,tid,mod,sym")));
  ThreadFilter filter;
  filter.pids = {900, 1};
  ExpectGolden("tprof_mod_sym_min2_pids.json", Json(Options("mod,sym", 2.0, filter)));
}

TEST(Tprof, JsonHasTheSameRowsAsText) {
  const auto doc = nlohmann::json::parse(Json(Options("pid,tid,mod,sym")));
  EXPECT_EQ(doc["view"], "tprof");
  EXPECT_EQ(doc["header"]["total_samples"], 1995);
  EXPECT_EQ(doc["header"]["lost_samples"], 7);
  ASSERT_EQ(doc["rows"].size(), 3u);
  EXPECT_EQ(doc["rows"][1]["pid"], 4156);
  EXPECT_EQ(doc["rows"][1]["ticks"], 890);
  EXPECT_DOUBLE_EQ(doc["rows"][1]["percent"].get<double>(), 44.61);
  EXPECT_EQ(doc["rows"][1]["children"][0]["children"][0]["module"], "JITCODE");
}

TEST(Tprof, WideTickCountsWidenTheColumn) {
  Profile profile = SampleProfile();
  CallTree& tree = profile.threads[2].tree;  // busy loop's f_heavy; +5 below the marker
  tree.Add(3, 0, kSamplesValue, 123'456'789 - tree.value(3, kSamplesValue));
  TprofOptions options = Options("pid,tid,mod,sym");
  std::ostringstream out;
  WriteTprofText(BuildTprof(profile, options), out);
  const std::string text = out.str();
  EXPECT_NE(text.find("\nLAB          TKS   %%%     NAMES\n"), std::string::npos) << text;
  EXPECT_NE(text.find("\n   SYM 123456794 100.00       f_heavy\n"), std::string::npos) << text;
}

TEST(Tprof, EmptyProfile) {
  std::ostringstream out;
  WriteTprofText(BuildTprof(Profile{}, TprofOptions{}), out);
  EXPECT_NE(out.str().find("Total samples:      0\n"), std::string::npos);
  EXPECT_NE(out.str().find("LAB      TKS   %%%     NAMES\n"), std::string::npos);
}

}  // namespace
}  // namespace arcprof
