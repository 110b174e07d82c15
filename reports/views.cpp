#include "reports/views.h"

#include "common/text.h"

#include <cmath>
#include <map>

#include "reports/arcflow.h"
#include "reports/tprof.h"

namespace arcprof::reports {
using namespace arcprof::model;

int RunTprofView(const Profile& profile, const ReportRequest& request, std::ostream& out,
                 std::ostream& err) {
  auto levels = ParseTprofLevels(request.by);
  if (!levels) {
    err << ErrorLine("report", levels.error().message);
    return 1;
  }
  TprofOptions options;
  options.levels = std::move(*levels);
  options.min_percent = request.min_percent;
  options.filter = request.filter;
  const TprofReport report = BuildTprof(profile, options);
  if (request.format == "json") {
    WriteTprofJson(report, out);
  } else {
    WriteTprofText(report, out);
  }
  return 0;
}

Profile WithPttTime(const Profile& profile) {
  // Each thread's samples share out the CPU time PTT measured for it
  // (interrupts excluded), in microseconds; threads PTT did not see keep the
  // sampling interval as their weight.
  Profile scaled = profile;
  std::map<uint64_t, uint64_t> cpu_ns;
  for (const PttThread& t : profile.ptt.threads) {
    cpu_ns[static_cast<uint64_t>(t.pid) << 32 | t.tid] += t.cpu_ns;
  }
  const double interval_us =
      profile.meta.frequency_hz ? 1e6 / static_cast<double>(profile.meta.frequency_hz) : 1000.0;
  for (size_t i = 0; i < scaled.threads.size(); ++i) {
    const ThreadRecord& t = scaled.threads[i];
    const uint64_t samples = scaled.threads[i].tree.total(kSamplesValue);
    auto it = cpu_ns.find(static_cast<uint64_t>(t.pid) << 32 | t.tid);
    const double us_per_sample = it != cpu_ns.end() && samples > 0 && it->second > 0
                                     ? static_cast<double>(it->second) / 1000.0 / samples
                                     : interval_us;
    scaled.threads[i].tree.TransformValues(kSamplesValue, [&](uint32_t, uint64_t base) {
      return static_cast<uint64_t>(std::llround(static_cast<double>(base) * us_per_sample));
    });
  }
  // The arcflow header prints this binding; the suffix after the last '-' is the scale.
  scaled.meta.unit = "ptt-cpu-us";
  return scaled;
}

int RenderArcflow(const std::string& view, const Profile& profile, const ReportRequest& request,
                  std::ostream& out, std::ostream& err);

int RunArcflowView(const std::string& view, const Profile& profile, const ReportRequest& request,
                   std::ostream& out, std::ostream& err) {
  // With per-thread time in the capture, milliseconds are measured CPU time,
  // not samples times the sampling interval.
  if (request.units == "ms" && profile.ptt.recorded && request.metric == "samples") {
    return RenderArcflow(view, WithPttTime(profile), request, out, err);
  }
  return RenderArcflow(view, profile, request, out, err);
}

int RenderArcflow(const std::string& view, const Profile& profile, const ReportRequest& request,
                  std::ostream& out, std::ostream& err) {
  ArcflowOptions options;
  auto parsed_view = ParseArcflowView(view);
  auto sort = ParseArcflowSort(request.sort);
  auto units = ParseArcflowUnits(request.units);
  for (const Error* e : {parsed_view.ok() ? nullptr : &parsed_view.error(),
                         sort.ok() ? nullptr : &sort.error(),
                         units.ok() ? nullptr : &units.error()}) {
    if (e) {
      err << ErrorLine("report", e->message);
      return 1;
    }
  }
  options.view = *parsed_view;
  options.sort = *sort;
  options.units = *units;
  options.format = request.format == "json" ? ArcflowFormat::kJson : ArcflowFormat::kText;
  options.min_pct = request.min_percent;
  options.root = request.root;
  options.merge_threads = request.merge_threads;
  options.filter = request.filter;
  if (auto ok = RenderArcflowView(profile, options, out); !ok) {
    err << ErrorLine("report", ok.error().message);
    return 1;
  }
  return 0;
}

}  // namespace arcprof::reports
