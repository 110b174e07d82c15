#include "store/capture_reader.h"

#include <sqlite3.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <map>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "common/text.h"
#include "model/value_types.h"
#include "store/capture_blocks.h"
#include "store/capture_checksum.h"
#include "store/capture_schema.h"
#include "store/ptt_store.h"
#include "store/sqlite_db.h"

namespace arcprof::store {
using namespace arcprof::model;
using namespace arcprof::store::capture_schema;
namespace {

// Bounds on what a capture may hold, checked while reading: a file handed to
// arcprof is outside input, and a 150 KB file must not make a report take GBs.
constexpr int kMaxValueBytes = 1 << 20;          // any one text value (SQLITE_LIMIT_LENGTH)
constexpr size_t kMaxPathBytes = 4096;           // module paths (PATH_MAX)
constexpr size_t kMaxSymbolBytes = 64 * 1024;    // symbol names (long C++ templates fit)
constexpr size_t kMaxNameBytes = 4096;           // thread and process names
constexpr uint64_t kMaxCount = uint64_t{1} << 48;  // n or base of one node
constexpr uint64_t kMaxProcessStartNs = uint64_t{1} << 62;  // 146 years after boot
// Memory a report may spend on one capture's contents (strings, frames, nodes).
constexpr uint64_t kMaxReadBytes = uint64_t{2} << 30;
// The highest rate a capture can state: -F is at most 100 kHz, -c N of a
// clock event states 1e9 / N.
constexpr uint64_t kMaxFrequencyHz = 1'000'000'000;

// SQLite stores signed 64-bit integers; addresses and counts are unsigned and
// round-trip through a bit cast (kernel addresses are stored negative).
uint64_t FromSql(int64_t v) { return static_cast<uint64_t>(v); }

// A text column as stored (for checks that compare it with our constants).
std::string ColumnTextRaw(sqlite3_stmt* stmt, int column) { return SqlColumnText(stmt, column); }

// A text column for the Profile: control characters escaped (docs/capture-format.md),
// so no view prints a name that moves the cursor or forges a line.
std::string ColumnText(sqlite3_stmt* stmt, int column) {
  return EscapeControl(ColumnTextRaw(stmt, column));
}

class Reader {
 public:
  explicit Reader(const std::string& path) : path_(path) {}

  Error Corrupt(const std::string& what) const {
    return MakeError(path_ + ": corrupt capture: " + what + "; re-record it or restore a good copy",
                     ErrorKind::kCapture);
  }
  capture_schema::CorruptFn CorruptFn() const {
    return [this](const std::string& what) { return Corrupt(what); };
  }
  Error Fail(const std::string& what) const {
    return MakeError(path_ + ": " + what, ErrorKind::kCapture);
  }
  // Maps an SQLite failure to the clearest one-line explanation.
  Error FromSqlite(int rc, const std::string& message) const {
    switch (rc & 0xff) {
      case SQLITE_NOTADB:
        return Fail("not an arcprof capture (not a SQLite file)");
      case SQLITE_CANTOPEN:
      case SQLITE_PERM:
      case SQLITE_AUTH:
        return Fail("cannot open capture: " + message + "; check the path and its permissions");
      default:  // SQLITE_CORRUPT and everything else
        return Corrupt(message);
    }
  }
  Error FromSqlite(int rc) const { return db_.Fail(rc); }

  Result<void> Open() {
    struct stat st {};
    if (::stat(path_.c_str(), &st) != 0) {
      if (errno == ENOENT) {
        return Fail("no such capture file; run `arcprof record` first or pass -i PATH");
      }
      return Fail(std::string("cannot open capture: ") + std::strerror(errno));
    }
    if (!S_ISREG(st.st_mode)) return Fail("not a regular file; pass the path of a capture");
    if (st.st_size == 0) return Fail("not an arcprof capture (empty file)");

    // A -journal or -wal file next to the capture that its owner did not
    // write (planted in /tmp by another user, or a link) must not decide how
    // the capture reads: open it as immutable, which ignores both.
    bool immutable = false;
    for (const char* suffix : {"-journal", "-wal"}) {
      struct stat side {};
      if (::lstat((path_ + suffix).c_str(), &side) == 0 &&
          (!S_ISREG(side.st_mode) || side.st_uid != st.st_uid)) {
        immutable = true;
      }
    }
    SqlDb::UntrustedOptions options;
    options.immutable = immutable;
    options.max_value_bytes = kMaxValueBytes;  // no larger value is read (SQLITE_TOOBIG instead)
    auto db = SqlDb::OpenUntrusted(path_, options, path_ + ": ",
                                   [this](int rc, const std::string& message) { return FromSqlite(rc, message); });
    if (!db) return db.error();
    db_ = std::move(*db);
    return {};
  }

  Result<int64_t> PragmaInt(const char* sql) { return db_.QueryInt(sql); }
  Result<SqlStatement> Prepare(const char* sql) { return db_.Prepare(sql); }

  Result<void> CheckIdentity() {
    auto app_id = PragmaInt("PRAGMA application_id");
    if (!app_id) return app_id.error();
    if (*app_id != kCaptureApplicationId) return Fail("not an arcprof capture (foreign SQLite file)");
    auto user_version = PragmaInt("PRAGMA user_version");
    if (!user_version) return user_version.error();
    return CheckSchemaVersion(*user_version);
  }

  Result<void> CheckSchemaVersion(int64_t version) {
    if (version > kCaptureSchemaVersion) {
      return Fail("capture schema version " + std::to_string(version) +
                  " is newer than this arcprof reads (" + std::to_string(kCaptureSchemaVersion) +
                  "); upgrade arcprof");
    }
    if (version < 1) return Corrupt("invalid schema version " + std::to_string(version));
    schema_version_ = static_cast<int>(version);
    return {};
  }

  Result<void> QuickCheck() {
    auto stmt = Prepare("PRAGMA quick_check(1)");
    if (!stmt) return stmt.error();
    auto row = db_.Step(*stmt);
    if (!row) return row.error();
    const std::string result = *row ? ColumnTextRaw(stmt->get(), 0) : "no result";
    if (result != "ok") return Corrupt("integrity check failed: " + IntegrityMessage(result));
    return {};
  }

  // Before anything reads a row (capture_schema.h).
  Result<void> CheckSchema() { return capture_schema::CheckSchema(db_, schema_version_, CorruptFn()); }

  // The writer's CRC-32 of every row (docs/capture-format.md): a changed byte
  // anywhere in the data gives a different sum. Every writer of schema 2 and
  // later stores it; only schema 1 files older than the checksum have none.
  Result<void> CheckContentChecksum(const std::unordered_map<std::string, std::string>& store_meta) {
    auto it = store_meta.find(kChecksumKey);
    if (it == store_meta.end()) {
      if (schema_version_ >= 2) return Corrupt(std::string("the content checksum (meta ") + kChecksumKey + ") is missing");
      return {};
    }
    auto sum = ContentChecksum(db_.get());
    if (!sum) return Corrupt(sum.error().message);
    if (*sum != it->second) {
      return Corrupt("content checksum mismatch (the file changed after it was written)");
    }
    return {};
  }

  // Charges `bytes` to the memory budget of this read.
  Result<void> Spend(uint64_t bytes) {
    spent_ += bytes;
    if (spent_ > kMaxReadBytes) {
      return Fail("capture too large to read: it needs more than " +
                  std::to_string(kMaxReadBytes >> 20) + " MiB of memory");
    }
    return {};
  }

  Result<bool> HasTable(const char* name) {
    auto type = capture_schema::SchemaType(db_, name);
    if (!type) return type.error();
    if (type->empty()) return false;
    if (*type != "table") return Corrupt(std::string("'") + name + "' is not a table");
    return true;
  }

  Result<void> CheckTables() { return capture_schema::CheckTables(db_, schema_version_, CorruptFn()); }

  // Steps through the rows of `sql`, calling `row(stmt)` for each; stops at the
  // first error that `row` returns. Column i must hold TEXT when bit i of
  // `text_columns` is set, else an INTEGER (or NULL when bit i of `nullable`
  // is set): text in an integer column must not read as 0.
  template <typename RowFn>
  Result<void> ForEachRow(const char* sql, uint32_t text_columns, uint32_t nullable, RowFn&& row,
                          uint32_t blob_columns = 0) {
    auto stmt = Prepare(sql);
    if (!stmt) return stmt.error();
    const int columns = sqlite3_column_count(stmt->get());
    for (;;) {
      auto more = db_.Step(*stmt);
      if (!more) return more.error();
      if (!*more) return {};
      for (int c = 0; c < columns; ++c) {
        const int type = sqlite3_column_type(stmt->get(), c);
        const bool want_text = (text_columns >> c) & 1u;
        const bool want_blob = (blob_columns >> c) & 1u;
        if (type == SQLITE_NULL && ((nullable >> c) & 1u)) continue;
        const int want = want_blob ? SQLITE_BLOB : want_text ? SQLITE_TEXT : SQLITE_INTEGER;
        if (type != want) {
          return Corrupt(std::string("column '") + sqlite3_column_name(stmt->get(), c) +
                         "' holds " + (type == SQLITE_NULL ? "NULL" : "a value of the wrong type") +
                         " (expected " + (want_blob ? "a blob" : want_text ? "text" : "an integer") + ")");
        }
      }
      if (auto r = row(stmt->get()); !r) return r;
    }
  }

  Result<Profile> ReadAll();
  Result<CaptureIdentity> ReadIdentity();
  Result<void> ReadRowBlocks();
  Result<RowBlock> SmallTableRows(const SmallTable& table, const char* sql);
  Result<void> ReadFrameBlocks(const std::vector<uint32_t>& modules, Profile& profile,
                               std::vector<uint32_t>& frame_ids);
  Result<void> ReadTreeBlocks(const std::unordered_map<int64_t, bool>& windows,
                              const std::vector<uint32_t>& thread_ids, const std::vector<uint32_t>& frame_ids,
                              Profile& profile);

 private:
  // quick_check's report without its "*** in database main ***" heading.
  static std::string IntegrityMessage(const std::string& s) {
    std::string out;
    size_t start = 0;
    while (start <= s.size()) {
      const size_t end = std::min(s.find('\n', start), s.size());
      const std::string line = s.substr(start, end - start);
      if (!line.empty() && line.rfind("*** in database", 0) != 0) {
        if (!out.empty()) out += "; ";
        out += line;
      }
      start = end + 1;
    }
    return out.empty() ? "no details" : out;
  }

  const std::string& path_;
  SqlDb db_;
  int schema_version_ = 0;
  uint64_t spent_ = 0;
  std::map<std::string, RowBlock> row_blocks_;  // schema 5: table name -> its rows
};

// Schema 5: the rows of the small tables from row_blocks (ids dense from 0;
// a table's blocks in id order).
Result<void> Reader::ReadRowBlocks() {
  int64_t next_block = 0;
  for (const SmallTable& table : kSmallTables) {
    const char* kinds = table.name == kThreadsRows.name ? ThreadsRows(schema_version_).kinds : table.kinds;
    row_blocks_[table.name] = RowBlock{kinds, 0, {}, {}};
  }
  return ForEachRow(
      "SELECT id, name, raw_bytes, data FROM row_blocks ORDER BY id", 0b10, 0,
      [&](sqlite3_stmt* s) -> Result<void> {
        const std::string where = "row block " + std::to_string(next_block);
        if (sqlite3_column_int64(s, 0) != next_block++) return Corrupt("row block ids are not dense from 0");
        auto it = row_blocks_.find(ColumnTextRaw(s, 1));
        if (it == row_blocks_.end()) return Corrupt(where + " of an unknown table");
        const int64_t raw_bytes = sqlite3_column_int64(s, 2);
        if (raw_bytes < 0 || static_cast<uint64_t>(raw_bytes) > kMaxBlockRawBytes) {
          return Corrupt(where + " of " + std::to_string(raw_bytes) + " bytes (at most " +
                         std::to_string(kMaxBlockRawBytes) + ")");
        }
        // The inflated block and the rows decoded from it.
        if (auto r = Spend(static_cast<uint64_t>(raw_bytes) * 3); !r) return r;
        const std::string_view data(static_cast<const char*>(sqlite3_column_blob(s, 3)),
                                    static_cast<size_t>(sqlite3_column_bytes(s, 3)));
        auto raw = Inflate(data, static_cast<uint64_t>(raw_bytes));
        if (!raw) return Corrupt(where + ": " + raw.error().message);
        RowBlock& all = it->second;
        auto rows = DecodeRowBlock(*raw, all.kinds, kMaxValueBytes);
        if (!rows) return Corrupt(where + ": " + rows.error().message);
        all.rows += rows->rows;
        all.ints.insert(all.ints.end(), rows->ints.begin(), rows->ints.end());
        for (std::string& text : rows->texts) all.texts.push_back(std::move(text));
        return {};
      },
      0b1000);
}

// The rows of a small table: from row_blocks in schema 5, else from the
// table by `sql`, whose first column is the id (dense from 0 when the
// table has ids: then `table.kinds` follows; otherwise the columns are
// `table.kinds` alone).
Result<RowBlock> Reader::SmallTableRows(const SmallTable& table, const char* sql) {
  if (schema_version_ >= 5) return std::move(row_blocks_[table.name]);
  RowBlock out{table.kinds, 0, {}, {}};
  const std::string_view kinds(table.kinds);
  const bool has_id = sqlite3_strnicmp(sql, "SELECT id,", 10) == 0;
  const int offset = has_id ? 1 : 0;
  uint32_t text_columns = 0;
  for (size_t c = 0; c < kinds.size(); ++c) {
    if (kinds[c] == 't') text_columns |= 1u << (c + offset);
  }
  auto read = ForEachRow(sql, text_columns, 0, [&](sqlite3_stmt* s) -> Result<void> {
    if (has_id && sqlite3_column_int64(s, 0) != static_cast<int64_t>(out.rows)) {
      return Corrupt(std::string(table.name) == "modules" ? "module ids are not dense from 0"
                                                          : "thread ids are not dense from 0");
    }
    uint64_t bytes = 64;
    for (size_t c = 0; c < kinds.size(); ++c) {
      const int column = static_cast<int>(c) + offset;
      if (kinds[c] == 't') {
        out.texts.push_back(ColumnTextRaw(s, column));
        bytes += out.texts.back().size();
      } else {
        out.ints.push_back(FromSql(sqlite3_column_int64(s, column)));
      }
    }
    ++out.rows;
    return Spend(bytes);
  });
  if (!read) return read.error();
  return out;
}

bool ParseUnsigned(const std::string& text, uint64_t& out) {
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, out);
  return ec == std::errc() && ptr == end && !text.empty();
}

// Schema 2 frames: blocks in id order (dense from 0), each a run of frames
// whose file ids follow on from the previous block's.
Result<void> Reader::ReadFrameBlocks(const std::vector<uint32_t>& modules, Profile& profile,
                                     std::vector<uint32_t>& frame_ids) {
  int64_t next_block = 0;
  std::vector<std::pair<uint32_t, FrameRecord>> decoded;
  return ForEachRow(
      "SELECT id, raw_bytes, data FROM frame_blocks ORDER BY id", 0, 0,
      [&](sqlite3_stmt* s) -> Result<void> {
        if (sqlite3_column_int64(s, 0) != next_block++) return Corrupt("frame block ids are not dense from 0");
        const int64_t raw_bytes = sqlite3_column_int64(s, 1);
        if (raw_bytes < 0 || static_cast<uint64_t>(raw_bytes) > kMaxBlockRawBytes) {
          return Corrupt("frame block " + std::to_string(next_block - 1) + " of " + std::to_string(raw_bytes) +
                         " bytes (at most " + std::to_string(kMaxBlockRawBytes) + ")");
        }
        if (auto r = Spend(static_cast<uint64_t>(raw_bytes)); !r) return r;
        const std::string_view data(static_cast<const char*>(sqlite3_column_blob(s, 2)),
                                    static_cast<size_t>(sqlite3_column_bytes(s, 2)));
        auto raw = Inflate(data, static_cast<uint64_t>(raw_bytes));
        if (!raw) return Corrupt("frame block " + std::to_string(next_block - 1) + ": " + raw.error().message);
        decoded.clear();
        const FrameLayout layout = schema_version_ >= 5 ? FrameLayout::kNulEnded : FrameLayout::kLengths;
        if (auto r = DecodeFrameBlock(*raw, modules.size(), decoded, layout); !r) {
          return Corrupt("frame block " + std::to_string(next_block - 1) + ": " + r.error().message);
        }
        for (auto& [module, frame] : decoded) {
          if (frame_ids.size() >= CallTree::kNoFrame) return Corrupt("too many frames");
          // Runtime frame kinds (python, js) came with schema 7.
          if (schema_version_ < 7 && IsRuntimeKind(frame.kind)) {
            return Corrupt("frame block " + std::to_string(next_block - 1) + " holds a " +
                           std::string(FrameKindName(frame.kind)) + " frame, which schema " +
                           std::to_string(schema_version_) + " does not have");
          }
          if (auto r = Spend(sizeof(FrameRecord) + frame.symbol.size()); !r) return r;
          frame.module = modules[module];
          frame.symbol = EscapeControl(frame.symbol);
          frame_ids.push_back(profile.frames.Intern(frame));
        }
        return {};
      },
      0b100);
}

// Schema 2 trees: blocks of a window in id order; each record starts a tree
// (its first node the root) or continues the previous record's tree, nodes in
// depth-first preorder, each placed `pops` levels above the previous node.
Result<void> Reader::ReadTreeBlocks(const std::unordered_map<int64_t, bool>& windows,
                                    const std::vector<uint32_t>& thread_ids, const std::vector<uint32_t>& frame_ids,
                                    Profile& profile) {
  // Value types: dense ids; "base" is the profile's type 0, every other one
  // is declared in the profile by its name and unit (Profile::value_types).
  size_t value_count = 0;
  std::vector<size_t> type_of;  // file value type -> the profile's ("base" is type 0)
  std::vector<std::string> names;
  if (auto r = ForEachRow("SELECT id, name, unit FROM value_types ORDER BY id", 0b110, 0,
                          [&](sqlite3_stmt* s) -> Result<void> {
                            if (sqlite3_column_int64(s, 0) != static_cast<int64_t>(value_count) ||
                                value_count >= kMaxValueTypes) {
                              return Corrupt("value type ids are not dense from 0 or more than " +
                                             std::to_string(kMaxValueTypes));
                            }
                            if (sqlite3_column_bytes(s, 1) > 64 || sqlite3_column_bytes(s, 2) > 64) {
                              return Corrupt("a value type name or unit longer than 64 bytes");
                            }
                            const std::string name = ColumnTextRaw(s, 1);
                            if (std::find(names.begin(), names.end(), name) != names.end()) {
                              return Corrupt("value type " + EscapeControl(name) + " declared twice");
                            }
                            names.push_back(name);
                            if (name.empty()) return Corrupt("a value type without a name");
                            type_of.push_back(name == "base" ? kSamplesValue
                                                             : profile.DeclareValue(ValueType{name, ColumnTextRaw(s, 2)}));
                            ++value_count;
                            return {};
                          });
      !r) {
    return r;
  }
  // Schema 4 codes the nodes by context, schema 5 its other value types sparsely.
  const TreeLayout layout = schema_version_ >= 5   ? TreeLayout::kContextSparse
                            : schema_version_ == 4 ? TreeLayout::kContext
                                                   : TreeLayout::kColumns;
  int64_t window = -1;
  int64_t thread = -1;             // file thread of the open tree, -1 when none
  std::vector<uint32_t> path;      // nodes from the root to the previous node, in the profile's tree
  return ForEachRow(
      "SELECT id, window_id, raw_bytes, data FROM tree_blocks ORDER BY window_id, id", 0, 0,
      [&](sqlite3_stmt* s) -> Result<void> {
        const int64_t block = sqlite3_column_int64(s, 0);
        const std::string where = "tree block " + std::to_string(block);
        if (sqlite3_column_int64(s, 1) != window) {
          window = sqlite3_column_int64(s, 1);
          thread = -1;
          if (!windows.count(window)) {
            return Corrupt(where + " of window " + std::to_string(window) + ", which does not exist");
          }
        }
        const int64_t raw_bytes = sqlite3_column_int64(s, 2);
        if (raw_bytes < 0 || static_cast<uint64_t>(raw_bytes) > kMaxBlockRawBytes) {
          return Corrupt(where + " of " + std::to_string(raw_bytes) + " bytes (at most " +
                         std::to_string(kMaxBlockRawBytes) + ")");
        }
        if (auto r = Spend(static_cast<uint64_t>(raw_bytes)); !r) return r;
        const std::string_view data(static_cast<const char*>(sqlite3_column_blob(s, 3)),
                                    static_cast<size_t>(sqlite3_column_bytes(s, 3)));
        auto raw = Inflate(data, static_cast<uint64_t>(raw_bytes));
        if (!raw) return Corrupt(where + ": " + raw.error().message);
        auto records = DecodeTreeBlock(*raw, value_count, thread_ids.size(), frame_ids.size(), layout);
        if (!records) return Corrupt(where + ": " + records.error().message);
        for (const TreeRecord& rec : *records) {
          if (rec.continues && rec.thread != thread) {
            return Corrupt(where + " continues a call tree of thread " + std::to_string(rec.thread) +
                           " that no record before it started");
          }
          thread = rec.thread;
          CallTree& tree = profile.threads[thread_ids[rec.thread]].tree;
          if (auto r = Spend((sizeof(CallTree::Node) + sizeof(uint32_t) + sizeof(uint64_t) * value_count) *
                             rec.n.size());
              !r) {
            return r;
          }
          // Room for a new tree's first record up front: growing the child
          // index and the node vector node by node was a tenth of `report`'s
          // time (the page faults of every doubling). Later records (a tree
          // continued, other windows) grow as usual.
          if (!rec.continues && tree.size() <= 1) tree.Reserve(rec.n.size());
          size_t first = 0;
          if (!rec.continues) {
            path.assign(1, 0);
            first = 1;
          }
          for (size_t i = 0; i < rec.n.size(); ++i) {
            uint32_t target = 0;
            if (i >= first) {
              const uint32_t pops = rec.pops[i - first];
              if (pops >= path.size()) {
                return Corrupt(where + ": a call tree node of thread " + std::to_string(rec.thread) +
                               " climbs above its root");
              }
              path.resize(path.size() - pops);
              target = tree.Child(path.back(), frame_ids[rec.frames[i - first]]);
              path.push_back(target);
            }
            const uint64_t n = rec.n[i];
            if (n > kMaxCount) {
              return Corrupt(where + ": a call tree node of thread " + std::to_string(rec.thread) +
                             " has an absurd count (" + std::to_string(n) + ")");
            }
            tree.Add(target, n, kSamplesValue, 0);
            for (size_t type = 0; type < value_count; ++type) {
              const uint64_t value = rec.values[i * value_count + type];
              const uint64_t bound = type_of[type] == kSamplesValue ? kMaxCount : uint64_t{1} << 62;
              if (value > bound) {
                return Corrupt(where + ": a call tree node of thread " + std::to_string(rec.thread) +
                               " has an absurd value (" + std::to_string(value) + ")");
              }
              tree.Add(target, 0, type_of[type], value);
            }
          }
        }
        return {};
      },
      0b1000);
}

Result<CaptureIdentity> Reader::ReadIdentity() {
  CaptureIdentity id;
  int64_t first = -1;
  if (auto r = ForEachRow("SELECT id, uuid FROM captures ORDER BY id LIMIT 1", 0b10, 0,
                          [&](sqlite3_stmt* s) -> Result<void> {
                            first = sqlite3_column_int64(s, 0);
                            id.uuid = ColumnText(s, 1).substr(0, 64);
                            return {};
                          });
      !r) {
    return r.error();
  }
  if (first < 1 || id.uuid.empty()) return Corrupt("it holds no capture");
  auto stmt = Prepare("SELECT key, value FROM meta WHERE capture_id = ?");
  if (!stmt) return stmt.error();
  stmt->Bind(1, first);
  uint64_t start_mono = 0, end_mono = 0;
  if (auto r = db_.ForEachRow(*stmt, [&](sqlite3_stmt* s) -> Result<void> {
        const std::string key = ColumnTextRaw(s, 0);
        uint64_t* out = key == "start_unix_ns"        ? &id.start_unix_ns
                        : key == "start_monotonic_ns" ? &start_mono
                        : key == "end_monotonic_ns"   ? &end_mono
                                                      : nullptr;
        if (out && !ParseUnsigned(ColumnTextRaw(s, 1), *out)) return Corrupt("meta " + key + " is not a number");
        return {};
      });
      !r) {
    return r.error();
  }
  if (end_mono < start_mono) return Corrupt("the capture ends before it starts");
  id.end_unix_ns = id.start_unix_ns + (end_mono - start_mono);
  return id;
}

Result<Profile> Reader::ReadAll() {
  Profile profile;

  // Store-level keys, then the first capture's metadata.
  std::unordered_map<std::string, std::string> store_meta;
  std::unordered_map<std::string, std::string> capture_meta;
  int64_t first_capture = -1;
  if (auto r = ForEachRow("SELECT id FROM captures ORDER BY id LIMIT 1", 0, 0,
                          [&](sqlite3_stmt* s) -> Result<void> {
                            first_capture = sqlite3_column_int64(s, 0);
                            return {};
                          });
      !r) {
    return r.error();
  }
  if (first_capture < 1) return Corrupt("it holds no capture");
  {
    auto stmt = Prepare("SELECT capture_id, key, value FROM meta WHERE capture_id IN (0, ?)");
    if (!stmt) return stmt.error();
    stmt->Bind(1, first_capture);
    if (auto r = db_.ForEachRow(*stmt, [&](sqlite3_stmt* s) -> Result<void> {
          if (sqlite3_column_type(s, 0) != SQLITE_INTEGER || sqlite3_column_type(s, 1) != SQLITE_TEXT ||
              sqlite3_column_type(s, 2) != SQLITE_TEXT) {
            return Corrupt("a meta row holds values of the wrong type");
          }
          auto& target = sqlite3_column_int64(s, 0) == kStoreMetaId ? store_meta : capture_meta;
          std::string key = ColumnText(s, 1), value = ColumnText(s, 2);
          if (auto r = Spend(key.size() + value.size()); !r) return r;
          target[std::move(key)] = std::move(value);
          return {};
        });
        !r) {
      return r.error();
    }
  }
  {
    uint64_t version = 0;
    auto it = store_meta.find("schema_version");
    if (it == store_meta.end() || !ParseUnsigned(it->second, version) || version > 1u << 30) {
      return Corrupt("meta schema_version is missing or not a number");
    }
    if (auto r = CheckSchemaVersion(static_cast<int64_t>(version)); !r) return r.error();
    for (const auto& [key, value] : store_meta) {
      if (std::find(std::begin(kStoreKeys), std::end(kStoreKeys), key) == std::end(kStoreKeys)) {
        return Corrupt("meta holds an unknown store key '" + key.substr(0, 64) + "'");
      }
    }
  }
  CaptureMeta& meta = profile.meta;
  meta.schema_version = schema_version_;
  auto text = [&](const char* key, std::string& out) {
    if (auto it = capture_meta.find(key); it != capture_meta.end()) out = it->second;
  };
  auto number = [&](const char* key, uint64_t& out) -> Result<void> {
    auto it = capture_meta.find(key);
    if (it == capture_meta.end()) return {};
    if (!ParseUnsigned(it->second, out)) {
      return Corrupt(std::string("meta ") + key + " is not a number: '" + it->second + "'");
    }
    return {};
  };
  text("host", meta.host);
  text("kernel", meta.kernel);
  text("event", meta.event);
  text("command_line", meta.command_line);
  text("target", meta.target);
  text("call_graph", meta.call_graph);
  text("arcprof_version", meta.arcprof_version);
  // Captures written before the arcflow bindings were derived also carry meta
  // unit/occurrences/consumers (always samples/samples/functions): ignored.
  for (auto [key, out] : {std::pair{"start_monotonic_ns", &meta.start_monotonic_ns},
                          std::pair{"end_monotonic_ns", &meta.end_monotonic_ns},
                          std::pair{"start_unix_ns", &meta.start_unix_ns},
                          std::pair{"frequency_hz", &meta.frequency_hz}}) {
    if (auto r = number(key, *out); !r) return r.error();
  }
  // Values no recording can have (a report would divide by them).
  if (!capture_meta.count("frequency_hz")) return Corrupt("meta frequency_hz is missing");
  const bool clock_event = meta.event == "cpu-clock" || meta.event == "task-clock" || meta.event.empty();
  if (meta.frequency_hz > kMaxFrequencyHz || (meta.frequency_hz == 0 && clock_event)) {
    return Corrupt("meta frequency_hz = " + std::to_string(meta.frequency_hz) + " is impossible for a " +
                   (meta.event.empty() ? std::string("clock") : meta.event.substr(0, 64)) + " recording (1 to " +
                   std::to_string(kMaxFrequencyHz) + " Hz; 0 only for counts of events that are not clocks)");
  }
  if (meta.end_monotonic_ns < meta.start_monotonic_ns) {
    return Corrupt("the capture ends before it starts (meta end_monotonic_ns " + std::to_string(meta.end_monotonic_ns) +
                   " < start_monotonic_ns " + std::to_string(meta.start_monotonic_ns) + ")");
  }

  // Modules and frames: ids dense from 0, so a vector maps file ids to ours.
  // Each path is held once, in the profile's module table.
  if (schema_version_ >= 5) {
    if (auto r = ReadRowBlocks(); !r) return r.error();
  }
  std::vector<uint32_t> modules;
  {
    auto rows = SmallTableRows(kModulesRows, "SELECT id, path, build_id FROM modules ORDER BY id");
    if (!rows) return rows.error();
    for (size_t m = 0; m < rows->rows; ++m) {
      const std::string& raw_path = rows->texts[2 * m];
      const std::string& raw_build_id = rows->texts[2 * m + 1];
      if (raw_path.size() > kMaxPathBytes || raw_build_id.size() > 128) {
        return Corrupt("module " + std::to_string(m) + " has a path or build id longer than a file system allows");
      }
      if (auto r = Spend(raw_path.size() + 64); !r) return r.error();
      const std::string path = EscapeControl(raw_path);
      modules.push_back(profile.frames.InternModule(path));
      std::string build_id = EscapeControl(raw_build_id);
      if (!build_id.empty()) profile.build_ids[path] = build_id;
    }
  }
  std::vector<uint32_t> frame_ids;  // file frame id -> FrameTable id
  if (schema_version_ >= 2) {
    if (auto r = ReadFrameBlocks(modules, profile, frame_ids); !r) return r.error();
  } else {
    if (auto r = ForEachRow(
            "SELECT id, module_id, symbol, address, kind, reason, inlined FROM frames ORDER BY id",
            0b100, 0, [&](sqlite3_stmt* s) -> Result<void> {
              if (sqlite3_column_int64(s, 0) != static_cast<int64_t>(frame_ids.size()) ||
                  frame_ids.size() >= CallTree::kNoFrame) {
                return Corrupt("frame ids are not dense from 0");
              }
              const int64_t module = sqlite3_column_int64(s, 1);
              const int64_t kind = sqlite3_column_int64(s, 4);
              const int64_t reason = sqlite3_column_int64(s, 5);
              const int64_t inlined = sqlite3_column_int64(s, 6);
              if (module < 0 || module >= static_cast<int64_t>(modules.size())) {
                return Corrupt("frame " + std::to_string(frame_ids.size()) + " names module " +
                               std::to_string(module) + ", which does not exist");
              }
              if (kind < 0 || kind > static_cast<int64_t>(FrameKind::kUnknown) || reason < 0 ||  // schema 1 only
                  reason >= kUnknownReasonCount || (inlined != 0 && inlined != 1)) {
                return Corrupt("frame " + std::to_string(frame_ids.size()) +
                               " has an invalid kind, reason or inlined flag");
              }
              if (static_cast<size_t>(sqlite3_column_bytes(s, 2)) > kMaxSymbolBytes) {
                return Corrupt("frame " + std::to_string(frame_ids.size()) + " has a symbol of " +
                               std::to_string(sqlite3_column_bytes(s, 2)) + " bytes (at most " +
                               std::to_string(kMaxSymbolBytes) + ")");
              }
              // The module path is held once, in the module table (spent above).
              if (auto r = Spend(sizeof(FrameRecord) + static_cast<uint64_t>(sqlite3_column_bytes(s, 2)));
                  !r) {
                return r;
              }
              FrameRecord frame;
              frame.module = modules[static_cast<size_t>(module)];
              frame.symbol = ColumnText(s, 2);
              frame.address = FromSql(sqlite3_column_int64(s, 3));
              frame.kind = static_cast<FrameKind>(kind);
              frame.reason = static_cast<UnknownReason>(reason);
              frame.inlined = inlined == 1;
              frame_ids.push_back(profile.frames.Intern(frame));
              return {};
            });
        !r) {
      return r.error();
    }
  }

  // Captures of several machines (a merge): each thread keeps its host, and
  // every view puts the host above the process. Captures of one machine merge:
  // the same (pid, tid) in several captures is one thread.
  std::unordered_map<int64_t, std::string> capture_hosts;
  std::vector<std::string> hosts;
  if (auto r = ForEachRow("SELECT id, host FROM captures ORDER BY id", 0b10, 0, [&](sqlite3_stmt* s) -> Result<void> {
        std::string host = ColumnText(s, 1);
        if (std::find(hosts.begin(), hosts.end(), host) == hosts.end()) hosts.push_back(host);
        capture_hosts[sqlite3_column_int64(s, 0)] = std::move(host);
        return {};
      });
      !r) {
    return r.error();
  }
  const bool multi_host = hosts.size() > 1;
  if (multi_host) {
    meta.host.clear();
    for (const std::string& host : hosts) meta.host += (meta.host.empty() ? "" : ",") + host;
  }

  std::vector<uint32_t> thread_ids;  // file thread id -> profile thread index
  {
    auto rows = SmallTableRows(
        kThreadsRows, "SELECT id, capture_id, pid, tid, comm, process_comm, cmdline FROM threads ORDER BY id");
    if (!rows) return rows.error();
    // Schema 6 rows carry the process identity: one integer and six texts
    // more; schema 8 rows then the process's start.
    const bool identity = schema_version_ >= 6, start = schema_version_ >= 8;
    const size_t ints = start ? 5 : identity ? 4 : 3, texts = identity ? 9 : 3;
    for (size_t t = 0; t < rows->rows; ++t) {
      const uint64_t capture = rows->ints[ints * t], pid = rows->ints[ints * t + 1], tid = rows->ints[ints * t + 2];
      const std::string& comm = rows->texts[texts * t];
      const std::string& process_comm = rows->texts[texts * t + 1];
      const std::string& cmdline = rows->texts[texts * t + 2];
      if (pid > UINT32_MAX || tid > UINT32_MAX) {  // negative ones too (bit cast)
        return Corrupt("thread " + std::to_string(t) + " has an invalid pid or tid");
      }
      if (comm.size() > kMaxNameBytes || process_comm.size() > kMaxNameBytes) {
        return Corrupt("thread " + std::to_string(t) + " has a name longer than " + std::to_string(kMaxNameBytes) +
                       " bytes");
      }
      model::ProcessIdentity process;
      uint64_t identity_bytes = 0;
      if (identity) {
        const uint64_t ns_pid = rows->ints[ints * t + 3];
        if (ns_pid > UINT32_MAX) return Corrupt("thread " + std::to_string(t) + " has an invalid namespaced pid");
        process.ns_pid = static_cast<uint32_t>(ns_pid);
        std::string* fields[] = {&process.container_id, &process.container_runtime, &process.pod_uid,
                                 &process.qos_class,    &process.service_name,      &process.cgroup};
        for (size_t f = 0; f < std::size(fields); ++f) {
          const std::string& raw = rows->texts[texts * t + 3 + f];
          // A cgroup path of 4,096 bytes, each escaped as \xNN at worst.
          if (raw.size() > 4 * kMaxNameBytes) {
            return Corrupt("thread " + std::to_string(t) + " has a container, pod, service or cgroup field of " +
                           std::to_string(raw.size()) + " bytes (at most " + std::to_string(4 * kMaxNameBytes) +
                           ")");
          }
          identity_bytes += raw.size();
          *fields[f] = EscapeControl(raw);
        }
      }
      if (auto r = Spend(sizeof(ThreadRecord) + sizeof(CallTree) + comm.size() + process_comm.size() + cmdline.size() +
                         identity_bytes);
          !r) {
        return r.error();
      }
      std::string host;
      if (multi_host) {
        auto it = capture_hosts.find(static_cast<int64_t>(capture));
        if (it == capture_hosts.end()) {
          return Corrupt("thread " + std::to_string(t) + " of a capture that does not exist");
        }
        host = it->second.empty() ? "[unknown host]" : it->second;
      }
      const uint64_t process_start = start ? rows->ints[ints * t + 4] : 0;
      if (process_start > kMaxProcessStartNs) {
        return Corrupt("thread " + std::to_string(t) + " has an impossible process start " +
                       std::to_string(static_cast<int64_t>(process_start)));
      }
      // The same thread of the same process in several captures is one
      // record; a pid another process held (another start) is another.
      const uint32_t index =
          profile.ThreadIndex(host, static_cast<uint32_t>(pid), static_cast<uint32_t>(tid), process_start);
      ThreadRecord& thread = profile.threads[index];
      thread.comm = EscapeControl(comm);
      thread.process_comm = EscapeControl(process_comm);
      thread.cmdline = EscapeControl(cmdline);
      if (identity) thread.identity = std::move(process);
      thread_ids.push_back(index);
    }
  }

  std::unordered_map<int64_t, bool> windows;
  if (auto r = ForEachRow("SELECT id FROM windows", 0, 0, [&](sqlite3_stmt* s) -> Result<void> {
        windows[sqlite3_column_int64(s, 0)] = true;
        return {};
      });
      !r) {
    return r.error();
  }

  if (schema_version_ >= 2) {
    if (auto r = ReadTreeBlocks(windows, thread_ids, frame_ids, profile); !r) return r.error();
  } else {
    // Nodes come grouped by (window, thread) and ordered by node id; each group is
    // replayed into the thread's tree so windows add up node by node.
    int64_t group_window = -1;
    int64_t group_thread = -1;
    std::vector<uint32_t> node_map;  // file node id -> node in the profile tree
    auto has_offcpu = HasTable("offcpu_nodes");
    if (!has_offcpu) return has_offcpu.error();
    if (auto r = ForEachRow(
            *has_offcpu
                ? "SELECT n.window_id, n.thread_id, n.node_id, n.parent_id, n.frame_id, n.n, "
                  "n.base, o.ns FROM nodes n LEFT JOIN offcpu_nodes o USING (window_id, "
                  "thread_id, node_id) ORDER BY n.window_id, n.thread_id, n.node_id"
                : "SELECT window_id, thread_id, node_id, parent_id, frame_id, n, base, NULL "
                  "FROM nodes ORDER BY window_id, thread_id, node_id",
            0, 0b10011000, [&](sqlite3_stmt* s) -> Result<void> {
              const int64_t window = sqlite3_column_int64(s, 0);
              const int64_t thread = sqlite3_column_int64(s, 1);
              const int64_t node = sqlite3_column_int64(s, 2);
              if (window != group_window || thread != group_thread) {
                if (!windows.count(window)) {
                  return Corrupt("call tree node of window " + std::to_string(window) +
                                 ", which does not exist");
                }
                if (thread < 0 || thread >= static_cast<int64_t>(thread_ids.size())) {
                  return Corrupt("call tree of thread " + std::to_string(thread) + ", which does not exist");
                }
                group_window = window;
                group_thread = thread;
                node_map.clear();
              }
              if (node != static_cast<int64_t>(node_map.size()) || node >= UINT32_MAX) {
                return Corrupt("call tree node ids of thread " + std::to_string(thread) +
                               " are not dense from 0");
              }
              const int64_t n = sqlite3_column_int64(s, 5);
              const int64_t base = sqlite3_column_int64(s, 6);
              const int64_t offcpu = sqlite3_column_int64(s, 7);  // 0 for NULL
              if (n < 0 || base < 0 || offcpu < 0) {
                return Corrupt("call tree node with a negative count");
              }
              if (static_cast<uint64_t>(n) > kMaxCount || static_cast<uint64_t>(base) > kMaxCount) {
                return Corrupt("call tree node " + std::to_string(node) + " of thread " +
                               std::to_string(thread) + " has an absurd count (" +
                               std::to_string(std::max(n, base)) + ")");
              }
              if (auto r = Spend(sizeof(CallTree::Node) + sizeof(uint32_t) + 2 * sizeof(uint64_t)); !r) return r;
              const bool root_shape = sqlite3_column_type(s, 3) == SQLITE_NULL &&
                                      sqlite3_column_type(s, 4) == SQLITE_NULL;
              CallTree& tree = profile.threads[thread_ids[static_cast<size_t>(thread)]].tree;
              uint32_t target = 0;
              if (node == 0) {
                if (!root_shape) return Corrupt("call tree root node has a parent or frame");
              } else {
                const int64_t parent = sqlite3_column_int64(s, 3);
                const int64_t frame = sqlite3_column_int64(s, 4);
                if (root_shape || sqlite3_column_type(s, 3) == SQLITE_NULL ||
                    sqlite3_column_type(s, 4) == SQLITE_NULL || parent < 0 || parent >= node ||
                    frame < 0 || frame >= static_cast<int64_t>(frame_ids.size())) {
                  return Corrupt("call tree node " + std::to_string(node) + " of thread " +
                                 std::to_string(thread) + " has an invalid parent or frame");
                }
                target = tree.Child(node_map[static_cast<size_t>(parent)],
                                    frame_ids[static_cast<size_t>(frame)]);
              }
              tree.Add(target, FromSql(n), kSamplesValue, FromSql(base));
              if (offcpu > 0) tree.Add(target, 0, profile.DeclareValue(model::kOffCpuNs.type()), FromSql(offcpu));
              node_map.push_back(target);
              return {};
            });
        !r) {
      return r.error();
    }
  }

  {
    auto rows = SmallTableRows(kCountersRows, "SELECT window_id, name, value FROM counters");
    if (!rows) return rows.error();
    for (size_t c = 0; c < rows->rows; ++c) {
      if (!windows.count(static_cast<int64_t>(rows->ints[2 * c]))) {
        return Corrupt("counter of a window that does not exist");
      }
      std::string name = EscapeControl(rows->texts[c]);
      const int64_t value = static_cast<int64_t>(rows->ints[2 * c + 1]);
      if (value < 0 || value > (int64_t{1} << 62)) {
        return Corrupt("counter " + name.substr(0, 64) + " has an impossible value " + std::to_string(value));
      }
      if (auto r = Spend(name.size() + 64); !r) return r.error();
      profile.counters[std::move(name)] += value;
    }
  }
  // Optional tables: absent in captures recorded without --ptt.
  if (auto r = ReadPttTables(db_, path_, schema_version_, profile.ptt,
                             [this](uint64_t bytes) { return Spend(bytes); });
      !r) {
    return r.error();
  }
  // Last, so that the checks above name what is wrong when they can.
  if (auto r = CheckContentChecksum(store_meta); !r) return r.error();
  return profile;
}

}  // namespace

Result<Profile> ReadCapture(const std::string& path) {
  Reader reader(path);
  Result<void> checked = reader.Open();
  if (checked) checked = reader.CheckIdentity();
  if (checked) checked = reader.CheckSchema();  // before anything reads a row
  if (checked) checked = reader.QuickCheck();
  if (checked) checked = reader.CheckTables();
  Result<Profile> profile = checked ? reader.ReadAll() : Result<Profile>(checked.error());
  if (profile) return profile;
  return MakeError(SqlOneLine(profile.error().message), profile.error().kind);
}

Result<CaptureIdentity> ReadCaptureIdentity(const std::string& path) {
  Reader reader(path);
  Result<void> checked = reader.Open();
  if (checked) checked = reader.CheckIdentity();
  if (checked) checked = reader.CheckSchema();  // before anything reads a row
  Result<CaptureIdentity> id = checked ? reader.ReadIdentity() : Result<CaptureIdentity>(checked.error());
  if (id) return id;
  return MakeError(SqlOneLine(id.error().message), id.error().kind);
}

}  // namespace arcprof::store
