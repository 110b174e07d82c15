// The schema of a capture file: the tables every schema version declares, the
// version each table belongs to, and the check that a file declares exactly
// those (docs/capture-format.md). The writer (capture_writer.h) creates the
// current schema from these constants; the reader (capture_reader.h) checks
// every file against all of them.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/result.h"

namespace arcprof::store {

class SqlDb;

// PRAGMA application_id of every capture: "arcp" in ASCII.
inline constexpr int32_t kCaptureApplicationId = 0x61726370;
// The schema this build writes and the newest one it reads. Bumped only when an
// older reader would misread a newer file (see docs/capture-format.md).
inline constexpr int kCaptureSchemaVersion = 9;

// What the writer, the reader and the checksum share; not for other layers.
namespace capture_schema {

// capture_id 0 in the meta table holds the keys of the store itself.
inline constexpr int64_t kStoreMetaId = 0;
// meta (0, key) holding the content checksum (docs/capture-format.md).
inline constexpr const char* kChecksumKey = "content_crc32";
// Every store key (capture_id 0) a writer has ever written: another one is a
// damaged key (a flipped bit in "content_crc32" would turn the check off).
inline constexpr const char* kStoreKeys[] = {"format", "schema_version", kChecksumKey};

// The table the sent marks of a capture live in (store/capture_sent_marks.h),
// added by the first `arcprof push` of it. Kept here with the rest of the
// schema: readers accept exactly these tables.
inline constexpr const char* kPushSentTableSql =
    "CREATE TABLE IF NOT EXISTS push_sent ("
    " window_id INTEGER NOT NULL REFERENCES windows(id),"
    " destination TEXT NOT NULL,"
    " sent_unix_ns INTEGER NOT NULL,"
    " PRIMARY KEY (window_id, destination)) WITHOUT ROWID";

// The scripts that create the current schema's tables, in the order the
// writer runs them (the ptt_* tables are ptt_store's).
std::vector<const char*> CurrentSchemaSql();

// The tables schema 5 and later keep in row_blocks, with their columns as a
// row block holds them (RowBlock kinds; ids are positions).
struct SmallTable {
  const char* name;
  const char* kinds;
};
inline constexpr SmallTable kModulesRows = {"modules", "tt"};      // path, build_id
inline constexpr SmallTable kThreadsRows = {"threads", "iiittt"};  // capture_id, pid, tid, comm, process_comm, cmdline
// Schema 6: the same and the process's identity (model/process_identity.h):
// ns_pid, container_id, container_runtime, pod_uid, qos_class, service_name, cgroup.
inline constexpr SmallTable kThreadsRows6 = {"threads", "iiitttitttttt"};
// Schema 8: the same and the process's start (ThreadRecord::process_start_ns).
inline constexpr SmallTable kThreadsRows8 = {"threads", "iiitttitttttti"};
const SmallTable& ThreadsRows(int schema_version);
inline constexpr SmallTable kCountersRows = {"counters", "iti"};  // window_id, name, value
inline constexpr SmallTable kSmallTables[] = {kModulesRows, kThreadsRows, kCountersRows};

// The schema as SQLite stores it, comparable with what a writer ran: runs of
// white space become one space, none next to brackets and commas, "IF NOT
// EXISTS" and a trailing ';' dropped.
std::string NormalizeSql(std::string_view sql);

// Every table an arcprof writer of any schema version creates: name ->
// normalized CREATE statement, from the very constants the writers ran.
const std::map<std::string, std::string>& KnownTables();

// The schema versions (first, last) a table belongs to.
std::pair<int, int> TableVersions(std::string_view name);

// How the reader words a damaged file ("<path>: corrupt capture: ...").
using CorruptFn = std::function<Error(const std::string& what)>;

// The type of the schema object `name` ("table", "index", ...; "" when none).
Result<std::string> SchemaType(SqlDb& db, const char* name);

// The schema must be exactly the one arcprof writes: known tables declared
// as our writers declare them (so no generated columns, no changed types or
// constraints), each in a schema version it belongs to, SQLite's own indexes
// for their keys, nothing else (no views, triggers, indexes on expressions or
// foreign tables).
Result<void> CheckSchema(SqlDb& db, int schema_version, const CorruptFn& corrupt);

// Every table a capture of `schema_version` must have is there, as a table.
Result<void> CheckTables(SqlDb& db, int schema_version, const CorruptFn& corrupt);

}  // namespace capture_schema
}  // namespace arcprof::store
