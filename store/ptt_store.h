// The ptt_* tables of a capture (docs/capture-format.md, docs/ptt.md): per-thread
// time, per-CPU interval accounting, per-vector interrupt totals and the
// counters chosen with --ptt-events. Called by capture_store.cpp inside its
// own transaction and with its own (defensively opened) connection
// (store/sqlite_db.h).
#pragma once

#include <cstdint>
#include <string>

#include "common/result.h"
#include "model/ptt_data.h"

namespace arcprof::store {

class SqlDb;

// The CREATE TABLE statements of the ptt_* tables, as the writer runs them
// (the capture reader compares a file's schema with them).
const char* PttSchemaSql();

// Creates the ptt_* tables and fills them for one capture and one window.
// Errors carry the writer's context ("<path>: cannot write capture: ...").
Result<void> WritePttTables(SqlDb& db, const model::PttData& ptt, int64_t capture_id, int64_t window_id);

// Reads the ptt_* tables into `out`, merging windows and captures: threads with
// the same (pid, tid) are summed, the events are those of the first capture.
// A capture without the tables (recorded without --ptt, or by an older arcprof)
// leaves out.recorded false. Every value is checked; errors read
// "<path>: corrupt capture: ...".
Result<void> ReadPttTables(SqlDb& db, const std::string& path, model::PttData& out);

}  // namespace arcprof::store
