// Golden-file comparison for report text produced from synthetic profiles.
// Set ARCPROF_UPDATE_GOLDEN=1 to rewrite the files after an intended change
// (then review the diff).
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include "tests/layer_names.h"

namespace arcprof::testing {

inline void ExpectGolden(const std::string& name, const std::string& actual) {
  const std::string path = std::string(ARCPROF_REPORTS_GOLDEN_DIR) + "/" + name;
  if (const char* update = std::getenv("ARCPROF_UPDATE_GOLDEN"); update && *update == '1') {
    std::ofstream(path, std::ios::binary | std::ios::trunc) << actual;
    return;
  }
  std::ifstream in(path, std::ios::binary);
  ASSERT_TRUE(in) << "missing golden file " << path << "; run with ARCPROF_UPDATE_GOLDEN=1";
  std::stringstream expected;
  expected << in.rdbuf();
  EXPECT_EQ(expected.str(), actual) << "golden file " << path << " differs";
}

}  // namespace arcprof::testing
