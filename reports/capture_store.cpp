#include "reports/capture_store.h"

#include <sqlite3.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <memory>
#include <random>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "reports/atomic_file.h"
#include "reports/ptt_store.h"

namespace arcprof {
namespace {

// capture_id 0 in the meta table holds the keys of the store itself.
constexpr int64_t kStoreMetaId = 0;

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
CREATE TABLE counters (
  window_id INTEGER NOT NULL REFERENCES windows(id),
  name TEXT NOT NULL,
  value INTEGER NOT NULL,
  PRIMARY KEY (window_id, name)
) WITHOUT ROWID;
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

constexpr const char* kTableNames[] = {"meta",    "captures", "windows", "threads",
                                       "modules", "frames",   "nodes",   "counters"};

struct DbCloser {
  void operator()(sqlite3* db) const { sqlite3_close_v2(db); }
};
using DbPtr = std::unique_ptr<sqlite3, DbCloser>;

struct StmtFinalizer {
  void operator()(sqlite3_stmt* stmt) const { sqlite3_finalize(stmt); }
};
using StmtPtr = std::unique_ptr<sqlite3_stmt, StmtFinalizer>;

// SQLite stores signed 64-bit integers; addresses and counts are unsigned and
// round-trip through a bit cast (kernel addresses are stored negative).
int64_t ToSql(uint64_t v) { return static_cast<int64_t>(v); }
uint64_t FromSql(int64_t v) { return static_cast<uint64_t>(v); }

std::string Hex128() {
  std::random_device random;
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  for (int i = 0; i < 8; ++i) {
    const uint32_t word = random();
    for (int nibble = 0; nibble < 4; ++nibble) out += kDigits[(word >> (nibble * 4)) & 0xf];
  }
  return out;
}

// ---------------------------------------------------------------- writing

class Writer {
 public:
  Writer(sqlite3* db, const std::string& path) : db_(db), path_(path) {}
  sqlite3* db() const { return db_; }
  const std::string& path() const { return path_; }

  Result<void> Exec(const char* sql) {
    char* message = nullptr;
    if (sqlite3_exec(db_, sql, nullptr, nullptr, &message) != SQLITE_OK) {
      std::string text = message ? message : sqlite3_errmsg(db_);
      sqlite3_free(message);
      return Fail(text);
    }
    return {};
  }

  Result<StmtPtr> Prepare(const char* sql) {
    sqlite3_stmt* stmt = nullptr;
    if (sqlite3_prepare_v2(db_, sql, -1, &stmt, nullptr) != SQLITE_OK) {
      return Fail(sqlite3_errmsg(db_));
    }
    return StmtPtr(stmt);
  }

  // Binds the values in order, steps once and resets the statement.
  template <typename... Values>
  Result<void> Insert(sqlite3_stmt* stmt, const Values&... values) {
    int index = 0;
    (Bind(stmt, ++index, values), ...);
    const int rc = sqlite3_step(stmt);
    sqlite3_reset(stmt);
    sqlite3_clear_bindings(stmt);
    if (rc != SQLITE_DONE) return Fail(sqlite3_errmsg(db_));
    return {};
  }

 private:
  static void Bind(sqlite3_stmt* stmt, int index, int64_t v) { sqlite3_bind_int64(stmt, index, v); }
  static void Bind(sqlite3_stmt* stmt, int index, const std::string& v) {
    sqlite3_bind_text(stmt, index, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
  }
  static void Bind(sqlite3_stmt* stmt, int index, std::nullptr_t) { sqlite3_bind_null(stmt, index); }

  Error Fail(const std::string& what) const {
    return MakeError(path_ + ": cannot write capture: " + what, kCaptureErrorExitCode);
  }

  sqlite3* db_;
  const std::string& path_;
};

std::vector<std::pair<std::string, std::string>> CaptureMetaRows(const CaptureMeta& meta) {
  return {
      {"host", meta.host},
      {"kernel", meta.kernel},
      {"start_monotonic_ns", std::to_string(meta.start_monotonic_ns)},
      {"end_monotonic_ns", std::to_string(meta.end_monotonic_ns)},
      {"start_unix_ns", std::to_string(meta.start_unix_ns)},
      {"event", meta.event},
      {"frequency_hz", std::to_string(meta.frequency_hz)},
      {"command_line", meta.command_line},
      {"target", meta.target},
      {"call_graph", meta.call_graph},
      {"arcprof_version", meta.arcprof_version},
      {"unit", meta.unit},
      {"occurrences", meta.occurrences},
      {"consumers", meta.consumers},
  };
}

Result<void> FillCapture(Writer& w, const Profile& profile) {
  constexpr int64_t kCaptureId = 1;
  constexpr int64_t kWindowId = 1;
  if (auto r = w.Exec("BEGIN"); !r) return r;
  if (auto r = w.Exec(kSchemaSql); !r) return r;

  auto meta = w.Prepare("INSERT INTO meta (capture_id, key, value) VALUES (?, ?, ?)");
  if (!meta) return meta.error();
  for (const auto& [key, value] : std::vector<std::pair<std::string, std::string>>{
           {"format", "arcprof capture"},
           {"schema_version", std::to_string(kCaptureSchemaVersion)},
       }) {
    if (auto r = w.Insert(meta->get(), kStoreMetaId, key, value); !r) return r;
  }

  // A merge of several machines (ThreadRecord::host) is one capture and one
  // window per host, each thread under its host's capture; otherwise one of each.
  std::vector<std::string> hosts;
  std::unordered_map<std::string, int64_t> host_ids;
  for (const ThreadRecord& t : profile.threads) {
    if (!t.host.empty() && host_ids.try_emplace(t.host, static_cast<int64_t>(hosts.size()) + 1).second) {
      hosts.push_back(t.host);
    }
  }
  if (hosts.empty()) hosts.push_back(profile.meta.host);
  auto capture_of = [&](const ThreadRecord& t) -> int64_t {
    auto it = host_ids.find(t.host);
    return it == host_ids.end() ? kCaptureId : it->second;
  };
  for (size_t h = 0; h < hosts.size(); ++h) {
    CaptureMeta host_meta = profile.meta;
    host_meta.host = hosts[h];
    for (const auto& [key, value] : CaptureMetaRows(host_meta)) {
      if (auto r = w.Insert(meta->get(), static_cast<int64_t>(h) + 1, key, value); !r) return r;
    }
  }

  auto capture = w.Prepare("INSERT INTO captures (id, uuid, host) VALUES (?, ?, ?)");
  if (!capture) return capture.error();
  auto window = w.Prepare("INSERT INTO windows (id, capture_id, start_ns, end_ns) VALUES (?, ?, ?, ?)");
  if (!window) return window.error();
  for (size_t h = 0; h < hosts.size(); ++h) {
    const int64_t id = static_cast<int64_t>(h) + 1;  // capture h+1 has window h+1
    if (auto r = w.Insert(capture->get(), id, Hex128(), hosts[h]); !r) return r;
    if (auto r = w.Insert(window->get(), id, id, ToSql(profile.meta.start_monotonic_ns),
                          ToSql(profile.meta.end_monotonic_ns));
        !r) {
      return r;
    }
  }

  auto thread = w.Prepare(
      "INSERT INTO threads (id, capture_id, pid, tid, comm, process_comm, cmdline) "
      "VALUES (?, ?, ?, ?, ?, ?, ?)");
  if (!thread) return thread.error();
  for (size_t i = 0; i < profile.threads.size(); ++i) {
    const ThreadRecord& t = profile.threads[i];
    if (auto r = w.Insert(thread->get(), static_cast<int64_t>(i), capture_of(t), int64_t{t.pid},
                          int64_t{t.tid}, t.comm, t.process_comm, t.cmdline);
        !r) {
      return r;
    }
  }

  auto module = w.Prepare("INSERT INTO modules (id, path, build_id) VALUES (?, ?, ?)");
  if (!module) return module.error();
  auto frame = w.Prepare(
      "INSERT INTO frames (id, module_id, symbol, address, kind, reason, inlined) "
      "VALUES (?, ?, ?, ?, ?, ?, ?)");
  if (!frame) return frame.error();
  std::unordered_map<std::string, int64_t> module_ids;
  const auto& frames = profile.frames.all();
  for (size_t i = 0; i < frames.size(); ++i) {
    const FrameRecord& f = frames[i];
    auto [it, inserted] = module_ids.try_emplace(f.module, static_cast<int64_t>(module_ids.size()));
    if (inserted) {
      auto build_id = profile.build_ids.find(f.module);
      const std::string id = build_id == profile.build_ids.end() ? "" : build_id->second;
      if (auto r = w.Insert(module->get(), it->second, f.module, id); !r) return r;
    }
    if (auto r = w.Insert(frame->get(), static_cast<int64_t>(i), it->second, f.symbol,
                          ToSql(f.address), int64_t{static_cast<uint8_t>(f.kind)},
                          int64_t{static_cast<uint8_t>(f.reason)}, int64_t{f.inlined ? 1 : 0});
        !r) {
      return r;
    }
  }

  auto node = w.Prepare(
      "INSERT INTO nodes (window_id, thread_id, node_id, parent_id, frame_id, n, base) "
      "VALUES (?, ?, ?, ?, ?, ?, ?)");
  if (!node) return node.error();
  for (size_t t = 0; t < profile.trees.size(); ++t) {
    const auto& nodes = profile.trees[t].nodes();
    for (size_t i = 0; i < nodes.size(); ++i) {
      const CallTree::Node& nd = nodes[i];
      const int64_t window_id = capture_of(profile.threads[t]);
      Result<void> r = i == 0 ? w.Insert(node->get(), window_id, static_cast<int64_t>(t), int64_t{0},
                                         nullptr, nullptr, ToSql(nd.n), ToSql(nd.base))
                              : w.Insert(node->get(), window_id, static_cast<int64_t>(t),
                                         static_cast<int64_t>(i), int64_t{nd.parent},
                                         int64_t{nd.frame}, ToSql(nd.n), ToSql(nd.base));
      if (!r) return r;
    }
  }

  // Off-CPU time (record --off-cpu): an optional table, present only when
  // some node has any, so that captures without it keep schema 1 as it was.
  bool any_offcpu = false;
  for (const CallTree& tree : profile.trees) {
    for (const CallTree::Node& nd : tree.nodes()) any_offcpu = any_offcpu || nd.offcpu > 0;
  }
  if (any_offcpu) {
    if (auto r = w.Exec(kOffCpuSchemaSql); !r) return r;
    auto offcpu = w.Prepare(
        "INSERT INTO offcpu_nodes (window_id, thread_id, node_id, ns) VALUES (?, ?, ?, ?)");
    if (!offcpu) return offcpu.error();
    for (size_t t = 0; t < profile.trees.size(); ++t) {
      const auto& nodes = profile.trees[t].nodes();
      for (size_t i = 0; i < nodes.size(); ++i) {
        if (nodes[i].offcpu == 0) continue;
        if (auto r = w.Insert(offcpu->get(), kWindowId, static_cast<int64_t>(t),
                              static_cast<int64_t>(i), ToSql(nodes[i].offcpu));
            !r) {
          return r;
        }
      }
    }
  }

  auto counter = w.Prepare("INSERT INTO counters (window_id, name, value) VALUES (?, ?, ?)");
  if (!counter) return counter.error();
  for (const auto& [name, value] : profile.counters) {
    if (auto r = w.Insert(counter->get(), kWindowId, name, value); !r) return r;
  }
  if (profile.ptt.recorded) {
    if (auto r = WritePttTables(w.db(), profile.ptt, kCaptureId, kWindowId, w.path()); !r) return r;
  }
  return w.Exec("COMMIT");
}

Result<void> ValidateForWriting(const std::string& path, const Profile& profile) {
  auto fail = [&](const std::string& what) {
    return MakeError(path + ": cannot write capture: " + what, kCaptureErrorExitCode);
  };
  if (profile.trees.size() != profile.threads.size()) {
    return fail("profile has " + std::to_string(profile.trees.size()) + " call trees for " +
                std::to_string(profile.threads.size()) + " threads");
  }
  for (const CallTree& tree : profile.trees) {
    const auto& nodes = tree.nodes();
    for (size_t i = 1; i < nodes.size(); ++i) {
      if (nodes[i].parent >= i || nodes[i].frame >= profile.frames.size()) {
        return fail("call tree node " + std::to_string(i) + " has an invalid parent or frame");
      }
    }
  }
  return {};
}

// ---------------------------------------------------------------- reading

// SQLite messages can quote text from the file (a malformed schema, say), and
// errors must stay one line: control characters become spaces, long text is cut.
std::string OneLine(std::string message) {
  constexpr size_t kMaxLength = 300;
  for (char& c : message) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = ' ';
  }
  if (message.size() > kMaxLength) message = message.substr(0, kMaxLength - 3) + "...";
  return message;
}

class Reader {
 public:
  explicit Reader(const std::string& path) : path_(path) {}

  Error Corrupt(const std::string& what) const {
    return MakeError(path_ + ": corrupt capture: " + what + "; re-record it or restore a good copy",
                     kCaptureErrorExitCode);
  }
  Error Fail(const std::string& what) const {
    return MakeError(path_ + ": " + what, kCaptureErrorExitCode);
  }
  // Maps an SQLite failure to the clearest one-line explanation.
  Error FromSqlite(int rc) const {
    switch (rc & 0xff) {
      case SQLITE_NOTADB:
        return Fail("not an arcprof capture (not a SQLite file)");
      case SQLITE_CORRUPT:
        return Corrupt(db_ ? sqlite3_errmsg(db_.get()) : "database disk image is malformed");
      case SQLITE_CANTOPEN:
      case SQLITE_PERM:
      case SQLITE_AUTH:
        return Fail(std::string("cannot open capture: ") + (db_ ? sqlite3_errmsg(db_.get()) : "") +
                    "; check the path and its permissions");
      default:
        return Corrupt(db_ ? sqlite3_errmsg(db_.get()) : sqlite3_errstr(rc));
    }
  }

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

    sqlite3* raw = nullptr;
    const int rc = sqlite3_open_v2(path_.c_str(), &raw, SQLITE_OPEN_READONLY, nullptr);
    db_.reset(raw);
    if (rc != SQLITE_OK) return FromSqlite(rc);
    // The file is outside input: never run code it carries (views, triggers,
    // functions in its schema) and refuse writes to the schema.
    sqlite3_db_config(db_.get(), SQLITE_DBCONFIG_DEFENSIVE, 1, nullptr);
    sqlite3_db_config(db_.get(), SQLITE_DBCONFIG_TRUSTED_SCHEMA, 0, nullptr);
    sqlite3_db_config(db_.get(), SQLITE_DBCONFIG_ENABLE_TRIGGER, 0, nullptr);
    sqlite3_db_config(db_.get(), SQLITE_DBCONFIG_ENABLE_VIEW, 0, nullptr);
    return {};
  }

  Result<int64_t> PragmaInt(const char* sql) {
    auto stmt = Prepare(sql);
    if (!stmt) return stmt.error();
    const int rc = sqlite3_step(stmt->get());
    if (rc != SQLITE_ROW) return FromSqlite(rc);
    return sqlite3_column_int64(stmt->get(), 0);
  }

  Result<StmtPtr> Prepare(const char* sql) {
    sqlite3_stmt* stmt = nullptr;
    const int rc = sqlite3_prepare_v2(db_.get(), sql, -1, &stmt, nullptr);
    if (rc != SQLITE_OK) return FromSqlite(rc);
    return StmtPtr(stmt);
  }

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
    const int rc = sqlite3_step(stmt->get());
    if (rc != SQLITE_ROW) return FromSqlite(rc);
    const auto* text = reinterpret_cast<const char*>(sqlite3_column_text(stmt->get(), 0));
    const std::string result = text ? text : "";
    if (result != "ok") return Corrupt("integrity check failed (" + FirstLine(result) + ")");
    return {};
  }

  Result<bool> HasTable(const char* name) {
    auto stmt = Prepare("SELECT type FROM sqlite_schema WHERE name = ?");
    if (!stmt) return stmt.error();
    sqlite3_bind_text(stmt->get(), 1, name, -1, SQLITE_STATIC);
    const int rc = sqlite3_step(stmt->get());
    if (rc == SQLITE_DONE) return false;
    if (rc != SQLITE_ROW) return FromSqlite(rc);
    const auto* text = reinterpret_cast<const char*>(sqlite3_column_text(stmt->get(), 0));
    if (std::string(text ? text : "") != "table") {
      return Corrupt(std::string("'") + name + "' is not a table");
    }
    return true;
  }

  Result<void> CheckTables() {
    auto stmt = Prepare("SELECT type FROM sqlite_schema WHERE name = ?");
    if (!stmt) return stmt.error();
    for (const char* name : kTableNames) {
      sqlite3_bind_text(stmt->get(), 1, name, -1, SQLITE_STATIC);
      const int rc = sqlite3_step(stmt->get());
      std::string type;
      if (rc == SQLITE_ROW) {
        const auto* text = reinterpret_cast<const char*>(sqlite3_column_text(stmt->get(), 0));
        type = text ? text : "";
      } else if (rc != SQLITE_DONE) {
        return FromSqlite(rc);
      }
      sqlite3_reset(stmt->get());
      if (type != "table") return Corrupt(std::string("table '") + name + "' is missing");
    }
    return {};
  }

  // Steps through the rows of `sql`, calling `row(stmt)` for each; stops at the
  // first error that `row` returns.
  template <typename RowFn>
  Result<void> ForEachRow(const char* sql, RowFn&& row) {
    auto stmt = Prepare(sql);
    if (!stmt) return stmt.error();
    for (;;) {
      const int rc = sqlite3_step(stmt->get());
      if (rc == SQLITE_DONE) return {};
      if (rc != SQLITE_ROW) return FromSqlite(rc);
      if (auto r = row(stmt->get()); !r) return r;
    }
  }

  Result<Profile> ReadAll();

 private:
  static std::string FirstLine(const std::string& s) { return s.substr(0, s.find('\n')); }

  const std::string& path_;
  DbPtr db_;
  int schema_version_ = 0;
};

std::string ColumnText(sqlite3_stmt* stmt, int column) {
  const auto* text = reinterpret_cast<const char*>(sqlite3_column_text(stmt, column));
  return text ? std::string(text, static_cast<size_t>(sqlite3_column_bytes(stmt, column))) : "";
}

bool ParseUnsigned(const std::string& text, uint64_t& out) {
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, out);
  return ec == std::errc() && ptr == end && !text.empty();
}

Result<Profile> Reader::ReadAll() {
  Profile profile;

  // Store-level keys, then the first capture's metadata.
  std::unordered_map<std::string, std::string> store_meta;
  std::unordered_map<std::string, std::string> capture_meta;
  int64_t first_capture = -1;
  if (auto r = ForEachRow("SELECT id FROM captures ORDER BY id LIMIT 1",
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
    sqlite3_bind_int64(stmt->get(), 1, first_capture);
    for (;;) {
      const int rc = sqlite3_step(stmt->get());
      if (rc == SQLITE_DONE) break;
      if (rc != SQLITE_ROW) return FromSqlite(rc);
      auto& target = sqlite3_column_int64(stmt->get(), 0) == kStoreMetaId ? store_meta : capture_meta;
      target[ColumnText(stmt->get(), 1)] = ColumnText(stmt->get(), 2);
    }
  }
  {
    uint64_t version = 0;
    auto it = store_meta.find("schema_version");
    if (it == store_meta.end() || !ParseUnsigned(it->second, version) || version > 1u << 30) {
      return Corrupt("meta schema_version is missing or not a number");
    }
    if (auto r = CheckSchemaVersion(static_cast<int64_t>(version)); !r) return r.error();
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
  text("unit", meta.unit);
  text("occurrences", meta.occurrences);
  text("consumers", meta.consumers);
  for (auto [key, out] : {std::pair{"start_monotonic_ns", &meta.start_monotonic_ns},
                          std::pair{"end_monotonic_ns", &meta.end_monotonic_ns},
                          std::pair{"start_unix_ns", &meta.start_unix_ns},
                          std::pair{"frequency_hz", &meta.frequency_hz}}) {
    if (auto r = number(key, *out); !r) return r.error();
  }

  // Modules and frames: ids dense from 0, so a vector maps file ids to ours.
  std::vector<std::string> modules;
  if (auto r = ForEachRow("SELECT id, path, build_id FROM modules ORDER BY id",
                          [&](sqlite3_stmt* s) -> Result<void> {
                            if (sqlite3_column_int64(s, 0) != static_cast<int64_t>(modules.size())) {
                              return Corrupt("module ids are not dense from 0");
                            }
                            modules.push_back(ColumnText(s, 1));
                            std::string build_id = ColumnText(s, 2);
                            if (!build_id.empty()) profile.build_ids[modules.back()] = build_id;
                            return {};
                          });
      !r) {
    return r.error();
  }
  std::vector<uint32_t> frame_ids;  // file frame id -> FrameTable id
  if (auto r = ForEachRow(
          "SELECT id, module_id, symbol, address, kind, reason, inlined FROM frames ORDER BY id",
          [&](sqlite3_stmt* s) -> Result<void> {
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
            if (kind < 0 || kind > static_cast<int64_t>(FrameKind::kUnknown) || reason < 0 ||
                reason >= kUnknownReasonCount || (inlined != 0 && inlined != 1)) {
              return Corrupt("frame " + std::to_string(frame_ids.size()) +
                             " has an invalid kind, reason or inlined flag");
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

  // Captures of several machines (a merge): each thread keeps its host, and
  // every view puts the host above the process. Captures of one machine merge:
  // the same (pid, tid) in several captures is one thread.
  std::unordered_map<int64_t, std::string> capture_hosts;
  std::vector<std::string> hosts;
  if (auto r = ForEachRow("SELECT id, host FROM captures ORDER BY id", [&](sqlite3_stmt* s) -> Result<void> {
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
  if (auto r = ForEachRow(
          "SELECT id, pid, tid, comm, process_comm, cmdline, capture_id FROM threads ORDER BY id",
          [&](sqlite3_stmt* s) -> Result<void> {
            const int64_t pid = sqlite3_column_int64(s, 1);
            const int64_t tid = sqlite3_column_int64(s, 2);
            if (sqlite3_column_int64(s, 0) != static_cast<int64_t>(thread_ids.size())) {
              return Corrupt("thread ids are not dense from 0");
            }
            if (pid < 0 || pid > UINT32_MAX || tid < 0 || tid > UINT32_MAX) {
              return Corrupt("thread " + std::to_string(thread_ids.size()) + " has an invalid pid or tid");
            }
            std::string host;
            if (multi_host) {
              auto it = capture_hosts.find(sqlite3_column_int64(s, 6));
              if (it == capture_hosts.end()) {
                return Corrupt("thread " + std::to_string(thread_ids.size()) + " of a capture that does not exist");
              }
              host = it->second.empty() ? "[unknown host]" : it->second;
            }
            const uint32_t index =
                profile.ThreadIndex(host, static_cast<uint32_t>(pid), static_cast<uint32_t>(tid));
            ThreadRecord& t = profile.threads[index];
            t.comm = ColumnText(s, 3);
            t.process_comm = ColumnText(s, 4);
            t.cmdline = ColumnText(s, 5);
            thread_ids.push_back(index);
            return {};
          });
      !r) {
    return r.error();
  }

  std::unordered_map<int64_t, bool> windows;
  if (auto r = ForEachRow("SELECT id FROM windows", [&](sqlite3_stmt* s) -> Result<void> {
        windows[sqlite3_column_int64(s, 0)] = true;
        return {};
      });
      !r) {
    return r.error();
  }

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
          [&](sqlite3_stmt* s) -> Result<void> {
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
            const bool root_shape = sqlite3_column_type(s, 3) == SQLITE_NULL &&
                                    sqlite3_column_type(s, 4) == SQLITE_NULL;
            CallTree& tree = profile.trees[thread_ids[static_cast<size_t>(thread)]];
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
            CallTree::Node& dest = tree.mutable_nodes()[target];
            dest.n += FromSql(n);
            dest.base += FromSql(base);
            dest.offcpu += FromSql(offcpu);
            node_map.push_back(target);
            return {};
          });
      !r) {
    return r.error();
  }

  if (auto r = ForEachRow("SELECT window_id, name, value FROM counters",
                          [&](sqlite3_stmt* s) -> Result<void> {
                            if (!windows.count(sqlite3_column_int64(s, 0))) {
                              return Corrupt("counter of a window that does not exist");
                            }
                            profile.counters[ColumnText(s, 1)] += sqlite3_column_int64(s, 2);
                            return {};
                          });
      !r) {
    return r.error();
  }
  // Optional tables: absent in captures recorded without --ptt.
  if (auto r = ReadPttTables(db_.get(), path_, profile.ptt); !r) return r.error();
  return profile;
}

}  // namespace

Result<void> WriteCapture(const std::string& path, const Profile& profile) {
  if (auto r = ValidateForWriting(path, profile); !r) return r;
  auto file = AtomicFile::Create(path);
  if (!file) return MakeError(file.error().message, kCaptureErrorExitCode);
  // SQLite reopens the file by name; the empty file we created is a valid
  // empty database and keeps its 0600 mode.
  file->CloseFd();

  {
    sqlite3* raw = nullptr;
    const int rc = sqlite3_open_v2(file->temp_path().c_str(), &raw,
                                   SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOFOLLOW, nullptr);
    DbPtr db(raw);
    if (rc != SQLITE_OK) {
      return MakeError(path + ": cannot write capture: " + (raw ? sqlite3_errmsg(raw) : sqlite3_errstr(rc)),
                       kCaptureErrorExitCode);
    }
    Writer writer(db.get(), path);
    // The temporary file is discarded on any failure, so a rollback journal on
    // disk would buy nothing; keep it in memory so no second file is created.
    if (auto r = writer.Exec("PRAGMA journal_mode = MEMORY"); !r) return r;
    const std::string pragmas = "PRAGMA application_id = " + std::to_string(kCaptureApplicationId) +
                                "; PRAGMA user_version = " + std::to_string(kCaptureSchemaVersion) + ";";
    if (auto r = writer.Exec(pragmas.c_str()); !r) return r;
    if (auto r = FillCapture(writer, profile); !r) return r;
    db.reset();  // close before the rename so every page is on disk
  }
  if (auto r = file->Commit(); !r) return MakeError(r.error().message, kCaptureErrorExitCode);
  return {};
}

Result<Profile> ReadCapture(const std::string& path) {
  Reader reader(path);
  Result<void> checked = reader.Open();
  if (checked) checked = reader.CheckIdentity();
  if (checked) checked = reader.QuickCheck();
  if (checked) checked = reader.CheckTables();
  Result<Profile> profile = checked ? reader.ReadAll() : Result<Profile>(checked.error());
  if (profile) return profile;
  return MakeError(OneLine(profile.error().message), profile.error().exit_code);
}

}  // namespace arcprof
