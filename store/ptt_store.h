// The ptt_* tables of a capture (docs/capture-format.md, docs/ptt.md): per-thread
// time, per-CPU interval accounting, per-vector interrupt totals and the
// counters chosen with --ptt-events. Called by capture_writer.cpp and
// capture_reader.cpp inside their own transaction and with their own
// (defensively opened) connection (store/sqlite_db.h).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <utility>

#include "common/result.h"
#include "model/ptt_data.h"

namespace arcprof::store {

class SqlDb;

// The CREATE TABLE statements of the ptt_* tables of every schema version, as
// the writer runs them (the capture reader compares a file's schema with them).
const char* PttSchemaSql();
// The schema versions (first, last) a ptt_* table belongs to: ptt_threads
// (a row per thread and window) to 1-2, ptt_thread_blocks (the same rows in
// compressed row blocks) to 3 and later, the others to every version.
std::pair<int, int> PttTableVersions(std::string_view table);

// Creates the ptt_* tables of the current schema and fills them for one
// capture and one window. Errors carry the writer's context ("<path>: cannot
// write capture: ...").
Result<void> WritePttTables(SqlDb& db, const model::PttData& ptt, int64_t capture_id, int64_t window_id);

// Reads the ptt_* tables into `out`, merging windows and captures: threads with
// the same (pid, tid) are summed, the events are those of the first capture.
// A capture without the tables (recorded without --ptt, or by an older arcprof)
// leaves out.recorded false. Every value is checked; errors read
// "<path>: corrupt capture: ...".
// `spend` is charged the bytes a block needs in memory (the reader's budget).
Result<void> ReadPttTables(SqlDb& db, const std::string& path, int schema_version, model::PttData& out,
                           const std::function<Result<void>(uint64_t)>& spend);

}  // namespace arcprof::store
