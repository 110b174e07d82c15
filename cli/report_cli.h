// The `report` and `export` subcommands of the arcprof command line.
//
//   arcprof report [-i arcprof.db] [--view tprof] [--by pid,tid,mod,sym] [--min PCT]
//                  [--pid LIST] [--tid LIST] [--comm LIST] [--format text|json]
//   arcprof export --format folded|svg|html|pprof|speedscope|xprof [-i arcprof.db] [-o FILE]
//                  [--pid ..] [--tid ..] [--comm ..] [--root NAME] [--min PCT] [--icicle]
//   arcprof diff BEFORE.db AFTER.db [-o arcprof-diff.svg] ... (reports/diff.h)
//
// Views (report) and formats (export) are looked up by name in the one registry
// (reports/registry.h): adding one is a line there or one AddView/AddExporter call.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <map>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "cli/diff_cli.h"
#include "reports/export_options.h"
#include "reports/registry.h"
#include "reports/views.h"
#include "model/profile.h"
#include "store/profile_source.h"
#include "model/thread_filter.h"

namespace arcprof::cli {

// The thread selection of every view, export and diff: --pid, --tid, --comm,
// --container, --service, --cgroup (model/thread_filter.h).
void AddFilterOptions(CLI::App* command, model::ThreadFilter& filter);

// --store/--since/--until: read a range of a continuous store (store/profile_source.h).
void AddStoreRangeOptions(CLI::App* command, store::StoreRange& range);

// --debuginfod-budget of report and export (record has its own, same default).
void AddDebuginfodOption(CLI::App* command, double& budget_s);

// With DEBUGINFOD_URLS set, names the frames of stripped modules that are
// still unnamed in a capture (they keep module and offset) from debug files
// fetched by build-id within `budget_s`, and prints record's summary line
// ("1 module named from debuginfod, 0 not found") on `err`.
void NameFromDebuginfod(model::Profile& profile, double budget_s, const char* command, std::ostream& err);

class ReportCommands {
 public:
  // Adds the subcommands "report" and "export" to `app`. The object must
  // outlive app.parse(): the options are bound to its members.
  explicit ReportCommands(CLI::App& app);
  ReportCommands(const ReportCommands&) = delete;
  ReportCommands& operator=(const ReportCommands&) = delete;

  // Registers (or replaces) a view of `arcprof report --view NAME`.
  void AddView(const std::string& name, reports::ReportView view);
  // Registers (or replaces) a format of `arcprof export --format NAME`.
  // A simple exporter sees the profile after --root/--min (export_scope.h).
  void AddExporter(const std::string& name, reports::Exporter exporter);
  // Registers (or replaces) a format that reads every export option itself.
  void AddExportWriter(const std::string& name, reports::ExportWriter writer);

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
  reports::Registry registry_;  // the views and formats (reports/registry.h)
  reports::ReportRequest report_request_;
  store::StoreRange report_range_;
  store::StoreRange export_range_;
  double report_debuginfod_budget_s_ = 20;
  double export_debuginfod_budget_s_ = 20;
  bool report_no_params_ = false;
  bool export_no_params_ = false;
  bool export_timeline_by_tid_ = false;
  std::string export_input_;
  std::string export_output_;
  std::string export_format_;
  reports::ExportOptions export_options_;
  DiffCommand diff_;
};

}  // namespace arcprof::cli
