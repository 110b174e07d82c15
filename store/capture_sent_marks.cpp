#include "store/capture_sent_marks.h"

#include <sqlite3.h>
#include <sys/stat.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <utility>

#include "store/capture_reader.h"
#include "store/capture_schema.h"
#include "store/sqlite_db.h"

namespace arcprof::store {
namespace {

uint64_t ParseU64(const unsigned char* text) {
  if (text == nullptr) return 0;
  uint64_t v = 0;
  for (const unsigned char* p = text; *p; ++p) {
    if (*p < '0' || *p > '9') return 0;
    v = v * 10 + (*p - '0');
  }
  return v;
}

}  // namespace

Result<std::unique_ptr<CaptureSentMarks>> CaptureSentMarks::Open(const std::string& path) {
  auto fail = [&](const std::string& what) { return MakeError(path + ": " + what, ErrorKind::kCapture); };
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) {
    return fail(errno == ENOENT ? "no such capture or store" : std::string("cannot open: ") + std::strerror(errno));
  }
  if (!S_ISREG(st.st_mode)) return fail("not a regular file; pass the path of a capture");
  // Validate it the way every reader does before writing anything into it.
  auto profile = ReadCapture(path);
  if (!profile) return profile.error();

  std::unique_ptr<CaptureSentMarks> self(new CaptureSentMarks(path));
  SqlDb::UntrustedOptions options;
  options.writable = true;
  options.no_follow = true;
  options.busy_timeout_ms = 5000;
  auto db = SqlDb::OpenUntrusted(path, options, path + ": cannot open for writing: ");
  if (!db) return db.error();
  self->db_ = std::make_unique<SqlDb>(std::move(*db));
  self->db_->set_context(path + ": cannot record sent windows: ");
  if (auto r = self->db_->Exec(capture_schema::kPushSentTableSql); !r) return r.error();
  self->db_->set_context(path + ": cannot count windows: ");
  auto count = self->db_->QueryInt("SELECT count(*) FROM windows");
  if (!count) return count.error();
  self->windows_ = *count;
  return self;
}

CaptureSentMarks::CaptureSentMarks(std::string path) : path_(std::move(path)) {}

CaptureSentMarks::~CaptureSentMarks() = default;

Result<std::vector<UnsentWindow>> CaptureSentMarks::Unsent(const std::string& destination) const {
  SqlDb& db = *db_;
  db.set_context(path_ + ": cannot list windows: ");
  const char* sql =
      "SELECT w.id, c.uuid, w.start_ns, w.end_ns,"
      " (SELECT value FROM meta m WHERE m.capture_id = c.id AND m.key = 'start_unix_ns'),"
      " (SELECT value FROM meta m WHERE m.capture_id = c.id AND m.key = 'start_monotonic_ns')"
      " FROM windows w JOIN captures c ON c.id = w.capture_id"
      " WHERE NOT EXISTS (SELECT 1 FROM push_sent p WHERE p.window_id = w.id AND p.destination = ?)"
      " ORDER BY w.start_ns, w.id";
  auto stmt = db.Prepare(sql);
  if (!stmt) return stmt.error();
  stmt->Bind(1, destination);
  std::vector<UnsentWindow> out;
  auto listed = db.ForEachRow(*stmt, [&](sqlite3_stmt* s) -> Result<void> {
    UnsentWindow w;
    w.number = sqlite3_column_int64(s, 0);
    w.id = SqlColumnText(s, 1) + "/" + std::to_string(w.number);
    const uint64_t start_mono = static_cast<uint64_t>(sqlite3_column_int64(s, 2));
    const uint64_t end_mono = static_cast<uint64_t>(sqlite3_column_int64(s, 3));
    const uint64_t capture_unix = ParseU64(sqlite3_column_text(s, 4));
    const uint64_t capture_mono = ParseU64(sqlite3_column_text(s, 5));
    w.start_unix_ns = capture_unix + (start_mono > capture_mono ? start_mono - capture_mono : 0);
    w.end_unix_ns = w.start_unix_ns + (end_mono > start_mono ? end_mono - start_mono : 0);
    out.push_back(std::move(w));
    return {};
  });
  if (!listed) return listed.error();
  return out;
}

Result<void> CaptureSentMarks::MarkSent(const std::string& id, const std::string& destination) {
  SqlDb& db = *db_;
  db.set_context(path_ + ": cannot mark a window sent: ");
  const int64_t now = std::chrono::duration_cast<std::chrono::nanoseconds>(
                          std::chrono::system_clock::now().time_since_epoch()).count();
  // The window named by `id` as Unsent names it; autocommit, so the mark is
  // on disk when the statement is done.
  auto stmt = db.Prepare(
      "INSERT OR REPLACE INTO push_sent (window_id, destination, sent_unix_ns)"
      " SELECT w.id, ?, ? FROM windows w JOIN captures c ON c.id = w.capture_id"
      " WHERE c.uuid || '/' || w.id = ?");
  if (!stmt) return stmt.error();
  if (auto r = db.Insert(*stmt, destination, now, id); !r) return r;
  if (sqlite3_changes(db.get()) == 0) return db.Fail("no window '" + id + "'");
  return {};
}

}  // namespace arcprof::store
