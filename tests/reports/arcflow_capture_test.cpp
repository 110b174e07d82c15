// The arcflow reports on a real capture: `arcprof record` of the ground-truth
// program (main -> outer -> {f_heavy 75%, f_light 25%}), read back from disk.
#include <gtest/gtest.h>

#include <sstream>

#include <nlohmann/json.hpp>

#include "reports/arcflow.h"
#include "store/capture_store.h"
#include "tests/loader/runtime_util.h"
#include "tests/layer_names.h"

namespace arcprof::testing {
namespace {

const std::string kArcprof = ARCPROF_BIN;
const std::string kGroundTruth = std::string(ARCPROF_TEST_PROGRAMS) + "/ground_truth";

const ArcflowLine* Find(const ArcflowProfile& model, const std::vector<ArcflowLine>& lines,
                        std::string_view name) {
  for (const auto& line : lines) {
    if (model.name(line.consumer) == name) return &line;
  }
  return nullptr;
}

TEST(ArcflowCapture, GroundTruthInvariantsAndShares) {
  ARCPROF_REQUIRE_RECORD_CAPABLE();
  TempDir tmp;
  const std::string db = tmp.path("gt.db");
  Subprocess rec({kArcprof, "record", "-q", "-o", db, "--", kGroundTruth, "4"});
  ASSERT_EQ(rec.Wait(), 0) << rec.stderr_text();
  const Profile profile = LoadCapture(db);

  // Every thread of the capture, kernel frames and unknown frames included.
  const ArcflowProfile all = ArcflowFromProfile(profile, {}, false);
  // 4 s at 999 Hz is about 4000 samples when the machine is idle; other load
  // only lowers the count.
  ASSERT_GT(all.total(), 500u);
  for (const ArcflowProfile& model : {all, MergeThreads(all), Prune(all, 0.5)}) {
    for (const XarcStanza& s : ComputeXarc(model)) {
      uint64_t n = 0, base = 0, cum = 0, child_cum = 0;
      for (const auto& p : s.parents) {
        n += p.n;
        base += p.base;
        cum += p.cum;
      }
      for (const auto& c : s.children) child_cum += c.cum;
      const std::string& name = model.name(s.self.consumer);
      ASSERT_EQ(n, s.self.n) << name;
      ASSERT_EQ(base, s.self.base) << name;
      ASSERT_EQ(cum, s.self.cum) << name;
      ASSERT_EQ(child_cum, s.self.cum - s.self.base) << name;
    }
  }

  model::ThreadFilter filter;
  filter.comms = {"ground_truth"};
  const ArcflowProfile gt = ArcflowFromProfile(profile, filter, true);
  const auto xprof = ComputeXprof(gt, ArcflowSort::kBase);
  const ArcflowLine* heavy = Find(gt, xprof, "f_heavy");
  const ArcflowLine* light = Find(gt, xprof, "f_light");
  const ArcflowLine* main = Find(gt, xprof, "main");
  ASSERT_NE(heavy, nullptr);
  ASSERT_NE(light, nullptr);
  ASSERT_NE(main, nullptr);
  const double share = static_cast<double>(heavy->base) / static_cast<double>(heavy->base + light->base);
  EXPECT_NEAR(share, 0.75, 0.03);
  // Nearly every sample of the busy program is under main.
  EXPECT_GT(static_cast<double>(main->cum), 0.9 * static_cast<double>(gt.total()));

  // --root main: the task's total is main's cum; the report renders.
  ArcflowOptions options;
  options.filter = filter;
  options.root = "main";
  options.view = ArcflowView::kXprof;
  options.format = ArcflowFormat::kJson;
  options.units = ArcflowUnits::kMs;
  std::ostringstream out;
  Result<void> r = RenderArcflowView(profile, options, out);
  ASSERT_TRUE(r.ok()) << r.error().message;
  const auto json = nlohmann::json::parse(out.str());
  EXPECT_EQ(json["total"].get<uint64_t>(), main->cum);
  EXPECT_EQ(json["rows"][0]["name"], "f_heavy");
  // 999 Hz: a sample is 1.001 ms.
  EXPECT_NEAR(json["rows"][0]["base_ms"].get<double>(), static_cast<double>(heavy->base) * 1000.0 / 999.0,
              1e-6);
}

}  // namespace
}  // namespace arcprof::testing
