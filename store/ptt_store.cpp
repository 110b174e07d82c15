#include "store/ptt_store.h"

#include <sqlite3.h>

#include <algorithm>
#include <functional>
#include <iterator>
#include <map>
#include <memory>
#include <optional>
#include <tuple>
#include <utility>

#include "common/text.h"
#include "store/capture_blocks.h"
#include "store/capture_store.h"
#include "store/sqlite_db.h"

namespace arcprof::store {
using namespace arcprof::model;
namespace {

// Tables of every schema version.
constexpr const char* kPttSchemaSql = R"sql(
CREATE TABLE ptt_events (
  capture_id INTEGER NOT NULL,
  slot INTEGER NOT NULL,
  name TEXT NOT NULL,
  available INTEGER NOT NULL,
  reason TEXT NOT NULL,
  PRIMARY KEY (capture_id, slot)
) WITHOUT ROWID;
CREATE TABLE ptt_irq_vectors (
  window_id INTEGER NOT NULL REFERENCES windows(id),
  cpu INTEGER NOT NULL,
  kind INTEGER NOT NULL,
  vector INTEGER NOT NULL,
  name TEXT NOT NULL,
  count INTEGER NOT NULL,
  ns INTEGER NOT NULL
);
)sql";

// Per-thread time and per-CPU intervals, schemas 1 and 2: a row per thread
// (or CPU interval) and window.
constexpr const char* kPttRowsSql = R"sql(
CREATE TABLE ptt_cpu_intervals (
  window_id INTEGER NOT NULL REFERENCES windows(id),
  cpu INTEGER NOT NULL,
  start_ns INTEGER NOT NULL,
  end_ns INTEGER NOT NULL,
  busy_ns INTEGER NOT NULL,
  idle_ns INTEGER NOT NULL,
  hardirq_ns INTEGER NOT NULL,
  softirq_ns INTEGER NOT NULL,
  hardirqs INTEGER NOT NULL,
  softirqs INTEGER NOT NULL
);
CREATE TABLE ptt_threads (
  window_id INTEGER NOT NULL REFERENCES windows(id),
  pid INTEGER NOT NULL,
  tid INTEGER NOT NULL,
  comm TEXT NOT NULL,
  cpu_ns INTEGER NOT NULL,
  hardirq_ns INTEGER NOT NULL,
  softirq_ns INTEGER NOT NULL,
  dispatches INTEGER NOT NULL,
  interrupts INTEGER NOT NULL,
  event0 INTEGER,
  event1 INTEGER,
  event2 INTEGER,
  event3 INTEGER
);
)sql";

// Schema 3: the same rows in compressed row blocks (store/capture_blocks.h),
// columns kThreadColumns and kIntervalColumns.
constexpr const char* kPttBlocksSql = R"sql(
CREATE TABLE ptt_thread_blocks (
  id INTEGER PRIMARY KEY,
  window_id INTEGER NOT NULL REFERENCES windows(id),
  raw_bytes INTEGER NOT NULL,
  data BLOB NOT NULL
);
CREATE TABLE ptt_interval_blocks (
  id INTEGER PRIMARY KEY,
  window_id INTEGER NOT NULL REFERENCES windows(id),
  raw_bytes INTEGER NOT NULL,
  data BLOB NOT NULL
);
)sql";
// pid, tid, comm, cpu_ns, hardirq_ns, softirq_ns, dispatches, interrupts,
// event0..event3 (0 for an event that is not available); schema 9 then
// process_start_ns.
constexpr const char* kThreadColumns = "iitiiiiiiiii";
constexpr const char* kThreadColumns9 = "iitiiiiiiiiii";
// A process start above this is no start (146 years after boot).
constexpr uint64_t kMaxProcessStartNs = uint64_t{1} << 62;
constexpr size_t kMaxCommBytes = 4096;
// cpu, start_ns, end_ns, busy_ns, idle_ns, hardirq_ns, softirq_ns, hardirqs, softirqs.
constexpr const char* kIntervalColumns = "iiiiiiiii";

// The tables a capture with PTT has in every schema version, and those of
// schemas 1-2 and 3.
constexpr const char* kPttTables[] = {"ptt_events", "ptt_irq_vectors"};
constexpr const char* kPttRowTables[] = {"ptt_threads", "ptt_cpu_intervals"};
constexpr const char* kPttBlockTables[] = {"ptt_thread_blocks", "ptt_interval_blocks"};
// CPU numbers above this are rejected as corrupt (the kernel's NR_CPUS limit is 8192).
constexpr int64_t kMaxCpu = 8192;

int64_t ToSql(uint64_t v) { return static_cast<int64_t>(v); }

std::string Text(sqlite3_stmt* stmt, int column) { return SqlColumnText(stmt, column); }

// Reads a column that holds a non-negative count; a negative or non-integer
// value means the file was tampered with or damaged.
bool Count(sqlite3_stmt* stmt, int column, uint64_t& out) {
  if (sqlite3_column_type(stmt, column) != SQLITE_INTEGER) return false;
  const int64_t v = sqlite3_column_int64(stmt, column);
  if (v < 0) return false;
  out = static_cast<uint64_t>(v);
  return true;
}

bool Id32(sqlite3_stmt* stmt, int column, int64_t max, uint32_t& out) {
  uint64_t v = 0;
  if (!Count(stmt, column, v) || v > static_cast<uint64_t>(max)) return false;
  out = static_cast<uint32_t>(v);
  return true;
}

// Appends `rows` to `table` (ptt_thread_blocks or ptt_interval_blocks) as
// compressed row blocks of one window, ids following the table's last.
Result<void> WriteRowBlocks(SqlDb& sql, const std::string& table, int64_t window_id, const RowBlock& rows) {
  auto block = sql.Prepare("INSERT INTO " + table + " (id, window_id, raw_bytes, data) VALUES (?, ?, ?, ?)");
  if (!block) return block.error();
  auto next_id = sql.QueryInt(("SELECT coalesce(max(id) + 1, 0) FROM " + table).c_str());
  if (!next_id) return next_id.error();
  int64_t id = *next_id;
  for (const std::string& raw : EncodeRowBlocks(rows)) {
    if (auto r = sql.Insert(*block, id++, window_id, static_cast<int64_t>(raw.size()), SqlBlob{Deflate(raw)}); !r) {
      return r;
    }
  }
  return {};
}

// Reads the row blocks of `table` in id order (dense from 0), each inflated,
// decoded as `kinds` and handed to row_block(where, rows).
template <typename CorruptFn, typename BlockFn>
Result<void> ReadRowBlocks(SqlDb& sql, const std::string& table, const char* kinds, size_t max_text_bytes,
                           const std::function<Result<void>(uint64_t)>& spend, CorruptFn&& corrupt,
                           BlockFn&& row_block) {
  int64_t next_block = 0;
  const std::string query = "SELECT id, raw_bytes, data FROM " + table + " ORDER BY id";
  return sql.ForEachRow(query.c_str(), [&](sqlite3_stmt* s) -> Result<void> {
    const std::string where = table + " block " + std::to_string(next_block);
    if (sqlite3_column_type(s, 0) != SQLITE_INTEGER || sqlite3_column_int64(s, 0) != next_block++ ||
        sqlite3_column_type(s, 1) != SQLITE_INTEGER || sqlite3_column_type(s, 2) != SQLITE_BLOB) {
      return corrupt(table + " block ids are not dense from 0 or a column holds the wrong type");
    }
    const int64_t raw_bytes = sqlite3_column_int64(s, 1);
    if (raw_bytes < 0 || static_cast<uint64_t>(raw_bytes) > kMaxBlockRawBytes) {
      return corrupt(where + " of " + std::to_string(raw_bytes) + " bytes (at most " +
                     std::to_string(kMaxBlockRawBytes) + ")");
    }
    // The inflated block and the rows decoded from it.
    if (auto r = spend(static_cast<uint64_t>(raw_bytes) * 3); !r) return r;
    auto raw = Inflate(SqlColumnBlob(s, 2), static_cast<uint64_t>(raw_bytes));
    if (!raw) return corrupt(where + ": " + raw.error().message);
    auto rows = DecodeRowBlock(*raw, kinds, max_text_bytes);
    if (!rows) return corrupt(where + ": " + rows.error().message);
    return row_block(where, *rows);
  });
}

// Schema 3: the per-thread rows of one window as compressed row blocks.
Result<void> WriteThreadBlocks(SqlDb& sql, const PttData& ptt, int64_t window_id) {
  RowBlock rows;
  rows.kinds = kThreadColumns9;
  rows.rows = ptt.threads.size();
  for (const PttThread& t : ptt.threads) {
    rows.ints.insert(rows.ints.end(), {t.pid, t.tid, t.cpu_ns, t.hardirq_ns, t.softirq_ns, t.dispatches,
                                       t.interrupts});
    for (size_t i = 0; i < kPttMaxEvents; ++i) {
      const bool stored = i < ptt.events.size() && ptt.events[i].available && i < t.events.size();
      rows.ints.push_back(stored ? t.events[i] : 0);
    }
    rows.ints.push_back(t.process_start_ns);
    rows.texts.push_back(t.comm);
  }
  return WriteRowBlocks(sql, "ptt_thread_blocks", window_id, rows);
}

}  // namespace

const char* PttSchemaSql() {
  static const std::string all = std::string(kPttSchemaSql) + kPttRowsSql + kPttBlocksSql;
  return all.c_str();
}

std::pair<int, int> PttTableVersions(std::string_view table) {
  for (const char* t : kPttRowTables) {
    if (table == t) return {1, 2};
  }
  for (const char* t : kPttBlockTables) {
    if (table == t) return {3, kCaptureSchemaVersion};
  }
  return {1, kCaptureSchemaVersion};
}

Result<void> WritePttTables(SqlDb& sql, const PttData& ptt, int64_t capture_id, int64_t window_id) {
  if (ptt.events.size() > kPttMaxEvents) {
    return sql.Fail("more than " + std::to_string(kPttMaxEvents) + " PTT events");
  }
  if (auto r = sql.Exec(kPttSchemaSql); !r) return r;
  if (auto r = sql.Exec(kPttBlocksSql); !r) return r;
  auto event = sql.Prepare(
      "INSERT INTO ptt_events (capture_id, slot, name, available, reason) VALUES (?, ?, ?, ?, ?)");
  if (!event) return event.error();
  for (size_t i = 0; i < ptt.events.size(); ++i) {
    const PttEvent& e = ptt.events[i];
    if (auto r = sql.Insert(*event, capture_id, static_cast<int64_t>(i), e.name,
                            int64_t{e.available ? 1 : 0}, e.unavailable_reason);
        !r) {
      return r;
    }
  }

  if (auto r = WriteThreadBlocks(sql, ptt, window_id); !r) return r;
  RowBlock rows;
  rows.kinds = kIntervalColumns;
  rows.rows = ptt.intervals.size();
  for (const PttCpuInterval& c : ptt.intervals) {
    rows.ints.insert(rows.ints.end(), {c.cpu, c.start_ns, c.end_ns, c.busy_ns, c.idle_ns, c.hardirq_ns,
                                       c.softirq_ns, c.hardirqs, c.softirqs});
  }
  if (auto r = WriteRowBlocks(sql, "ptt_interval_blocks", window_id, rows); !r) return r;

  auto vector = sql.Prepare(
      "INSERT INTO ptt_irq_vectors (window_id, cpu, kind, vector, name, count, ns) "
      "VALUES (?, ?, ?, ?, ?, ?, ?)");
  if (!vector) return vector.error();
  for (const PttIrqVector& v : ptt.irq_vectors) {
    if (auto r = sql.Insert(*vector, window_id, int64_t{v.cpu},
                            int64_t{static_cast<uint8_t>(v.kind)}, int64_t{v.vector}, v.name,
                            ToSql(v.count), ToSql(v.ns));
        !r) {
      return r;
    }
  }
  return {};
}

Result<void> ReadPttTables(SqlDb& sql, const std::string& path, int schema_version, PttData& out,
                           const std::function<Result<void>(uint64_t)>& spend) {
  auto corrupt = [&](const std::string& what) {
    return MakeError(path + ": corrupt capture: " + what + "; re-record it or restore a good copy",
                     ErrorKind::kCapture);
  };

  // All four tables or none: a capture recorded without --ptt has none.
  std::vector<const char*> tables(std::begin(kPttTables), std::end(kPttTables));
  if (schema_version >= 3) {
    tables.insert(tables.end(), std::begin(kPttBlockTables), std::end(kPttBlockTables));
  } else {
    tables.insert(tables.end(), std::begin(kPttRowTables), std::end(kPttRowTables));
  }
  int present = 0;
  {
    auto stmt = sql.Prepare("SELECT type FROM sqlite_schema WHERE name = ?");
    if (!stmt) return stmt.error();
    for (const char* name : tables) {
      stmt->Bind(1, name);
      auto row = sql.Step(*stmt);
      if (!row) return row.error();
      if (*row) {
        if (Text(stmt->get(), 0) != "table") {
          return corrupt(std::string("'") + name + "' is not a table");
        }
        ++present;
      }
      stmt->Reset();
    }
  }
  if (present == 0) {
    out = PttData{};
    return {};
  }
  if (present != static_cast<int>(tables.size())) {
    return corrupt("some ptt_* tables are missing");
  }
  PttData ptt;
  ptt.recorded = true;

  // Rows must belong to windows that exist.
  for (const char* table : tables) {
    if (std::string_view(table) == "ptt_events") continue;
    const std::string query = std::string("SELECT COUNT(*) FROM ") + table +
                              " WHERE window_id NOT IN (SELECT id FROM windows)";
    int64_t orphans = 0;
    if (auto r = sql.ForEachRow(query.c_str(), [&](sqlite3_stmt* s) -> Result<void> {
          orphans = sqlite3_column_int64(s, 0);
          return {};
        });
        !r) {
      return r;
    }
    if (orphans != 0) return corrupt(std::string(table) + " rows of a window that does not exist");
  }

  // Events of the first capture; slots dense from 0.
  if (auto r = sql.ForEachRow(
          "SELECT slot, name, available, reason FROM ptt_events "
          "WHERE capture_id = (SELECT MIN(id) FROM captures) ORDER BY slot",
          [&](sqlite3_stmt* s) -> Result<void> {
            const int64_t available = sqlite3_column_int64(s, 2);
            if (sqlite3_column_int64(s, 0) != static_cast<int64_t>(ptt.events.size()) ||
                ptt.events.size() >= kPttMaxEvents || (available != 0 && available != 1)) {
              return corrupt("PTT event slots are not dense from 0 or a flag is invalid");
            }
            ptt.events.push_back(PttEvent{Text(s, 1), available == 1, Text(s, 3)});
            return {};
          });
      !r) {
    return r;
  }

  // Threads with the same (pid, tid, process start) in several windows or
  // captures are summed: a pid another process held is another row.
  std::map<std::tuple<uint32_t, uint32_t, uint64_t>, size_t> thread_index;
  auto add_thread = [&](PttThread t) {
    auto [it, inserted] = thread_index.try_emplace({t.pid, t.tid, t.process_start_ns}, ptt.threads.size());
    if (inserted) {
      ptt.threads.push_back(std::move(t));
      return;
    }
    ptt.threads[it->second].Add(t);
  };
  if (schema_version >= 3) {
    // Every value as the row table's checks allow.
    // Schema 9 rows end with the process's start.
    const bool start = schema_version >= 9;
    if (auto r = ReadRowBlocks(
            sql, "ptt_thread_blocks", start ? kThreadColumns9 : kThreadColumns, kMaxCommBytes, spend, corrupt,
            [&](const std::string& where, const RowBlock& rows) -> Result<void> {
              const size_t kInts = start ? 12 : 11;
              for (size_t row = 0; row < rows.rows; ++row) {
                const uint64_t* v = rows.ints.data() + row * kInts;
                bool ok = v[0] <= UINT32_MAX && v[1] <= UINT32_MAX;
                for (size_t i = 2; i < 11; ++i) ok = ok && v[i] <= static_cast<uint64_t>(INT64_MAX);
                if (!ok) return corrupt(where + ": a thread with an invalid pid, tid or value");
                if (start && v[11] > kMaxProcessStartNs) {
                  return corrupt(where + ": a thread with an impossible process start " +
                                 std::to_string(static_cast<int64_t>(v[11])));
                }
                PttThread t;
                t.pid = static_cast<uint32_t>(v[0]);
                t.tid = static_cast<uint32_t>(v[1]);
                t.cpu_ns = v[2];
                t.hardirq_ns = v[3];
                t.softirq_ns = v[4];
                t.dispatches = v[5];
                t.interrupts = v[6];
                t.events.assign(ptt.events.size(), 0);
                for (size_t i = 0; i < ptt.events.size(); ++i) t.events[i] = v[7 + i];
                if (start) t.process_start_ns = v[11];
                t.comm = EscapeControl(rows.texts[row]);
                add_thread(std::move(t));
              }
              return {};
            });
        !r) {
      return r;
    }
  } else if (auto r = sql.ForEachRow(
                 "SELECT pid, tid, comm, cpu_ns, hardirq_ns, softirq_ns, dispatches, interrupts, "
                 "event0, event1, event2, event3 FROM ptt_threads ORDER BY rowid",
                 [&](sqlite3_stmt* s) -> Result<void> {
                   PttThread t;
                   bool ok = Id32(s, 0, UINT32_MAX, t.pid) && Id32(s, 1, UINT32_MAX, t.tid) &&
                             Count(s, 3, t.cpu_ns) && Count(s, 4, t.hardirq_ns) &&
                             Count(s, 5, t.softirq_ns) && Count(s, 6, t.dispatches) &&
                             Count(s, 7, t.interrupts);
                   t.events.assign(ptt.events.size(), 0);
                   for (size_t i = 0; ok && i < ptt.events.size(); ++i) {
                     if (sqlite3_column_type(s, 8 + static_cast<int>(i)) == SQLITE_NULL) continue;
                     ok = Count(s, 8 + static_cast<int>(i), t.events[i]);
                   }
                   if (!ok) return corrupt("a ptt_threads row has a negative or non-numeric value");
                   t.comm = EscapeControl(Text(s, 2));
                   add_thread(std::move(t));
                   return {};
                 });
             !r) {
    return r;
  }

  if (schema_version >= 3) {
    if (auto r = ReadRowBlocks(
            sql, "ptt_interval_blocks", kIntervalColumns, 0, spend, corrupt,
            [&](const std::string& where, const RowBlock& rows) -> Result<void> {
              constexpr size_t kInts = 9;
              for (size_t row = 0; row < rows.rows; ++row) {
                const uint64_t* v = rows.ints.data() + row * kInts;
                bool ok = v[0] <= static_cast<uint64_t>(kMaxCpu) && v[2] >= v[1];
                for (size_t i = 1; i < kInts; ++i) ok = ok && v[i] <= static_cast<uint64_t>(INT64_MAX);
                if (!ok) return corrupt(where + ": a CPU interval with an invalid cpu, time span or value");
                ptt.intervals.push_back(PttCpuInterval{static_cast<uint32_t>(v[0]), v[1], v[2], v[3], v[4], v[5],
                                                       v[6], v[7], v[8]});
              }
              return {};
            });
        !r) {
      return r;
    }
    // In the order schema 1 reads them: by start, then CPU.
    std::stable_sort(ptt.intervals.begin(), ptt.intervals.end(),
                     [](const PttCpuInterval& a, const PttCpuInterval& b) {
                       return std::tie(a.start_ns, a.cpu) < std::tie(b.start_ns, b.cpu);
                     });
  } else if (auto r = sql.ForEachRow(
          "SELECT cpu, start_ns, end_ns, busy_ns, idle_ns, hardirq_ns, softirq_ns, hardirqs, "
          "softirqs FROM ptt_cpu_intervals ORDER BY start_ns, cpu",
          [&](sqlite3_stmt* s) -> Result<void> {
            PttCpuInterval c;
            const bool ok = Id32(s, 0, kMaxCpu, c.cpu) && Count(s, 1, c.start_ns) &&
                            Count(s, 2, c.end_ns) && Count(s, 3, c.busy_ns) &&
                            Count(s, 4, c.idle_ns) && Count(s, 5, c.hardirq_ns) &&
                            Count(s, 6, c.softirq_ns) && Count(s, 7, c.hardirqs) &&
                            Count(s, 8, c.softirqs);
            if (!ok || c.end_ns < c.start_ns) {
              return corrupt("a ptt_cpu_intervals row has an invalid cpu, time span or value");
            }
            ptt.intervals.push_back(c);
            return {};
          });
      !r) {
    return r;
  }

  std::map<std::tuple<uint32_t, uint8_t, uint32_t>, size_t> vector_index;
  if (auto r = sql.ForEachRow(
          "SELECT cpu, kind, vector, name, count, ns FROM ptt_irq_vectors ORDER BY rowid",
          [&](sqlite3_stmt* s) -> Result<void> {
            PttIrqVector v;
            uint32_t kind = 0;
            const bool ok = Id32(s, 0, kMaxCpu, v.cpu) && Id32(s, 1, kIrqKindCount - 1, kind) &&
                            Id32(s, 2, UINT32_MAX, v.vector) && Count(s, 4, v.count) &&
                            Count(s, 5, v.ns);
            if (!ok) return corrupt("a ptt_irq_vectors row has an invalid cpu, kind or value");
            v.kind = static_cast<IrqKind>(kind);
            v.name = Text(s, 3);
            auto [it, inserted] =
                vector_index.try_emplace({v.cpu, static_cast<uint8_t>(kind), v.vector},
                                         ptt.irq_vectors.size());
            if (inserted) {
              ptt.irq_vectors.push_back(std::move(v));
            } else {
              ptt.irq_vectors[it->second].count += v.count;
              ptt.irq_vectors[it->second].ns += v.ns;
            }
            return {};
          });
      !r) {
    return r;
  }
  out = std::move(ptt);
  return {};
}

}  // namespace arcprof::store
