// Folded stacks are outside input (files from other tools): the parser and the
// SVG writer behind it must never crash, hang or produce a graph whose total
// differs from the sum of the parsed counts.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <sstream>
#include <string_view>

#include "reports/flamegraph.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto tree = arcprof::reports::ParseFoldedStacks(text);
  if (!tree) return 0;
  uint64_t self_sum = 0;
  for (uint32_t i = 0; i < tree->size(); ++i) self_sum += tree->node(i).self;
  if (self_sum != tree->total()) std::abort();
  std::ostringstream svg;
  arcprof::reports::FlameGraphOptions options;
  options.icicle = size % 2 == 1;
  arcprof::reports::WriteFlameGraphSvg(*tree, options, svg);
  // A differential rendering of the tree against itself: every delta is 0.
  arcprof::reports::FlameTree diff = *tree;
  diff.delta_points.assign(diff.size(), 0.0);
  arcprof::reports::WriteFlameGraphSvg(diff, options, svg);
  return 0;
}
