// The `report` and `export` subcommands of the arcprof command line.
//
//   arcprof report [-i arcprof.db] [--view tprof] [--by pid,tid,mod,sym] [--min PCT]
//                  [--pid LIST] [--tid LIST] [--comm LIST] [--format text|json]
//   arcprof export --format folded|svg|html|pprof|speedscope|xprof [-i arcprof.db] [-o FILE]
//                  [--pid ..] [--tid ..] [--comm ..] [--root NAME] [--min PCT] [--icicle]
//   arcprof diff BEFORE.db AFTER.db [-o arcprof-diff.svg] ... (reports/diff.h)
//
// Views (report) and formats (export) are looked up by name in small tables, so
// adding one is a single line in report_cli.cpp or one AddView/AddExporter call.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <map>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "reports/diff.h"
#include "reports/export_options.h"
#include "reports/profile.h"
#include "reports/profile_source.h"
#include "reports/thread_filter.h"

namespace arcprof {

// What `arcprof report` was asked for; a view reads the parts it needs.
struct ReportRequest {
  std::string capture_path;
  std::string view = "tprof";
  std::string by = "pid,tid,mod,sym";
  double min_percent = 0;
  ThreadFilter filter;
  std::string format = "text";  // text or json
  // arcflow views (xtree, xarc, xprof); see docs/arcflow.md.
  std::string root;             // --root NAME|REGEX
  bool merge_threads = false;   // --merge-threads
  std::string sort = "base";    // --sort base|cum
  std::string units = "samples";  // --units samples|ms|pct
  std::string interval = "1s";  // --interval: time buckets of the irq view
  std::string metric = "samples";  // --metric samples|cpu|offcpu|wall (reports/metric.h)
};

// Prints one view of `profile`; returns the process exit code (1 for a usage
// error such as a bad --by, after one line on `err`).
using ReportView = std::function<int(const Profile& profile, const ReportRequest& request,
                                     std::ostream& out, std::ostream& err)>;

// Renders `profile` in one export format to `out` (a file or stdout).
using Exporter = std::function<void(const Profile& profile, const ThreadFilter& filter, std::ostream& out)>;

// The arcflow views: xtree, xarc and xprof.
int RunArcflowView(const std::string& view, const Profile& profile, const ReportRequest& request,
                   std::ostream& out, std::ostream& err);
int RunTprofView(const Profile& profile, const ReportRequest& request, std::ostream& out,
                 std::ostream& err);

class ReportCommands {
 public:
  // Adds the subcommands "report" and "export" to `app`. The object must
  // outlive app.parse(): the options are bound to its members.
  explicit ReportCommands(CLI::App& app);
  ReportCommands(const ReportCommands&) = delete;
  ReportCommands& operator=(const ReportCommands&) = delete;

  // Registers (or replaces) a view of `arcprof report --view NAME`.
  void AddView(const std::string& name, ReportView view);
  // Registers (or replaces) a format of `arcprof export --format NAME`.
  // A simple exporter sees the profile after --root/--min (export_scope.h).
  void AddExporter(const std::string& name, Exporter exporter);
  // Registers (or replaces) a format that reads every export option itself.
  void AddExportWriter(const std::string& name, ExportWriter writer);

  // If one of its subcommands was parsed, runs it and returns the process exit
  // code: 0 on success, 1 for usage and output errors, 2 for capture errors.
  std::optional<int> RunIfSelected(std::ostream& out, std::ostream& err);

  CLI::App* report_command() const { return report_; }
  CLI::App* export_command() const { return export_; }

 private:
  int RunReport(std::ostream& out, std::ostream& err);
  int RunExport(std::ostream& out, std::ostream& err);

  CLI::App* report_ = nullptr;
  CLI::App* export_ = nullptr;
  std::map<std::string, ReportView> views_;
  std::map<std::string, ExportWriter> exporters_;
  ReportRequest report_request_;
  StoreRange report_range_;
  StoreRange export_range_;
  bool export_timeline_by_tid_ = false;
  std::string export_input_;
  std::string export_output_;
  std::string export_format_;
  ExportOptions export_options_;
  DiffCommand diff_;
};

}  // namespace arcprof
