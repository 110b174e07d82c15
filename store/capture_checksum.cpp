#include "store/capture_checksum.h"

#include <sqlite3.h>
#include <zlib.h>

#include <algorithm>
#include <cstdio>
#include <utility>
#include <vector>

#include "store/capture_schema.h"
#include "store/sqlite_db.h"

namespace arcprof::store {
using capture_schema::KnownTables;
using capture_schema::kChecksumKey;

// CRC-32 (zlib) over every row of every arcprof table in the file except
// push_sent (marks added later) and the checksum's own meta row: tables by
// name, rows by primary key, each value as a type byte and its bytes.
Result<std::string> ContentChecksum(sqlite3* connection) {
  SqlDb db = SqlDb::Borrow(connection, "");
  std::vector<std::string> tables;
  if (auto r = db.ForEachRow("SELECT name FROM sqlite_schema WHERE type = 'table' ORDER BY name",
                             [&](sqlite3_stmt* s) -> Result<void> {
                               const std::string name = SqlColumnText(s, 0);
                               if (KnownTables().count(name) && name != "push_sent") tables.push_back(name);
                               return {};
                             });
      !r) {
    return r.error();
  }
  uLong crc = crc32(0L, Z_NULL, 0);
  auto add = [&](const void* data, size_t size) {
    crc = crc32(crc, static_cast<const Bytef*>(data), static_cast<uInt>(size));
  };
  for (const std::string& table : tables) {
    // Primary key columns in key order; rowid for tables without one.
    std::vector<std::pair<int, std::string>> key;
    const std::string key_sql = "SELECT name, pk FROM pragma_table_info('" + table + "')";
    if (auto r = db.ForEachRow(key_sql.c_str(), [&](sqlite3_stmt* s) -> Result<void> {
          if (const int pk = sqlite3_column_int(s, 1); pk > 0) key.emplace_back(pk, SqlColumnText(s, 0));
          return {};
        });
        !r) {
      return r.error();
    }
    std::sort(key.begin(), key.end());
    std::string order;
    for (const auto& [index, column] : key) order += (order.empty() ? "" : ", ") + column;
    if (order.empty()) order = "rowid";
    std::string sql = "SELECT * FROM " + table;
    if (table == "meta") sql += std::string(" WHERE NOT (capture_id = 0 AND key = '") + kChecksumKey + "')";
    sql += " ORDER BY " + order;
    add(table.data(), table.size() + 1);
    if (auto r = db.ForEachRow(sql.c_str(), [&](sqlite3_stmt* s) -> Result<void> {
          for (int c = 0; c < sqlite3_column_count(s); ++c) {
            const auto type = static_cast<unsigned char>(sqlite3_column_type(s, c));
            add(&type, 1);
            if (type == SQLITE_INTEGER) {
              const int64_t v = sqlite3_column_int64(s, c);
              add(&v, sizeof(v));
            } else if (type == SQLITE_FLOAT) {
              const double v = sqlite3_column_double(s, c);
              add(&v, sizeof(v));
            } else if (type != SQLITE_NULL) {
              const void* bytes = type == SQLITE_BLOB ? sqlite3_column_blob(s, c) : sqlite3_column_text(s, c);
              const int64_t size = sqlite3_column_bytes(s, c);
              add(&size, sizeof(size));
              if (size > 0) add(bytes, static_cast<size_t>(size));
            }
          }
          return {};
        });
        !r) {
      return r.error();
    }
  }
  char hex[16];
  snprintf(hex, sizeof(hex), "%08lx", static_cast<unsigned long>(crc));
  return std::string(hex);
}

}  // namespace arcprof::store
