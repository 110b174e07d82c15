#include "push/capture_windows.h"

#include <sqlite3.h>
#include <sys/stat.h>

#include <cerrno>
#include <chrono>
#include <cstring>

#include "store/capture_store.h"

namespace arcprof::push {
using namespace arcprof::model;
using namespace arcprof::store;
namespace {

sqlite3* Db(void* p) { return static_cast<sqlite3*>(p); }

struct Stmt {
  sqlite3_stmt* stmt = nullptr;
  ~Stmt() { sqlite3_finalize(stmt); }
};

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

std::string Destination(const std::string& url) {
  const size_t scheme = url.find("://");
  const size_t start = scheme == std::string::npos ? 0 : scheme + 3;
  const size_t slash = url.find('/', start);
  const size_t at = url.rfind('@', slash == std::string::npos ? url.size() : slash);
  std::string out = url;
  if (at != std::string::npos && at >= start) out = url.substr(0, start) + url.substr(at + 1);
  while (!out.empty() && out.back() == '/') out.pop_back();
  return out;
}

Result<std::unique_ptr<CaptureWindows>> CaptureWindows::Open(const std::string& path) {
  auto fail = [&](const std::string& what) { return MakeError(path + ": " + what, ErrorKind::kCapture); };
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) {
    return fail(errno == ENOENT ? "no such capture or store" : std::string("cannot open: ") + std::strerror(errno));
  }
  if (!S_ISREG(st.st_mode)) return fail("not a regular file; pass the path of a capture");
  // Validate it the way every reader does before writing anything into it.
  auto profile = ReadCapture(path);
  if (!profile) return profile.error();

  std::unique_ptr<CaptureWindows> self(new CaptureWindows(path));
  sqlite3* db = nullptr;
  int rc = sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOFOLLOW, nullptr);
  self->db_ = db;
  if (rc != SQLITE_OK) return fail(std::string("cannot open for writing: ") + (db ? sqlite3_errmsg(db) : sqlite3_errstr(rc)));
  sqlite3_db_config(db, SQLITE_DBCONFIG_DEFENSIVE, 1, nullptr);
  sqlite3_db_config(db, SQLITE_DBCONFIG_TRUSTED_SCHEMA, 0, nullptr);
  sqlite3_db_config(db, SQLITE_DBCONFIG_ENABLE_TRIGGER, 0, nullptr);
  sqlite3_db_config(db, SQLITE_DBCONFIG_ENABLE_VIEW, 0, nullptr);
  sqlite3_busy_timeout(db, 5000);
  char* message = nullptr;
  rc = sqlite3_exec(db, kPushSentTableSql, nullptr, nullptr, &message);
  if (rc != SQLITE_OK) {
    std::string text = message ? message : sqlite3_errmsg(db);
    sqlite3_free(message);
    return fail("cannot record sent windows: " + text);
  }
  Stmt count;
  sqlite3_prepare_v2(db, "SELECT count(*) FROM windows", -1, &count.stmt, nullptr);
  if (count.stmt && sqlite3_step(count.stmt) == SQLITE_ROW) self->windows_ = sqlite3_column_int64(count.stmt, 0);
  return self;
}

CaptureWindows::~CaptureWindows() { sqlite3_close_v2(Db(db_)); }

Result<std::vector<WindowInfo>> CaptureWindows::Unsent(const std::string& destination) {
  Stmt s;
  const char* sql =
      "SELECT w.id, c.uuid, w.start_ns, w.end_ns,"
      " (SELECT value FROM meta m WHERE m.capture_id = c.id AND m.key = 'start_unix_ns'),"
      " (SELECT value FROM meta m WHERE m.capture_id = c.id AND m.key = 'start_monotonic_ns')"
      " FROM windows w JOIN captures c ON c.id = w.capture_id"
      " WHERE NOT EXISTS (SELECT 1 FROM push_sent p WHERE p.window_id = w.id AND p.destination = ?)"
      " ORDER BY w.start_ns, w.id";
  if (sqlite3_prepare_v2(Db(db_), sql, -1, &s.stmt, nullptr) != SQLITE_OK) {
    return MakeError(path_ + ": cannot list windows: " + sqlite3_errmsg(Db(db_)), ErrorKind::kCapture);
  }
  sqlite3_bind_text(s.stmt, 1, destination.data(), static_cast<int>(destination.size()), SQLITE_TRANSIENT);
  std::vector<WindowInfo> out;
  int rc;
  while ((rc = sqlite3_step(s.stmt)) == SQLITE_ROW) {
    WindowInfo w;
    w.id = sqlite3_column_int64(s.stmt, 0);
    const auto* uuid = sqlite3_column_text(s.stmt, 1);
    w.stable_id = std::string(uuid ? reinterpret_cast<const char*>(uuid) : "") + "/" + std::to_string(w.id);
    const uint64_t start_mono = static_cast<uint64_t>(sqlite3_column_int64(s.stmt, 2));
    const uint64_t end_mono = static_cast<uint64_t>(sqlite3_column_int64(s.stmt, 3));
    const uint64_t capture_unix = ParseU64(sqlite3_column_text(s.stmt, 4));
    const uint64_t capture_mono = ParseU64(sqlite3_column_text(s.stmt, 5));
    w.start_unix_ns = capture_unix + (start_mono > capture_mono ? start_mono - capture_mono : 0);
    w.end_unix_ns = w.start_unix_ns + (end_mono > start_mono ? end_mono - start_mono : 0);
    out.push_back(std::move(w));
  }
  if (rc != SQLITE_DONE) {
    return MakeError(path_ + ": cannot list windows: " + sqlite3_errmsg(Db(db_)), ErrorKind::kCapture);
  }
  return out;
}

Result<Profile> CaptureWindows::Read(const WindowInfo& window) {
  if (windows_ != 1) {
    return MakeError(path_ + ": holds " + std::to_string(windows_) +
                         " windows; push reads one window at a time only from a store or a one-window capture",
                     ErrorKind::kCapture);
  }
  return ReadCapture(path_);
}

Result<void> CaptureWindows::MarkSent(const WindowInfo& window, const std::string& destination) {
  Stmt s;
  if (sqlite3_prepare_v2(Db(db_),
                         "INSERT OR REPLACE INTO push_sent (window_id, destination, sent_unix_ns) VALUES (?, ?, ?)",
                         -1, &s.stmt, nullptr) != SQLITE_OK) {
    return MakeError(path_ + ": cannot mark a window sent: " + sqlite3_errmsg(Db(db_)), ErrorKind::kCapture);
  }
  const int64_t now = std::chrono::duration_cast<std::chrono::nanoseconds>(
                          std::chrono::system_clock::now().time_since_epoch()).count();
  sqlite3_bind_int64(s.stmt, 1, window.id);
  sqlite3_bind_text(s.stmt, 2, destination.data(), static_cast<int>(destination.size()), SQLITE_TRANSIENT);
  sqlite3_bind_int64(s.stmt, 3, now);
  if (sqlite3_step(s.stmt) != SQLITE_DONE) {
    return MakeError(path_ + ": cannot mark a window sent: " + sqlite3_errmsg(Db(db_)), ErrorKind::kCapture);
  }
  return {};
}

}  // namespace arcprof::push
