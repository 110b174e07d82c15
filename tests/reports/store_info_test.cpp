// `store info` (reports/store_info.h) on a continuous store that holds copies
// of a window and entries named like windows that are not window files.
#include <gtest/gtest.h>

#include <sstream>
#include <string>

#include "reports/store_info.h"
#include "store/window_store.h"
#include "tests/model/test_profiles.h"
#include "tests/store/window_fixtures.h"
#include "tests/layer_names.h"

namespace arcprof {
namespace {

using testing::TempDir;

// The three windows, and one `unreadable:` line per other entry.
TEST(StoreInfo, ListsEveryEntryThatIsNotAWindowAsUnreadable) {
  TempDir dir;
  auto store = WindowStore::OpenForWriting(dir.path());
  ASSERT_TRUE(store);
  bool planted = false;
  testing::PlantCopiesAndOddEntries(dir, *store, planted);
  ASSERT_TRUE(planted);
  std::ostringstream out, err;
  EXPECT_EQ(reports::PrintStoreInfo(*store, "text", out, err), 0);
  size_t unreadable = 0;
  for (size_t pos = out.str().find("unreadable:"); pos != std::string::npos;
       pos = out.str().find("unreadable:", pos + 1)) {
    ++unreadable;
  }
  EXPECT_EQ(unreadable, 5u) << out.str();
  EXPECT_NE(out.str().find("a FIFO"), std::string::npos) << out.str();
  EXPECT_NE(out.str().find("a symbolic link"), std::string::npos) << out.str();
  EXPECT_NE(out.str().find("a directory"), std::string::npos) << out.str();
}

}  // namespace
}  // namespace arcprof
