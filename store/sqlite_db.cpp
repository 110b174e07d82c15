#include "store/sqlite_db.h"

namespace arcprof::store {
namespace {

// "file:" URI of a path, so that URI parameters can follow.
std::string FileUri(const std::string& path) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out = "file:";
  for (unsigned char c : path) {
    if (c == '%' || c == '?' || c == '#' || c < 0x21 || c >= 0x7f) {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 0xf];
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

}  // namespace

std::string SqlOneLine(std::string message) {
  constexpr size_t kMaxLength = 300;
  for (char& c : message) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = ' ';
  }
  if (message.size() > kMaxLength) message = message.substr(0, kMaxLength - 3) + "...";
  return message;
}

std::string SqlColumnText(sqlite3_stmt* stmt, int column) {
  const auto* text = reinterpret_cast<const char*>(sqlite3_column_text(stmt, column));
  return text ? std::string(text, static_cast<size_t>(sqlite3_column_bytes(stmt, column))) : "";
}

std::string_view SqlColumnBlob(sqlite3_stmt* stmt, int column) {
  const void* data = sqlite3_column_blob(stmt, column);
  if (data == nullptr) return {};
  return {static_cast<const char*>(data), static_cast<size_t>(sqlite3_column_bytes(stmt, column))};
}

Result<SqlDb> SqlDb::OpenForWriting(const std::string& path, std::string context) {
  SqlDb out;
  out.context_ = std::move(context);
  sqlite3* raw = nullptr;
  const int rc = sqlite3_open_v2(path.c_str(), &raw, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOFOLLOW, nullptr);
  out.db_.owned.reset(raw);
  if (rc != SQLITE_OK) return out.Fail(rc);
  return out;
}

Result<SqlDb> SqlDb::OpenUntrusted(const std::string& path, const UntrustedOptions& options,
                                   std::string context, ErrorMapper mapper) {
  SqlDb out;
  out.context_ = std::move(context);
  out.mapper_ = std::move(mapper);
  sqlite3* raw = nullptr;
  const std::string uri = FileUri(path) + (options.immutable ? "?immutable=1" : "");
  const int flags = (options.writable && !options.immutable ? SQLITE_OPEN_READWRITE : SQLITE_OPEN_READONLY) |
                    SQLITE_OPEN_URI | (options.no_follow ? SQLITE_OPEN_NOFOLLOW : 0);
  const int rc = sqlite3_open_v2(uri.c_str(), &raw, flags, nullptr);
  out.db_.owned.reset(raw);
  if (rc != SQLITE_OK) return out.Fail(rc);
  sqlite3_limit(raw, SQLITE_LIMIT_LENGTH, options.max_value_bytes);
  // Never run code the file carries (views, triggers, functions in its
  // schema) and refuse writes to the schema itself.
  sqlite3_db_config(raw, SQLITE_DBCONFIG_DEFENSIVE, 1, nullptr);
  sqlite3_db_config(raw, SQLITE_DBCONFIG_TRUSTED_SCHEMA, 0, nullptr);
  sqlite3_db_config(raw, SQLITE_DBCONFIG_ENABLE_TRIGGER, 0, nullptr);
  sqlite3_db_config(raw, SQLITE_DBCONFIG_ENABLE_VIEW, 0, nullptr);
  if (options.busy_timeout_ms > 0) sqlite3_busy_timeout(raw, options.busy_timeout_ms);
  return out;
}

SqlDb SqlDb::Borrow(sqlite3* db, std::string context) {
  SqlDb out;
  out.db_.borrowed = db;
  out.context_ = std::move(context);
  return out;
}

Error SqlDb::Fail(int rc) const {
  sqlite3* db = get();
  const std::string message = db != nullptr ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
  if (mapper_) return mapper_(rc, message);
  return Fail(message);
}

Error SqlDb::Fail(const std::string& what) const {
  return MakeError(SqlOneLine(context_ + what), ErrorKind::kCapture);
}

Result<void> SqlDb::Exec(const char* sql) {
  char* message = nullptr;
  const int rc = sqlite3_exec(get(), sql, nullptr, nullptr, &message);
  if (rc == SQLITE_OK) return {};
  std::string text = message ? message : sqlite3_errmsg(get());
  sqlite3_free(message);
  if (mapper_) return mapper_(rc, text);
  return Fail(text);
}

Result<SqlStatement> SqlDb::Prepare(const char* sql) {
  sqlite3_stmt* stmt = nullptr;
  const int rc = sqlite3_prepare_v2(get(), sql, -1, &stmt, nullptr);
  if (rc != SQLITE_OK) {
    sqlite3_finalize(stmt);
    return Fail(rc);
  }
  return SqlStatement(stmt);
}

Result<bool> SqlDb::Step(SqlStatement& stmt) {
  const int rc = sqlite3_step(stmt.get());
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  return Fail(rc);
}

Result<int64_t> SqlDb::QueryInt(const char* sql) {
  auto stmt = Prepare(sql);
  if (!stmt) return stmt.error();
  auto row = Step(*stmt);
  if (!row) return row.error();
  if (!*row) return Fail(std::string("no result from ") + sql);
  return sqlite3_column_int64(stmt->get(), 0);
}

Result<SqlTransaction> SqlTransaction::Begin(SqlDb& db) {
  if (auto r = db.Exec("BEGIN"); !r) return r.error();
  return SqlTransaction(&db);
}

SqlTransaction::~SqlTransaction() {
  if (db_ != nullptr) sqlite3_exec(db_->get(), "ROLLBACK", nullptr, nullptr, nullptr);
}

Result<void> SqlTransaction::Commit() {
  SqlDb* db = std::exchange(db_, nullptr);
  if (db == nullptr) return {};
  if (auto r = db->Exec("COMMIT"); !r) {
    sqlite3_exec(db->get(), "ROLLBACK", nullptr, nullptr, nullptr);
    return r;
  }
  return {};
}

}  // namespace arcprof::store
