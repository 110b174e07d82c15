// The one SQLite helper: a connection (SqlDb), a prepared statement
// (SqlStatement) and a transaction (SqlTransaction), each closing what it owns,
// and one-line errors. Every file of the project that talks to SQLite (the
// capture writer and reader, the PTT tables, push's sent marks) goes through it.
//
// Errors: every failure becomes an Error of kind kCapture whose message is the
// connection's context ("<path>: cannot write capture: ") followed by SQLite's
// message on one line (control characters become spaces, long text is cut:
// SQLite can quote text from a hostile file). A reader that explains failures
// by their result code (not a database, corrupt, no permission) installs its
// own ErrorMapper.
//
// Opening: OpenForWriting is for a file we just created (read-write, never
// through a symlink). OpenUntrusted is for a file someone handed us (a capture
// is outside input): no code from its schema runs (no triggers, no views, no
// functions, defensive mode), values are bounded in size, and `immutable`
// ignores any -journal/-wal file next to it.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "common/result.h"

namespace arcprof::store {

// A blob parameter (text parameters are std::string / std::string_view).
struct SqlBlob {
  std::string_view bytes;
};

// `message` as one line of at most 300 bytes (control characters as spaces).
std::string SqlOneLine(std::string message);

// A text column's bytes as stored ("" for NULL).
std::string SqlColumnText(sqlite3_stmt* stmt, int column);
// A blob column's bytes ("" for NULL); valid until the next step.
std::string_view SqlColumnBlob(sqlite3_stmt* stmt, int column);

class SqlStatement {
 public:
  SqlStatement() = default;
  explicit SqlStatement(sqlite3_stmt* stmt) : stmt_(stmt) {}
  sqlite3_stmt* get() const { return stmt_.get(); }

  // Binds `values` to parameters 1, 2, ... (int64, text, nullptr, optional
  // int64, SqlBlob). Text and blobs are copied.
  template <typename... Values>
  void BindAll(const Values&... values) {
    int index = 0;
    (Bind(++index, values), ...);
  }
  void Bind(int index, int64_t v) { sqlite3_bind_int64(get(), index, v); }
  void Bind(int index, std::string_view v) {
    sqlite3_bind_text64(get(), index, v.data(), v.size(), SQLITE_TRANSIENT, SQLITE_UTF8);
  }
  void Bind(int index, const std::string& v) { Bind(index, std::string_view(v)); }
  void Bind(int index, const char* v) { Bind(index, std::string_view(v)); }
  void Bind(int index, std::nullptr_t) { sqlite3_bind_null(get(), index); }
  void Bind(int index, const std::optional<int64_t>& v) {
    if (v) {
      Bind(index, *v);
    } else {
      Bind(index, nullptr);
    }
  }
  void Bind(int index, SqlBlob v) { sqlite3_bind_blob64(get(), index, v.bytes.data(), v.bytes.size(), SQLITE_TRANSIENT); }
  // Resets the statement and clears its bindings, ready for the next use.
  void Reset() {
    sqlite3_reset(get());
    sqlite3_clear_bindings(get());
  }

 private:
  struct Finalizer {
    void operator()(sqlite3_stmt* stmt) const { sqlite3_finalize(stmt); }
  };
  std::unique_ptr<sqlite3_stmt, Finalizer> stmt_;
};

class SqlDb {
 public:
  // Turns a failed SQLite call (its result code and message) into an Error.
  using ErrorMapper = std::function<Error(int rc, const std::string& message)>;

  struct UntrustedOptions {
    bool writable = false;   // read-write (push marks windows sent) or read-only
    bool immutable = false;  // ignore -journal/-wal files (and never write)
    int max_value_bytes = 1 << 20;  // SQLITE_LIMIT_LENGTH: no larger value is read
    int busy_timeout_ms = 0;
    bool no_follow = false;  // refuse a symlink at `path`
  };

  SqlDb() = default;
  // An existing file we created: read-write, not through a symlink.
  static Result<SqlDb> OpenForWriting(const std::string& path, std::string context);
  // A file handed to us (see the header comment). `mapper`, when set, explains
  // failures (also of the open itself) instead of the default message.
  static Result<SqlDb> OpenUntrusted(const std::string& path, const UntrustedOptions& options,
                                     std::string context, ErrorMapper mapper = nullptr);
  // A connection owned by someone else (closed by them, not by this object).
  static SqlDb Borrow(sqlite3* db, std::string context);

  sqlite3* get() const { return db_.get(); }
  const std::string& context() const { return context_; }
  // The text every error of this connection starts with, from now on.
  void set_context(std::string context) { context_ = std::move(context); }
  void set_error_mapper(ErrorMapper mapper) { mapper_ = std::move(mapper); }

  // The Error for a failed call that returned `rc` (message from the connection).
  Error Fail(int rc) const;
  // An Error "<context><what>" (what made one line).
  Error Fail(const std::string& what) const;

  // Runs one or more statements that return no rows.
  Result<void> Exec(const char* sql);
  Result<void> Exec(const std::string& sql) { return Exec(sql.c_str()); }
  Result<SqlStatement> Prepare(const char* sql);
  Result<SqlStatement> Prepare(const std::string& sql) { return Prepare(sql.c_str()); }
  // One step: true for a row, false when done.
  Result<bool> Step(SqlStatement& stmt);

  // Binds `values` in order, steps once (a statement returning no rows) and
  // resets the statement for its next use.
  template <typename... Values>
  Result<void> Insert(SqlStatement& stmt, const Values&... values) {
    stmt.BindAll(values...);
    const int rc = sqlite3_step(stmt.get());
    stmt.Reset();
    if (rc != SQLITE_DONE) return Fail(rc);
    return {};
  }

  // Calls `row(sqlite3_stmt*)` (returning Result<void>) for each row of `sql`;
  // stops at the first error.
  template <typename RowFn>
  Result<void> ForEachRow(const char* sql, RowFn&& row) {
    auto stmt = Prepare(sql);
    if (!stmt) return stmt.error();
    return ForEachRow(*stmt, std::forward<RowFn>(row));
  }
  template <typename RowFn>
  Result<void> ForEachRow(SqlStatement& stmt, RowFn&& row) {
    for (;;) {
      auto more = Step(stmt);
      if (!more) return more.error();
      if (!*more) return {};
      if (auto r = row(stmt.get()); !r) return r;
    }
  }

  // The first column of the first row of `sql` as an integer (PRAGMA x,
  // SELECT count(*)); an error when there is no row.
  Result<int64_t> QueryInt(const char* sql);

 private:
  struct Closer {
    void operator()(sqlite3* db) const { sqlite3_close_v2(db); }
  };
  struct Handle {
    std::unique_ptr<sqlite3, Closer> owned;
    sqlite3* borrowed = nullptr;
    sqlite3* get() const { return owned ? owned.get() : borrowed; }
  };
  Handle db_;
  std::string context_;
  ErrorMapper mapper_;
};

// BEGIN on construction; ROLLBACK on destruction unless committed.
class SqlTransaction {
 public:
  static Result<SqlTransaction> Begin(SqlDb& db);
  SqlTransaction(SqlTransaction&& other) noexcept : db_(std::exchange(other.db_, nullptr)) {}
  SqlTransaction& operator=(SqlTransaction&&) = delete;
  ~SqlTransaction();
  Result<void> Commit();

 private:
  explicit SqlTransaction(SqlDb* db) : db_(db) {}
  SqlDb* db_;
};

}  // namespace arcprof::store
