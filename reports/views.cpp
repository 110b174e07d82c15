#include "reports/views.h"

#include "common/text.h"

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
  auto metric = Metric::Select(profile, request.metric);
  if (!metric) {
    err << ErrorLine("report", metric.error().message);
    return 1;
  }
  options.metric = std::move(*metric);
  const TprofReport report = BuildTprof(profile, options);
  if (request.format == "json") {
    WriteTprofJson(report, out);
  } else {
    WriteTprofText(report, out);
  }
  return 0;
}

int RunArcflowView(const std::string& view, const Profile& profile, const ReportRequest& request,
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
  options.metric = request.metric;
  if (auto ok = RenderArcflowView(profile, options, out); !ok) {
    err << ErrorLine("report", ok.error().message);
    return 1;
  }
  return 0;
}

}  // namespace arcprof::reports
