// `arcprof diff BEFORE.db AFTER.db`: a differential flame graph (the AFTER
// graph coloured by how much each frame's share of the total changed: red
// grew, blue shrank) and a table of the functions whose share changed most, in
// percentage points. Shares are of each capture's own selected total, so
// captures of different lengths compare. See docs/exports.md.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

#include "reports/export_options.h"
#include "reports/flamegraph.h"

namespace arcprof::reports {

struct DiffRow {
  std::string name;      // the frame's name as in the flame graph (processes included)
  double self_before = 0;   // % of the before total whose stack ends in it
  double self_after = 0;
  double total_before = 0;  // % of the before total with it anywhere on the stack
  double total_after = 0;
  double self_delta() const { return self_after - self_before; }
  double total_delta() const { return total_after - total_before; }
};

struct DiffReport {
  uint64_t before_samples = 0;
  uint64_t after_samples = 0;
  // Sorted by |self delta|, then |total delta|, largest first; then by name.
  std::vector<DiffRow> rows;
};

DiffReport ComputeDiff(const FlameTree& before, const FlameTree& after);
// A copy of `after` with delta_points set: the change of each frame's share
// (cumulative, % of each tree's total) from `before` to `after`.
FlameTree DifferentialFlameTree(const FlameTree& before, const FlameTree& after);

void WriteDiffText(const DiffReport& report, const std::string& before_name, const std::string& after_name,
                   const std::string& svg_path, size_t top, std::ostream& out);
void WriteDiffJson(const DiffReport& report, const std::string& before_name, const std::string& after_name,
                   const std::string& svg_path, size_t top, std::ostream& out);

}  // namespace arcprof::reports
