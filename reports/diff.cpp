#include "reports/diff.h"

#include <algorithm>
#include <cmath>
#include <ostream>
#include <sstream>
#include <unordered_map>

#include "reports/export_formats.h"
#include "reports/export_text.h"
#include "reports/json_writer.h"

namespace arcprof::reports {
using namespace arcprof::model;
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
  const size_t size = out.size();
  std::vector<uint32_t> counterpart(size, FlameTree::kNone);
  out.delta_points.assign(size, 0);
  counterpart[FlameTree::kRoot] = FlameTree::kRoot;
  for (uint32_t i = 1; i < size; ++i) {
    const FlameTree::Node node = out.node(i);
    const uint32_t parent = counterpart[node.parent];
    if (parent != FlameTree::kNone) counterpart[i] = before.FindChild(parent, out.name(i), node.kind);
    const uint64_t was = counterpart[i] == FlameTree::kNone ? 0 : before.node(counterpart[i]).value;
    out.delta_points[i] = Percent(node.value, after.total()) - Percent(was, before.total());
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
  // Shares in percent, rounded to 4 decimals as the text table is to 2.
  auto share = [](double value) { return std::isfinite(value) ? std::round(value * 1e4) / 1e4 + 0.0 : 0.0; };
  Json rows = Json::array();
  for (const DiffRow& row : report.rows) {
    if (rows.size() == top) break;
    rows.push_back({{"name", row.name},
                    {"self_before", share(row.self_before)},
                    {"self_after", share(row.self_after)},
                    {"self_delta", share(row.self_delta())},
                    {"total_before", share(row.total_before)},
                    {"total_after", share(row.total_after)},
                    {"total_delta", share(row.total_delta())}});
  }
  const Json doc = {{"before", before_name},     {"after", after_name},
                    {"before_samples", report.before_samples}, {"after_samples", report.after_samples},
                    {"flame_graph", svg_path}, {"rows", std::move(rows)}};
  out << DumpJson(doc, 2) << '\n';
}

}  // namespace arcprof::reports
