#include "store/capture_schema.h"

#include <sqlite3.h>

#include <algorithm>
#include <iterator>

#include "common/text.h"
#include "store/ptt_store.h"
#include "store/sqlite_db.h"

namespace arcprof::store::capture_schema {
namespace {

constexpr const char* kSchemaSql = R"sql(
CREATE TABLE meta (
  capture_id INTEGER NOT NULL,
  key TEXT NOT NULL,
  value TEXT NOT NULL,
  PRIMARY KEY (capture_id, key)
) WITHOUT ROWID;
CREATE TABLE captures (
  id INTEGER PRIMARY KEY,
  uuid TEXT NOT NULL UNIQUE,
  host TEXT NOT NULL
);
CREATE TABLE windows (
  id INTEGER PRIMARY KEY,
  capture_id INTEGER NOT NULL REFERENCES captures(id),
  start_ns INTEGER NOT NULL,
  end_ns INTEGER NOT NULL
);
)sql";

// Schemas 1 to 4: threads, modules and counters as tables of rows.
constexpr const char* kRowTablesSql = R"sql(
CREATE TABLE threads (
  id INTEGER PRIMARY KEY,
  capture_id INTEGER NOT NULL REFERENCES captures(id),
  pid INTEGER NOT NULL,
  tid INTEGER NOT NULL,
  comm TEXT NOT NULL,
  process_comm TEXT NOT NULL,
  cmdline TEXT NOT NULL
);
CREATE TABLE modules (
  id INTEGER PRIMARY KEY,
  path TEXT NOT NULL,
  build_id TEXT NOT NULL DEFAULT '',
  UNIQUE (path, build_id)
);
CREATE TABLE counters (
  window_id INTEGER NOT NULL REFERENCES windows(id),
  name TEXT NOT NULL,
  value INTEGER NOT NULL,
  PRIMARY KEY (window_id, name)
) WITHOUT ROWID;
)sql";

// Schema 1: one row per frame and per call tree node.
constexpr const char* kSchema1Sql = R"sql(
CREATE TABLE frames (
  id INTEGER PRIMARY KEY,
  module_id INTEGER NOT NULL REFERENCES modules(id),
  symbol TEXT NOT NULL,
  address INTEGER NOT NULL,
  kind INTEGER NOT NULL,
  reason INTEGER NOT NULL,
  inlined INTEGER NOT NULL,
  UNIQUE (module_id, symbol, address, kind, reason, inlined)
);
CREATE TABLE nodes (
  window_id INTEGER NOT NULL REFERENCES windows(id),
  thread_id INTEGER NOT NULL REFERENCES threads(id),
  node_id INTEGER NOT NULL,
  parent_id INTEGER,
  frame_id INTEGER REFERENCES frames(id),
  n INTEGER NOT NULL,
  base INTEGER NOT NULL,
  PRIMARY KEY (window_id, thread_id, node_id)
) WITHOUT ROWID;
)sql";

// Schema 2: frames and call trees as compressed blocks (store/capture_blocks.h).
constexpr const char* kSchema2Sql = R"sql(
CREATE TABLE value_types (
  id INTEGER PRIMARY KEY,
  name TEXT NOT NULL,
  unit TEXT NOT NULL
);
CREATE TABLE frame_blocks (
  id INTEGER PRIMARY KEY,
  raw_bytes INTEGER NOT NULL,
  data BLOB NOT NULL
);
CREATE TABLE tree_blocks (
  id INTEGER PRIMARY KEY,
  window_id INTEGER NOT NULL REFERENCES windows(id),
  raw_bytes INTEGER NOT NULL,
  data BLOB NOT NULL
);
)sql";

// Schema 5: the rows of threads, modules and counters as row blocks, all in
// one table (a table costs a page and its schema text; these are a few KB).
constexpr const char* kSchema5Sql = R"sql(
CREATE TABLE row_blocks (
  id INTEGER PRIMARY KEY,
  name TEXT NOT NULL,
  raw_bytes INTEGER NOT NULL,
  data BLOB NOT NULL
);
)sql";

// Nanoseconds off CPU of the call tree nodes that have any (record --off-cpu).
constexpr const char* kOffCpuSchemaSql = R"sql(
CREATE TABLE offcpu_nodes (
  window_id INTEGER NOT NULL,
  thread_id INTEGER NOT NULL,
  node_id INTEGER NOT NULL,
  ns INTEGER NOT NULL,
  PRIMARY KEY (window_id, thread_id, node_id)
) WITHOUT ROWID;
)sql";

// Tables every capture has, and those only one schema version has (the
// optional offcpu_nodes belongs to schema 1; schema 2 keeps off-CPU time as a
// value type of the tree blocks).
constexpr const char* kCommonTables[] = {"meta", "captures", "windows"};
constexpr const char* kRowTables[] = {"threads", "modules", "counters"};  // schemas 1 to 4
constexpr const char* kSchema1Tables[] = {"frames", "nodes"};
constexpr const char* kSchema2Tables[] = {"value_types", "frame_blocks", "tree_blocks"};

}  // namespace

std::vector<const char*> CurrentSchemaSql() { return {kSchemaSql, kSchema5Sql, kSchema2Sql}; }

const SmallTable& ThreadsRows(int schema_version) {
  return schema_version >= 8 ? kThreadsRows8 : schema_version >= 6 ? kThreadsRows6 : kThreadsRows;
}

std::pair<int, int> TableVersions(std::string_view name) {
  if (name == "offcpu_nodes") return {1, 1};
  if (name == "row_blocks") return {5, kCaptureSchemaVersion};
  for (const char* t : kRowTables) {
    if (name == t) return {1, 4};
  }
  for (const char* t : kSchema1Tables) {
    if (name == t) return {1, 1};
  }
  for (const char* t : kSchema2Tables) {
    if (name == t) return {2, kCaptureSchemaVersion};
  }
  return PttTableVersions(name);
}

std::string NormalizeSql(std::string_view sql) {
  std::string out;
  bool space = false;
  for (char c : sql) {
    if (c == ' ' || c == '\n' || c == '\t' || c == '\r') {
      space = true;
      continue;
    }
    const bool tight = c == '(' || c == ')' || c == ',';
    if (space && !out.empty() && !tight && out.back() != '(' && out.back() != ',') out += ' ';
    space = false;
    out += c;
  }
  while (!out.empty() && (out.back() == ';' || out.back() == ' ')) out.pop_back();
  const std::string if_not_exists = "CREATE TABLE IF NOT EXISTS ";
  if (out.rfind(if_not_exists, 0) == 0) out = "CREATE TABLE " + out.substr(if_not_exists.size());
  return out;
}

const std::map<std::string, std::string>& KnownTables() {
  static const std::map<std::string, std::string> tables = [] {
    std::map<std::string, std::string> out;
    for (const char* script : {kSchemaSql, kRowTablesSql, kSchema5Sql, kSchema1Sql, kSchema2Sql, kOffCpuSchemaSql,
                                PttSchemaSql(), kPushSentTableSql}) {
      std::string_view rest(script);
      while (!rest.empty()) {
        const size_t end = std::min(rest.find(';'), rest.size());
        const std::string statement = NormalizeSql(rest.substr(0, end));
        rest.remove_prefix(std::min(end + 1, rest.size()));
        if (statement.empty()) continue;
        const std::string prefix = "CREATE TABLE ";
        const size_t name_end = statement.find_first_of(" (", prefix.size());
        out[statement.substr(prefix.size(), name_end - prefix.size())] = statement;
      }
    }
    return out;
  }();
  return tables;
}

Result<std::string> SchemaType(SqlDb& db, const char* name) {
  auto stmt = db.Prepare("SELECT type FROM sqlite_schema WHERE name = ?");
  if (!stmt) return stmt.error();
  stmt->Bind(1, name);
  auto row = db.Step(*stmt);
  if (!row) return row.error();
  return *row ? SqlColumnText(stmt->get(), 0) : std::string();
}

Result<void> CheckSchema(SqlDb& db, int schema_version, const CorruptFn& corrupt) {
  auto stmt = db.Prepare("SELECT type, name, tbl_name, sql FROM sqlite_schema");
  if (!stmt) return stmt.error();
  const auto& known = KnownTables();
  for (;;) {
    auto more = db.Step(*stmt);
    if (!more) return more.error();
    if (!*more) return {};
    const std::string type = SqlColumnText(stmt->get(), 0);
    const std::string name = SqlColumnText(stmt->get(), 1);
    const std::string table = SqlColumnText(stmt->get(), 2);
    const bool has_sql = sqlite3_column_type(stmt->get(), 3) != SQLITE_NULL;
    const std::string shown = "'" + EscapeControl(name.substr(0, 64)) + "'";
    if (type == "table") {
      auto it = known.find(name);
      if (it == known.end()) return corrupt("unexpected table " + shown + " (not an arcprof table)");
      if (!has_sql || NormalizeSql(SqlColumnText(stmt->get(), 3)) != it->second) {
        return corrupt("table " + shown + " is not declared the way arcprof declares it");
      }
      if (const auto [first, last] = TableVersions(name); schema_version < first || schema_version > last) {
        return corrupt("table " + shown + " does not belong in a schema " + std::to_string(schema_version) +
                       " capture");
      }
    } else if (type == "index" && !has_sql && name.rfind("sqlite_autoindex_" + table + "_", 0) == 0 &&
               known.count(table)) {
      // SQLite's index for a UNIQUE or PRIMARY KEY constraint of our tables.
    } else {
      return corrupt("unexpected " + EscapeControl(type.substr(0, 16)) + " " + shown + " in the schema");
    }
  }
}

Result<void> CheckTables(SqlDb& db, int schema_version, const CorruptFn& corrupt) {
  std::vector<const char*> names(std::begin(kCommonTables), std::end(kCommonTables));
  if (schema_version >= 5) {
    names.push_back("row_blocks");
  } else {
    names.insert(names.end(), std::begin(kRowTables), std::end(kRowTables));
  }
  if (schema_version == 1) {
    names.insert(names.end(), std::begin(kSchema1Tables), std::end(kSchema1Tables));
  } else {
    names.insert(names.end(), std::begin(kSchema2Tables), std::end(kSchema2Tables));
  }
  for (const char* name : names) {
    auto type = SchemaType(db, name);
    if (!type) return type.error();
    if (*type != "table") return corrupt(std::string("table '") + name + "' is missing");
  }
  return {};
}

}  // namespace arcprof::store::capture_schema
