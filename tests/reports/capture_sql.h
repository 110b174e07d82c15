// Changing a capture behind the writer's back, as a hostile or buggy writer
// would: the capture tests' shared SQL helpers.
#pragma once

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <string>

#include "store/capture_store.h"

namespace arcprof::testing {

// Runs SQL on the capture at `path`.
inline void ExecSql(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  char* message = nullptr;
  const int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &message);
  const std::string text = message ? message : "";
  sqlite3_free(message);
  sqlite3_close(db);
  ASSERT_EQ(rc, SQLITE_OK) << text;
}

// Stores the content checksum again, as a writer that knows the format (or
// appends windows) must.
inline void Restamp(const std::string& path) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  auto sum = store::ContentChecksum(db);
  sqlite3_close(db);
  ASSERT_TRUE(sum.ok()) << sum.error().message;
  ExecSql(path, "UPDATE meta SET value = '" + *sum + "' WHERE capture_id = 0 AND key = 'content_crc32'");
}

}  // namespace arcprof::testing
