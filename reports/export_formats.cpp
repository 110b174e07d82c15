#include "reports/export_formats.h"

#include <memory>
#include <ostream>
#include <sstream>

#include "reports/arcflow.h"
#include "reports/export_scope.h"
#include "reports/export_text.h"
#include "reports/folded.h"
#include "reports/otlp.h"
#include "reports/pprof.h"
#include "reports/speedscope.h"
#include "reports/tprof.h"

namespace arcprof::reports {
using namespace arcprof::model;
namespace {

// The profile a writer reads: the capture itself when only a thread filter
// was given (no copy), else the ScopeProfile copy with the filter applied.
struct Selection {
  std::unique_ptr<Profile> copy;
  const Profile* profile = nullptr;
  ThreadFilter filter;
  Metric metric;  // --metric, resolved on the whole capture
  uint64_t samples = 0;  // Σ metric over the selected threads
};

Result<Selection> Select(const Profile& profile, const ExportOptions& options) {
  Selection s;
  auto metric = Metric::Select(profile, options.metric);
  if (!metric) return metric.error();
  s.metric = std::move(*metric);
  if (ScopeIsOnlyFilter(options)) {
    s.profile = &profile;
    s.filter = options.filter;
  } else {
    auto scoped = ScopeProfile(profile, options);
    if (!scoped) return scoped.error();
    s.copy = std::make_unique<Profile>(std::move(*scoped));
    s.profile = s.copy.get();
  }
  const size_t threads = s.profile->threads.size();
  for (size_t t = 0; t < threads; ++t) {
    if (!s.filter.Matches(s.profile->threads[t])) continue;
    s.samples += s.metric.Total(s.profile->threads[t]);
  }
  if (s.samples == 0) {
    uint64_t whole = 0;
    for (const ThreadRecord& thread : profile.threads) whole += s.metric.Total(thread);
    if (whole == 0) return MakeError("the capture holds no samples; record a busier workload or a longer time");
    return MakeError(options.filter.empty()
                         ? "no samples under --root '" + options.root + "'"
                         : "no samples match the --pid/--tid/--comm/--container/--service/--cgroup filter; list "
                           "the threads with `arcprof report --by pid,tid` (containers: --by container)");
  }
  return s;
}

void WriteTprofHtml(const std::vector<TprofRow>& rows, int depth, std::ostream& out) {
  for (const TprofRow& row : rows) {
    out << "<tr class=\"" << TprofLevelName(row.level) << "\"><td>" << TprofLevelLabel(row.level)
        << "</td><td class=\"num\">" << row.ticks << "</td><td class=\"num\">" << Fixed(row.percent, 2)
        << "</td><td style=\"padding-left:" << depth * 1.5 << "em\">" << XmlEscape(row.name) << "</td></tr>\n";
    WriteTprofHtml(row.children, depth + 1, out);
  }
}

constexpr size_t kHtmlXprofRows = 1000;

}  // namespace

std::string CaptureSubtitle(const Profile& profile, uint64_t selected_samples) {
  std::string s;
  if (!profile.meta.target.empty()) s += profile.meta.target + " | ";
  s += profile.meta.event + " " + std::to_string(profile.meta.frequency_hz) + " Hz | " +
       WithThousands(selected_samples) + " samples";
  if (profile.meta.end_monotonic_ns > profile.meta.start_monotonic_ns) {
    s += " in " + Fixed((profile.meta.end_monotonic_ns - profile.meta.start_monotonic_ns) / 1e9, 2) + " s";
  }
  if (!profile.meta.host.empty()) s += " | " + profile.meta.host;
  return s;
}

Result<FlameTree> ExportFlameTree(const Profile& profile, const ExportOptions& options) {
  auto selection = Select(profile, options);
  if (!selection) return selection.error();
  return FlameTreeFromProfile(*selection->profile, selection->filter, selection->metric, options.group_by);
}

Result<void> ExportSvg(const Profile& profile, const ExportOptions& options, std::ostream& out) {
  auto tree = ExportFlameTree(profile, options);
  if (!tree) return tree.error();
  FlameGraphOptions graph;
  graph.icicle = options.icicle;
  graph.title = options.icicle ? "Icicle Graph" : "Flame Graph";
  graph.subtitle = CaptureSubtitle(profile, tree->total());
  WriteFlameGraphSvg(*tree, graph, out);
  return {};
}

Result<void> ExportPprof(const Profile& profile, const ExportOptions& options, std::ostream& out) {
  auto selection = Select(profile, options);
  if (!selection) return selection.error();
  // cpu per sample from the whole capture, whatever --root/--min cut.
  auto cpu = Metric::Select(profile, "cpu");
  if (!cpu) return cpu.error();
  auto bytes = PprofFile(*selection->profile, selection->filter, options.metric, &*cpu);
  if (!bytes) return bytes.error();
  out << *bytes;
  return {};
}

Result<void> ExportOtlp(const Profile& profile, const ExportOptions& options, std::ostream& out) {
  auto selection = Select(profile, options);
  if (!selection) return selection.error();
  auto cpu = Metric::Select(profile, "cpu");
  if (!cpu) return cpu.error();
  out << EncodeOtlp(*selection->profile, selection->filter, {}, &*cpu);
  return {};
}

Result<void> ExportFolded(const Profile& profile, const ExportOptions& options, std::ostream& out) {
  auto selection = Select(profile, options);
  if (!selection) return selection.error();
  WriteFolded(*selection->profile, selection->filter, out, selection->metric, options.group_by, options.lines);
  return {};
}

Result<void> ExportSpeedscope(const Profile& profile, const ExportOptions& options, std::ostream& out) {
  auto selection = Select(profile, options);
  if (!selection) return selection.error();
  WriteSpeedscope(*selection->profile, selection->filter, out, selection->metric);
  return {};
}

Result<void> ExportXprof(const Profile& profile, const ExportOptions& options, std::ostream& out) {
  ArcflowOptions arcflow;
  arcflow.view = ArcflowView::kXprof;
  arcflow.format = ArcflowFormat::kText;
  arcflow.min_pct = options.min_percent;
  arcflow.root = options.root;
  arcflow.filter = options.filter;
  arcflow.metric = options.metric;
  return RenderArcflowView(profile, arcflow, out);
}

Result<void> ExportHtml(const Profile& profile, const ExportOptions& options, std::ostream& out) {
  // The flame graph honours every option; the tprof table reads the --root
  // selection (its own --min hides rows instead of folding frames).
  ExportOptions rooted = options;
  rooted.min_percent = 0;
  auto selection = Select(profile, rooted);
  if (!selection) return selection.error();
  auto tree = ExportFlameTree(profile, options);
  if (!tree) return tree.error();

  FlameGraphOptions graph;
  graph.icicle = options.icicle;
  graph.title = options.icicle ? "Icicle Graph" : "Flame Graph";
  graph.standalone = false;

  TprofOptions tprof_options;
  tprof_options.min_percent = options.min_percent;
  tprof_options.filter = selection->filter;
  tprof_options.metric = selection->metric;
  const TprofReport tprof = BuildTprof(*selection->profile, tprof_options);

  ArcflowProfile model = ArcflowFromProfile(profile, options.filter, true, selection->metric);
  if (!options.root.empty()) {
    auto restricted = RestrictToRoot(model, options.root);
    if (!restricted) return restricted.error();
    model = std::move(*restricted);
  }
  if (options.min_percent > 0) model = Prune(model, options.min_percent);
  const std::vector<ArcflowLine> xprof = ComputeXprof(model, ArcflowSort::kBase);
  const double xprof_total = static_cast<double>(model.total());

  const std::string subtitle = CaptureSubtitle(profile, tree->total());
  out << "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
      << "<title>arcprof: " << XmlEscape(profile.meta.target.empty() ? "profile" : profile.meta.target)
      << "</title>\n<style>\n"
         "body { font-family: Verdana, sans-serif; font-size: 13px; margin: 1em; }\n"
         "h1 { font-size: 20px; } h2 { font-size: 16px; margin-top: 1.5em; }\n"
         "table { border-collapse: collapse; }\n"
         "td, th { padding: 1px 8px; text-align: left; white-space: pre; }\n"
         "td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }\n"
         "tr:nth-child(even) { background: #f4f4f4; }\n"
         "tr.pid td { font-weight: bold; }\n"
         "nav a { margin-right: 1em; }\n"
         "</style></head><body>\n"
      << "<h1>arcprof profile</h1>\n<p class=\"summary\">" << XmlEscape(subtitle) << "</p>\n"
      << "<nav><a href=\"#flamegraph\">Flame graph</a><a href=\"#tprof\">tprof</a>"
         "<a href=\"#xprof\">xprof</a></nav>\n"
      << "<section id=\"flamegraph\">\n";
  WriteFlameGraphSvg(*tree, graph, out);
  out << "</section>\n<section id=\"tprof\"><h2>tprof: ticks by process, thread, module, symbol</h2>\n"
      << "<table class=\"tprof\"><thead><tr><th>LAB</th><th class=\"num\">TKS</th><th class=\"num\">%%%</th>"
         "<th>NAMES</th></tr></thead><tbody>\n";
  WriteTprofHtml(tprof.rows, 0, out);
  out << "</tbody></table></section>\n<section id=\"xprof\"><h2>xprof: functions by self samples</h2>\n"
      << "<table class=\"xprof\"><thead><tr><th class=\"num\">Base</th><th class=\"num\">Base %</th>"
         "<th class=\"num\">Cum</th><th class=\"num\">Cum %</th><th class=\"num\">Calls/samples</th>"
         "<th>Name</th></tr></thead><tbody>\n";
  size_t shown = 0;
  for (const ArcflowLine& line : xprof) {
    const ConsumerKind kind = model.kind(line.consumer);
    if (kind != ConsumerKind::kFunction && kind != ConsumerKind::kPruned) continue;
    if (++shown > kHtmlXprofRows) break;
    out << "<tr><td class=\"num\">" << line.base << "</td><td class=\"num\">"
        << Fixed(xprof_total > 0 ? 100.0 * line.base / xprof_total : 0, 2) << "</td><td class=\"num\">"
        << line.cum << "</td><td class=\"num\">" << Fixed(xprof_total > 0 ? 100.0 * line.cum / xprof_total : 0, 2)
        << "</td><td class=\"num\">" << line.n << "</td><td>" << XmlEscape(model.name(line.consumer)) << "</td></tr>\n";
  }
  out << "</tbody></table>";
  if (shown > kHtmlXprofRows) {
    out << "<p>Only the first " << kHtmlXprofRows
        << " functions are listed; see <code>arcprof report --view xprof</code> for all.</p>";
  }
  out << "</section>\n</body></html>\n";
  return {};
}

}  // namespace arcprof::reports
