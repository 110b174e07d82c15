// Changing a capture behind the writer's back, as a hostile or buggy writer
// would: the capture tests' shared SQL helpers.
#pragma once

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <filesystem>
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

#ifndef ARCPROF_STORE_FIXTURES_DIR
#error "ARCPROF_STORE_FIXTURES_DIR names tests/store/fixtures (set by the test's CMakeLists.txt)"
#endif

// Copies the committed capture tests/store/fixtures/NAME to `path` (replacing
// what is there), for a test to read or break. The fixtures are captures of
// the schemas this build no longer writes, written once by the writers of
// their time (tests/store/fixtures/README.md).
inline void CopyFixture(const std::string& name, const std::string& path) {
  std::error_code error;
  std::filesystem::copy_file(std::string(ARCPROF_STORE_FIXTURES_DIR) + "/" + name, path,
                             std::filesystem::copy_options::overwrite_existing, error);
  ASSERT_FALSE(error) << name << ": " << error.message();
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
