// Writes the inputs of the browser tests (tests/browser/) from the synthetic
// sample profile into DIR: profile.svg, profile.icicle.svg, profile.html,
// profile.speedscope.json, profile.folded, and folded.svg (the folded file
// read back and drawn by the SVG writer).
#include <fstream>
#include <iostream>
#include <sstream>

#include "store/atomic_file.h"
#include "reports/export_formats.h"
#include "reports/flamegraph.h"
#include "reports/folded.h"
#include "tests/reports/test_profiles.h"

namespace {

bool Write(const std::string& path, const std::string& text) {
  auto file = arcprof::store::AtomicFile::Create(path);
  arcprof::Result<void> r = file ? file->Write(text) : arcprof::Result<void>(file.error());
  if (r) r = file->Commit();
  if (!r) std::cerr << "export_browser_fixtures: " << r.error().message << '\n';
  return r.ok();
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
  return ok ? 0 : 1;
}
