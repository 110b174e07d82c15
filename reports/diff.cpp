#include "reports/diff.h"

#include "reports/profile_source.h"

#include <algorithm>
#include <cmath>
#include <ostream>
#include <sstream>
#include <unordered_map>

#include "reports/atomic_file.h"
#include "reports/capture_store.h"
#include "reports/export_formats.h"
#include "reports/export_text.h"

namespace arcprof {
namespace {

struct Shares {
  uint64_t self = 0;
  uint64_t total = 0;
};

// Self and inclusive samples per name. A recursive function counts once per
// stack: a node adds its value only when no ancestor has the same name.
std::unordered_map<std::string, Shares> SharesByName(const FlameTree& tree) {
  std::unordered_map<std::string, Shares> shares;
  std::unordered_map<std::string, uint32_t> on_path;
  struct Visit {
    uint32_t node;
    bool leaving;
  };
  std::vector<Visit> stack;
  for (uint32_t child : tree.children(FlameTree::kRoot)) stack.push_back({child, false});
  while (!stack.empty()) {
    const Visit v = stack.back();
    stack.pop_back();
    const std::string& name = tree.name(v.node);
    if (v.leaving) {
      if (--on_path[name] == 0) on_path.erase(name);
      continue;
    }
    Shares& s = shares[name];
    s.self += tree.node(v.node).self;
    if (on_path[name]++ == 0) s.total += tree.node(v.node).value;
    stack.push_back({v.node, true});
    for (uint32_t child : tree.children(v.node)) stack.push_back({child, false});
  }
  return shares;
}

double Percent(uint64_t part, uint64_t whole) {
  return whole == 0 ? 0 : 100.0 * static_cast<double>(part) / static_cast<double>(whole);
}

std::string Signed(double v) {
  std::string s = Fixed(v, 2);
  if (s[0] != '-' && s != "0.00") s.insert(0, "+");
  return s;
}

}  // namespace

DiffReport ComputeDiff(const FlameTree& before, const FlameTree& after) {
  DiffReport report;
  report.before_samples = before.total();
  report.after_samples = after.total();
  const auto a = SharesByName(before);
  const auto b = SharesByName(after);
  std::unordered_map<std::string, DiffRow> rows;
  for (const auto& [name, s] : a) {
    DiffRow& row = rows[name];
    row.name = name;
    row.self_before = Percent(s.self, report.before_samples);
    row.total_before = Percent(s.total, report.before_samples);
  }
  for (const auto& [name, s] : b) {
    DiffRow& row = rows[name];
    row.name = name;
    row.self_after = Percent(s.self, report.after_samples);
    row.total_after = Percent(s.total, report.after_samples);
  }
  for (auto& [name, row] : rows) report.rows.push_back(std::move(row));
  std::sort(report.rows.begin(), report.rows.end(), [](const DiffRow& x, const DiffRow& y) {
    const double sx = std::fabs(x.self_delta()), sy = std::fabs(y.self_delta());
    if (sx != sy) return sx > sy;
    const double tx = std::fabs(x.total_delta()), ty = std::fabs(y.total_delta());
    if (tx != ty) return tx > ty;
    return x.name < y.name;
  });
  return report;
}

FlameTree DifferentialFlameTree(const FlameTree& before, const FlameTree& after) {
  FlameTree out = after;
  const auto& nodes = out.nodes();
  std::vector<uint32_t> counterpart(nodes.size(), FlameTree::kNone);
  out.delta_points.assign(nodes.size(), 0);
  counterpart[FlameTree::kRoot] = FlameTree::kRoot;
  for (size_t i = 1; i < nodes.size(); ++i) {
    const uint32_t parent = counterpart[nodes[i].parent];
    if (parent != FlameTree::kNone) {
      counterpart[i] = before.FindChild(parent, out.name(static_cast<uint32_t>(i)), nodes[i].kind);
    }
    const uint64_t was = counterpart[i] == FlameTree::kNone ? 0 : before.node(counterpart[i]).value;
    out.delta_points[i] = Percent(nodes[i].value, after.total()) - Percent(was, before.total());
  }
  return out;
}

void WriteDiffText(const DiffReport& report, const std::string& before_name, const std::string& after_name,
                   const std::string& svg_path, size_t top, std::ostream& out) {
  out << "arcprof diff: " << before_name << " -> " << after_name << '\n'
      << "Samples:     " << WithThousands(report.before_samples) << " -> " << WithThousands(report.after_samples)
      << " (shares are of each capture's own total)\n";
  if (!svg_path.empty()) {
    out << "Flame graph: " << svg_path << " (widths: " << after_name << "; red: share grew, blue: shrank)\n";
  }
  out << "\n  SELF BEFORE   SELF AFTER    DELTA  TOTAL BEFORE  TOTAL AFTER    DELTA  NAME\n";
  size_t shown = 0;
  char line[160];
  for (const DiffRow& row : report.rows) {
    if (shown++ == top) break;
    std::snprintf(line, sizeof(line), "  %10s%%  %10s%%  %7s  %11s%%  %10s%%  %7s  ", Fixed(row.self_before, 2).c_str(),
                  Fixed(row.self_after, 2).c_str(), Signed(row.self_delta()).c_str(),
                  Fixed(row.total_before, 2).c_str(), Fixed(row.total_after, 2).c_str(),
                  Signed(row.total_delta()).c_str());
    out << line << ValidUtf8(row.name) << '\n';
  }
}

void WriteDiffJson(const DiffReport& report, const std::string& before_name, const std::string& after_name,
                   const std::string& svg_path, size_t top, std::ostream& out) {
  out << "{\"before\":" << JsonString(before_name) << ",\"after\":" << JsonString(after_name)
      << ",\"before_samples\":" << report.before_samples << ",\"after_samples\":" << report.after_samples
      << ",\"flame_graph\":" << JsonString(svg_path) << ",\"rows\":[";
  size_t shown = 0;
  for (const DiffRow& row : report.rows) {
    if (shown == top) break;
    out << (shown++ ? ",\n" : "\n") << "{\"name\":" << JsonString(row.name)
        << ",\"self_before\":" << Fixed(row.self_before, 4) << ",\"self_after\":" << Fixed(row.self_after, 4)
        << ",\"self_delta\":" << Fixed(row.self_delta(), 4) << ",\"total_before\":" << Fixed(row.total_before, 4)
        << ",\"total_after\":" << Fixed(row.total_after, 4) << ",\"total_delta\":" << Fixed(row.total_delta(), 4)
        << '}';
  }
  out << "\n]}\n";
}

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
  command_->add_option("--pid", options_.filter.pids, "Only these processes (comma-separated pids)")
      ->delimiter(',');
  command_->add_option("--tid", options_.filter.tids, "Only these threads (comma-separated tids)")
      ->delimiter(',');
  command_->add_option("--comm", options_.filter.comms,
                       "Only processes or threads with these names (comma-separated)")
      ->delimiter(',');
  command_->add_option("--root", options_.root,
                       "Only the subtrees under frames with this name (or whole-name regex)");
  command_->add_option("--min", options_.min_percent,
                       "Fold frames below this percentage of the samples into [pruned]")
      ->check(CLI::Range(0.0, 100.0));
  command_->add_flag("--icicle", options_.icicle, "Draw the graph top-down");
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
      err << "arcprof diff: " << profile.error().message << '\n';
      return profile.error().exit_code;
    }
    auto tree = ExportFlameTree(*profile, options_);
    if (!tree) {
      err << "arcprof diff: " << path << ": " << tree.error().message << '\n';
      return tree.error().exit_code;
    }
    trees.push_back(std::move(*tree));
  }
  const DiffReport report = ComputeDiff(trees[0], trees[1]);

  FlameGraphOptions graph;
  graph.icicle = options_.icicle;
  graph.title = "Differential " + std::string(options_.icicle ? "Icicle" : "Flame") + " Graph";
  graph.subtitle = before_ + " -> " + after_ + " | widths: " + after_ + " | " +
                   WithThousands(report.before_samples) + " -> " + WithThousands(report.after_samples) + " samples";
  std::ostringstream svg;
  WriteFlameGraphSvg(DifferentialFlameTree(trees[0], trees[1]), graph, svg);
  auto file = AtomicFile::Create(output_, AtomicFile::Streams::kWriteDirectly);
  Result<void> written = file ? file->Write(svg.str()) : Result<void>(file.error());
  if (written) written = file->Commit();
  if (!written) {
    err << "arcprof diff: " << written.error().message << '\n';
    return 1;
  }
  if (format_ == "json") {
    WriteDiffJson(report, before_, after_, output_, top_, out);
  } else {
    WriteDiffText(report, before_, after_, output_, top_, out);
  }
  return out ? 0 : 1;
}

}  // namespace arcprof
