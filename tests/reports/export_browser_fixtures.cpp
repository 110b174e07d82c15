// Writes the inputs of the browser tests (tests/browser/) from the synthetic
// sample profile into DIR: profile.svg, profile.icicle.svg, profile.html,
// profile.speedscope.json, profile.folded, folded.svg (the folded file
// read back and drawn by the SVG writer), and timeline.svg with
// timeline.json (a day's windows of ten processes, "other" and the idle task:
// what the chart must show, for the test to check it against).
#include <fstream>
#include <iostream>
#include <sstream>

#include "store/atomic_file.h"
#include "reports/export_formats.h"
#include "reports/flamegraph.h"
#include "reports/folded.h"
#include "reports/timeline.h"
#include "tests/model/test_profiles.h"

namespace {

bool Write(const std::string& path, const std::string& text) {
  auto file = arcprof::store::AtomicFile::Create(path);
  arcprof::Result<void> r = file ? file->Write(text) : arcprof::Result<void>(file.error());
  if (r) r = file->Commit();
  if (!r) std::cerr << "export_browser_fixtures: " << r.error().message << '\n';
  return r.ok();
}

// Twelve 5-minute windows: the idle task, nine processes with shapes of their
// own (one hot in the middle, one growing, ...), "other"; the stacked total
// peaks at 187%, an awkward maximum for ticks.
arcprof::reports::Timeline SampleTimeline() {
  arcprof::reports::Timeline t;
  t.series = {"swapper (idle)", "cc1plus (4242)", "python3 (1200)", "java (3100)", "gzip (77)",
              "node (5150)",    "sqlite3 (909)",  "xz (3303)",      "sh (12)",     "make (4000)", "other"};
  const uint64_t start = 1795777200ull * 1000000000ull;  // 2026-11-27T11:00:00Z
  const uint64_t window = 300ull * 1000000000ull;
  for (int w = 0; w < 12; ++w) {
    arcprof::reports::TimelineWindow tw;
    tw.start_unix_ns = start + window * static_cast<uint64_t>(w);
    tw.end_unix_ns = tw.start_unix_ns + window;
    const double hot = (w >= 4 && w <= 7) ? 60.0 : 5.0;
    tw.cpu_percent = {40.0 + 2 * w, hot, 3.0 * w, 12.0, w % 2 ? 8.0 : 2.0, 6.0, 4.0, 3.0, 2.0, 1.5, 7.0};
    if (w == 6) tw.cpu_percent[0] = 71.5;  // the peak: 187% stacked
    for (double v : tw.cpu_percent) tw.total_percent += v;
    t.windows.push_back(std::move(tw));
  }
  return t;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: export_browser_fixtures DIR\n";
    return 1;
  }
  const std::string dir = argv[1];
  const arcprof::model::Profile profile = arcprof::testing::SampleProfile();
  bool ok = true;
  auto render = [&](const std::string& name, auto writer, const arcprof::reports::ExportOptions& options) {
    std::ostringstream out;
    arcprof::Result<void> r = writer(profile, options, out);
    if (!r) {
      std::cerr << "export_browser_fixtures: " << name << ": " << r.error().message << '\n';
      ok = false;
      return;
    }
    ok = Write(dir + "/" + name, out.str()) && ok;
  };
  arcprof::reports::ExportOptions options;
  render("profile.svg", &arcprof::reports::ExportSvg, options);
  render("profile.html", &arcprof::reports::ExportHtml, options);
  render("profile.speedscope.json", &arcprof::reports::ExportSpeedscope, options);
  options.icicle = true;
  render("profile.icicle.svg", &arcprof::reports::ExportSvg, options);

  std::ostringstream folded;
  arcprof::reports::WriteFolded(profile, {}, folded);
  ok = Write(dir + "/profile.folded", folded.str()) && ok;
  auto tree = arcprof::reports::ParseFoldedStacks(folded.str());
  if (!tree) {
    std::cerr << "export_browser_fixtures: " << tree.error().message << '\n';
    return 1;
  }
  std::ostringstream svg;
  arcprof::reports::WriteFlameGraphSvg(*tree, {}, svg);
  ok = Write(dir + "/folded.svg", svg.str()) && ok;

  const arcprof::reports::Timeline timeline = SampleTimeline();
  std::ostringstream timeline_svg, timeline_json;
  arcprof::reports::WriteTimelineSvg(timeline, "CPU per process", timeline_svg);
  arcprof::reports::WriteTimelineJson(timeline, timeline_json);
  ok = Write(dir + "/timeline.svg", timeline_svg.str()) && ok;
  ok = Write(dir + "/timeline.json", timeline_json.str()) && ok;
  return ok ? 0 : 1;
}
