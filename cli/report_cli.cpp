#include "cli/report_cli.h"
#include "cli/error_stream.h"

#include "cli/exit_codes.h"
#include "loader/debuginfod_naming.h"
#include "model/value_types.h"
#include "symbolize/debuginfod.h"

#include "store/profile_source.h"
#include "reports/timeline.h"

#include <cmath>
#include <map>
#include <sstream>

#include "reports/arcflow.h"
#include "store/atomic_file.h"
#include "reports/export_scope.h"
#include "store/capture_store.h"
#include "reports/folded.h"
#include "reports/irq_report.h"
#include "model/metric.h"
#include "model/signature.h"
#include "reports/ptt_report.h"
#include "reports/registry.h"
#include "reports/tprof.h"

namespace arcprof::cli {
using namespace arcprof::model;
using namespace arcprof::store;
using namespace arcprof::reports;
namespace {

template <typename Table>
std::string Names(const Table& table) {
  std::string names;
  for (const auto& [name, unused] : table) names += (names.empty() ? "" : ", ") + name;
  return names;
}

}  // namespace

void AddFilterOptions(CLI::App* command, ThreadFilter& filter) {
  command->add_option("--pid", filter.pids, "Only these processes (comma-separated pids)")
      ->delimiter(',');
  command->add_option("--tid", filter.tids, "Only these threads (comma-separated tids)")
      ->delimiter(',');
  command->add_option("--comm", filter.comms,
                      "Only processes or threads with these names (comma-separated)")
      ->delimiter(',');
  command->add_option("--container", filter.containers,
                      "Only processes in these containers (ids or id prefixes, comma-separated)")
      ->delimiter(',');
  command->add_option("--service", filter.services, "Only processes of these services (comma-separated)")
      ->delimiter(',');
  command->add_option("--cgroup", filter.cgroups,
                      "Only processes in this cgroup or below it (a path like /system.slice/nginx.service; "
                      "repeatable)");
}

void AddStoreRangeOptions(CLI::App* command, StoreRange& range) {
  command->add_option("--store", range.store_dir,
                      "Read a continuous store (arcprof continuous) instead of a capture file");
  command->add_option("--since", range.since,
                      "With --store: from this time: 30m (ago), @UNIX_SECONDS or "
                      "2026-11-26T05:00[:00][Z] (default: the oldest window)");
  command->add_option("--until", range.until, "With --store: up to this time (default: now)");
}

ReportCommands::ReportCommands(CLI::App& app)
    : registry_(BuiltinRegistry()), diff_(app) {
  report_request_.capture_path = kDefaultCapturePath;
  export_input_ = kDefaultCapturePath;

  report_ = app.add_subcommand("report", "Print a report of a capture (default view: tprof)");
  report_->add_option("-i,--input", report_request_.capture_path, "Capture file")
      ->capture_default_str();
  report_->add_option("--view", report_request_.view, "Report view: tprof, xtree, xarc, xprof, ptt, irq")
      ->capture_default_str();
  report_->add_option("--root", report_request_.root,
                      "arcflow views: only the subtrees under frames matching NAME or a regex");
  report_->add_flag("--merge-threads", report_request_.merge_threads,
                    "arcflow views: fold all threads into one tree");
  report_->add_option("--sort", report_request_.sort,
                      "xprof: base or cum; ptt: cpu, irq, dispatches, interrupts, pid, tid, "
                      "name, cpi or a --ptt-events counter; tprof: perf's keys pid, tid, dso, sym "
                      "(as --by pid,tid,mod,sym)")
      ->capture_default_str();
  report_->add_option("--units", report_request_.units, "arcflow views: samples, ms or pct")
      ->capture_default_str();
  report_->add_option("--metric", report_request_.metric,
                      "Value of the call-tree views: samples, cpu, " + std::string(model::kOffCpuNs.name) +
                          " or wall (us), or a value type the capture declares")
      ->capture_default_str();
  report_->add_option("--by", report_request_.by,
                      "Nesting levels of the tprof view, any order of pid,tid,mod,sym")
      ->capture_default_str();
  report_->add_option("--min", report_request_.min_percent,
                      "Hide rows below this percentage of all ticks")
      ->check(CLI::Range(0.0, 100.0));
  AddFilterOptions(report_, report_request_.filter);
  report_->add_option("--interval", report_request_.interval,
                      "irq view: time buckets (1s, 250ms, ...)")
      ->capture_default_str();
  auto* format = report_->add_option("--format", report_request_.format, "Output format")
      ->check(CLI::IsMember({"text", "json"}))
      ->capture_default_str();
  // perf's habit: text on standard output is what report does anyway.
  report_->add_flag("--stdio", "Text output (accepted as in perf; text is the default)")
      ->excludes(format);
  AddStoreRangeOptions(report_, report_range_);
  AddDebuginfodOption(report_, report_debuginfod_budget_s_);
  report_->add_flag("--no-params", report_no_params_,
                    "C++ functions without their parameter lists (as c++filt -p)");

  export_ = app.add_subcommand("export", "Convert a capture to another format (docs/exports.md)");
  export_->add_option("--format", export_format_,
                      "Output format: folded, svg, html, pprof, otlp, speedscope, xprof")
      ->required();
  export_->add_option("-i,--input", export_input_, "Capture file")->capture_default_str();
  export_->add_option("-o,--output", export_output_,
                      "Output file (written atomically, mode 0600); standard output when absent");
  AddFilterOptions(export_, export_options_.filter);
  export_->add_option("--root", export_options_.root,
                      "Only the subtrees under frames with this name (or whole-name regex)");
  export_->add_option("--min", export_options_.min_percent,
                      "Fold frames below this percentage of the samples into [pruned]")
      ->check(CLI::Range(0.0, 100.0));
  export_->add_flag("--icicle", export_options_.icicle, "Flame graphs: draw top-down");
  export_->add_option("--group-by", export_options_.group_by,
                      "folded, svg, html: put the service, container or pod above the process")
      ->check(CLI::IsMember({"service", "container", "pod"}));
  export_->add_flag("--lines", export_options_.lines,
                    "folded: Python and JavaScript frames with their file and line");
  export_->add_flag("--by-tid", export_timeline_by_tid_, "timeline-svg: one line per thread");
  AddStoreRangeOptions(export_, export_range_);
  export_->add_option("--metric", export_options_.metric,
                      "Value shown: samples, cpu, " + std::string(model::kOffCpuNs.name) +
                          ", wall or a declared value type (pprof: its default type)")
      ->capture_default_str();
  AddDebuginfodOption(export_, export_debuginfod_budget_s_);
  export_->add_flag("--no-params", export_no_params_,
                    "C++ functions without their parameter lists (as c++filt -p)");
}

void AddDebuginfodOption(CLI::App* command, double& budget_s) {
  command->add_option("--debuginfod-budget", budget_s,
                      "With DEBUGINFOD_URLS set: seconds for fetching the debug files of modules "
                      "whose frames are still unnamed (0: no debuginfod)")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 3600.0));
}

void NameFromDebuginfod(Profile& profile, double budget_s, const char* command, std::ostream& err) {
  if (budget_s <= 0) return;
  auto fetcher = DebuginfodFetcher::FromEnvironment(
      std::chrono::milliseconds(static_cast<int64_t>(budget_s * 1000)));
  if (!fetcher) return;  // DEBUGINFOD_URLS unset or empty
  const DebuginfodNaming named = NameFramesFromDebuginfod(profile, *fetcher, /*wait=*/true);
  const std::string line = DebuginfodSummaryLine(static_cast<int64_t>(named.modules_named),
                                                 static_cast<int64_t>(named.modules_not_found));
  if (!line.empty()) err << "arcprof " << command << ": " << line << '\n';
}

// What report and export do before a view or format sees the profile: load
// the capture or store range, name frames through debuginfod, drop C++
// parameter lists, and check `metric` (each view and format selects it with
// model::Metric). Returns 0, or the exit code after one line on `err`.
static int PrepareProfile(const char* command, const std::string& path, const StoreRange& range,
                   double debuginfod_budget_s, bool no_params, const std::string& metric,
                   Profile& profile, std::ostream& err) {
  auto loaded = LoadProfile(path, range, err);
  if (!loaded) {
    err << ErrorLine(command, loaded.error().message);
    return ExitCode(loaded.error());
  }
  profile = std::move(*loaded);
  NameFromDebuginfod(profile, debuginfod_budget_s, command, err);
  if (no_params) model::DropParams(profile);
  if (auto selected = model::Metric::Select(profile, metric); !selected) {
    err << ErrorLine(command, selected.error().message);
    return 1;
  }
  return 0;
}


void ReportCommands::AddView(const std::string& name, ReportView view) {
  registry_.AddView(name, std::move(view));
}

void ReportCommands::AddExporter(const std::string& name, Exporter exporter) {
  registry_.AddExporter(name, std::move(exporter));
}

void ReportCommands::AddExportWriter(const std::string& name, ExportWriter writer) {
  registry_.AddExportWriter(name, std::move(writer));
}

std::optional<int> ReportCommands::RunIfSelected(std::ostream& out, std::ostream& err) {
  // Views and exports write their errors here: escaped (cli/error_stream.h).
  SafeErrorStream safe_err(err);
  if (report_->parsed()) return RunReport(out, safe_err);
  if (export_->parsed()) return RunExport(out, safe_err);
  if (auto code = diff_.RunIfSelected(out, safe_err)) return code;
  return std::nullopt;
}

int ReportCommands::RunReport(std::ostream& out, std::ostream& err) {
  if (report_request_.view == "timeline") {
    // Per window, not the sum: windows are read one at a time.
    TimelineBuilder builder(report_request_.by == "tid", 8, report_request_.filter);
    auto read = ForEachWindow(report_request_.capture_path, report_range_, err,
                              [&](const Profile& window) { builder.Add(window); });
    if (!read) {
      err << ErrorLine("report", read.error().message);
      return ExitCode(read.error());
    }
    const Timeline timeline = builder.Build();
    if (report_request_.format == "json") {
      WriteTimelineJson(timeline, out);
    } else {
      WriteTimelineText(timeline, out);
    }
    return out ? 0 : 1;
  }
  if (report_request_.view == "tprof" && report_->count("--sort") > 0) {
    // perf's --sort keys name tprof levels: --sort pid,tid,dso,sym is --by pid,tid,mod,sym.
    if (report_->count("--by") > 0) {
      err << ErrorLine("report", "give the tprof levels with --by or with --sort, not both");
      return 1;
    }
    auto by = PerfSortToTprofLevels(report_request_.sort);
    if (!by) {
      err << ErrorLine("report", by.error().message);
      return 1;
    }
    report_request_.by = *by;
  }
  auto view = registry_.views.find(report_request_.view);
  if (view == registry_.views.end()) {
    err << ErrorLine("report", "unknown view '" + report_request_.view + "'; use one of " +
                                   Names(registry_.views) + ", timeline");
    return 1;
  }
  Profile profile;
  if (int code = PrepareProfile("report", report_request_.capture_path, report_range_,
                                report_debuginfod_budget_s_, report_no_params_,
                                report_request_.metric, profile, err)) {
    return code;
  }
  return view->second(profile, report_request_, out, err);
}

int ReportCommands::RunExport(std::ostream& out, std::ostream& err) {
  if (export_format_ == "timeline-svg") {
    TimelineBuilder builder(export_timeline_by_tid_, 10, export_options_.filter);
    auto read = ForEachWindow(export_input_, export_range_, err,
                              [&](const Profile& window) { builder.Add(window); });
    if (!read) {
      err << ErrorLine("export", read.error().message);
      return ExitCode(read.error());
    }
    const std::string title = "CPU per " + std::string(export_timeline_by_tid_ ? "thread" : "process") +
                              " (% of one CPU) - " +
                              (export_range_.selected() ? export_range_.store_dir : export_input_);
    std::ostringstream rendered;
    WriteTimelineSvg(builder.Build(), title, rendered);
    if (export_output_.empty()) {
      out << rendered.str();
      return out ? 0 : 1;
    }
    Result<void> written =
        AtomicFile::WriteWhole(export_output_, rendered.str(), AtomicFile::Streams::kWriteDirectly);
    if (!written) {
      err << ErrorLine("export", written.error().message);
      return 1;
    }
    return 0;
  }
  auto exporter = registry_.formats.find(export_format_);
  if (exporter == registry_.formats.end()) {
    err << ErrorLine("export", "unknown format '" + export_format_ + "'; use one of " +
                                   Names(registry_.formats) + ", timeline-svg");
    return 1;
  }
  // pprof holds every value (--metric is its default type); the other formats show one.
  Profile loaded;
  if (int code = PrepareProfile("export", export_input_, export_range_, export_debuginfod_budget_s_,
                                export_no_params_, export_options_.metric, loaded, err)) {
    return code;
  }
  if (export_output_.empty()) {
    Result<void> written = exporter->second(loaded, export_options_, out);
    if (!written) {
      err << ErrorLine("export", written.error().message);
      return ExitCode(written.error());
    }
    return out ? 0 : 1;
  }
  // Render fully first: the output file appears only once it is complete.
  std::ostringstream rendered;
  if (Result<void> r = exporter->second(loaded, export_options_, rendered); !r) {
    err << ErrorLine("export", r.error().message);
    return ExitCode(r.error());
  }
  Result<void> written =
      AtomicFile::WriteWhole(export_output_, rendered.str(), AtomicFile::Streams::kWriteDirectly);
  if (!written) {
    err << ErrorLine("export", written.error().message);
    return 1;
  }
  return 0;
}

}  // namespace arcprof::cli
