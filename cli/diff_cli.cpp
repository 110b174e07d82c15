#include "cli/diff_cli.h"
#include "cli/error_stream.h"

#include "cli/exit_codes.h"
#include "cli/report_cli.h"

#include <sstream>
#include <vector>

#include "model/value_types.h"
#include "reports/export_formats.h"
#include "reports/export_text.h"
#include "reports/flamegraph.h"
#include "store/atomic_file.h"
#include "store/capture_store.h"
#include "store/profile_source.h"

namespace arcprof::cli {
using namespace arcprof::model;
using namespace arcprof::store;
using namespace arcprof::reports;

DiffCommand::DiffCommand(CLI::App& app) {
  command_ = app.add_subcommand(
      "diff", "Compare two captures: a differential flame graph and the functions whose share changed most");
  command_->add_option("before", before_,
                       "The earlier (baseline) capture; with --store a range SINCE..UNTIL (2h..1h)")
      ->required();
  command_->add_option("after", after_, "The later capture; with --store a range (30m.. = until now)")
      ->required();
  command_->add_option("--store", store_dir_,
                       "Compare two time ranges of this continuous store: BEFORE and AFTER are "
                       "SINCE..UNTIL, each time as for --since (30m, @UNIX, 2026-11-26T05:00Z)");
  command_->add_option("-o,--output", output_,
                       "Differential flame graph (SVG, written atomically, mode 0600)")
      ->capture_default_str();
  command_->add_option("--top", top_, "Rows of the table")->capture_default_str()->check(CLI::PositiveNumber);
  command_->add_option("--format", format_, "Table format")
      ->check(CLI::IsMember({"text", "json"}))
      ->capture_default_str();
  AddFilterOptions(command_, options_.filter);
  command_->add_option("--root", options_.root,
                       "Only the subtrees under frames with this name (or whole-name regex)");
  command_->add_option("--min", options_.min_percent,
                       "Fold frames below this percentage of the samples into [pruned]")
      ->check(CLI::Range(0.0, 100.0));
  command_->add_flag("--icicle", options_.icicle, "Draw the graph top-down");
  command_->add_option("--metric", options_.metric,
                       "What the shares are of: samples (default), cpu, " + std::string(model::kOffCpuNs.name) + ", wall, " +
                           std::string(model::kTraceCalls.name) +
                           " or any value type both captures declare (two `arcprof trace` captures: " +
                           std::string(model::kTraceCalls.name) + ", " + std::string(model::kTraceWallNs.name) + ")")
      ->capture_default_str();
}

std::optional<int> DiffCommand::RunIfSelected(std::ostream& out, std::ostream& err) {
  if (!command_->parsed()) return std::nullopt;
  std::vector<FlameTree> trees;
  for (const std::string& path : {before_, after_}) {
    StoreRange range;
    if (!store_dir_.empty()) {
      const size_t dots = path.find("..");
      if (dots == std::string::npos) {
        err << "arcprof diff: with --store, '" << path << "' must be a range SINCE..UNTIL (e.g. 2h..1h, 30m..)\n";
        return 1;
      }
      range.store_dir = store_dir_;
      range.since = path.substr(0, dots);
      range.until = path.substr(dots + 2);
    }
    auto profile = LoadProfile(path, range, err);
    if (!profile) {
      err << ErrorLine("diff", profile.error().message);
      return ExitCode(profile.error());
    }
    auto tree = ExportFlameTree(*profile, options_);
    if (!tree) {
      err << ErrorLine("diff", path + ": " + tree.error().message);
      return ExitCode(tree.error());
    }
    trees.push_back(std::move(*tree));
  }
  const DiffReport report = ComputeDiff(trees[0], trees[1]);

  FlameGraphOptions graph;
  graph.icicle = options_.icicle;
  graph.title = "Differential " + std::string(options_.icicle ? "Icicle" : "Flame") + " Graph";
  graph.subtitle = before_ + " -> " + after_ + " | widths: " + after_ + " | " +
                   WithThousands(report.before_samples) + " -> " + WithThousands(report.after_samples) + " " +
                   (options_.metric == "samples" ? std::string("samples") : options_.metric);
  std::ostringstream svg;
  WriteFlameGraphSvg(DifferentialFlameTree(trees[0], trees[1]), graph, svg);
  Result<void> written =
      AtomicFile::WriteWhole(output_, svg.str(), AtomicFile::Streams::kWriteDirectly);
  if (!written) {
    err << ErrorLine("diff", written.error().message);
    return 1;
  }
  if (format_ == "json") {
    WriteDiffJson(report, before_, after_, output_, top_, out);
  } else {
    WriteDiffText(report, before_, after_, output_, top_, out);
  }
  return out ? 0 : 1;
}

}  // namespace arcprof::cli
