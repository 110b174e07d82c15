#include "reports/registry.h"

#include "reports/export_formats.h"
#include "reports/export_scope.h"
#include "reports/folded.h"
#include "reports/irq_report.h"
#include "reports/ptt_report.h"

namespace arcprof::reports {
using namespace arcprof::model;

void Registry::AddView(const std::string& name, ReportView view) { views[name] = std::move(view); }

void Registry::AddExporter(const std::string& name, Exporter exporter) {
  formats[name] = [exporter = std::move(exporter)](const Profile& profile, const ExportOptions& options,
                                                   std::ostream& out) -> Result<void> {
    // The metric is resolved on the whole capture (its per-thread rates),
    // then reads the scoped copy.
    auto metric = Metric::Select(profile, options.metric);
    if (!metric) return metric.error();
    if (ScopeIsOnlyFilter(options)) {
      exporter(profile, options.filter, out, *metric);
      return {};
    }
    auto scoped = ScopeProfile(profile, options);
    if (!scoped) return scoped.error();
    exporter(*scoped, ThreadFilter{}, out, *metric);
    return {};
  };
}

void Registry::AddExportWriter(const std::string& name, ExportWriter writer) {
  formats[name] = std::move(writer);
}

Registry BuiltinRegistry() {
  Registry r;
  auto arcflow = [](const char* view) {
    return [view](const Profile& p, const ReportRequest& request, std::ostream& out, std::ostream& err) {
      return RunArcflowView(view, p, request, out, err);
    };
  };
  r.AddView("tprof", &RunTprofView);
  r.AddView("ptt", &RunPttView);
  r.AddView("irq", &RunIrqView);
  r.AddView("xtree", arcflow("xtree"));
  r.AddView("xarc", arcflow("xarc"));
  r.AddView("xprof", arcflow("xprof"));

  r.AddExportWriter("folded", &ExportFolded);
  r.AddExportWriter("svg", &ExportSvg);
  r.AddExportWriter("html", &ExportHtml);
  r.AddExportWriter("pprof", &ExportPprof);
  r.AddExportWriter("otlp", &ExportOtlp);
  r.AddExportWriter("speedscope", &ExportSpeedscope);
  r.AddExportWriter("xprof", &ExportXprof);
  return r;
}

}  // namespace arcprof::reports
