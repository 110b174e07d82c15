#include "store/window_store.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <map>
#include <random>
#include <tuple>

#include "store/atomic_file.h"
#include "store/capture_store.h"
#include "model/profile_merge.h"

namespace arcprof::store {
using namespace arcprof::model;
namespace {

constexpr const char* kConfigName = "store.conf";
constexpr const char* kLockName = ".lock";
constexpr uint64_t kMaxConfigBytes = 4096;

std::string Errno() { return std::strerror(errno); }

bool ParseU64(std::string_view text, uint64_t& out) {
  if (text.empty()) return false;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return ec == std::errc() && ptr == text.data() + text.size();
}

bool EndsWith(const std::string& s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::string SessionTag() {
  std::random_device random;
  char out[9];
  snprintf(out, sizeof(out), "%08x", static_cast<unsigned>(random()));
  return out;
}

uint64_t Ns(const timespec& t) { return static_cast<uint64_t>(t.tv_sec) * 1000000000ull + static_cast<uint64_t>(t.tv_nsec); }

// Why the window named `w` is not the window its content is ("" when it is).
std::string NameContradicts(const StoredWindow& w, uint64_t start_unix_ns, uint64_t end_unix_ns) {
  const auto [start_ms, end_ms] = WindowNameMs(start_unix_ns, end_unix_ns);
  if (start_ms * 1000000ull == w.start_unix_ns && end_ms * 1000000ull == w.end_unix_ns) return "";
  return "holds the window " + UtcTime(start_unix_ns) + " to " + UtcTime(end_unix_ns) +
         ", not the one its name says (a copied or renamed file)";
}

// The destinations in a sent marker; bounded, a symlink is not followed.
// Markers are replaced whole (MarkSent), but one written by an older arcprof
// by appending, or torn by a crash (blocks allocated, never written: NUL
// bytes), may hold a partial line: only whole lines without NUL bytes are
// deliveries. `clean` says whether the file is exactly those lines.
struct SentMarker {
  std::vector<std::string> destinations;
  bool clean = true;
};

SentMarker ReadSentMarker(const std::string& path) {
  SentMarker out;
  ScopedFd fd(open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
  if (!fd.valid()) return out;
  struct stat st {};
  if (fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) {
    out.clean = false;
    return out;
  }
  std::string text(64 * 1024, '\0');
  const ssize_t n = read(fd.get(), text.data(), text.size());
  if (n <= 0) return out;
  text.resize(static_cast<size_t>(n));
  size_t pos = 0;
  while (pos < text.size()) {
    size_t eol = text.find('\n', pos);
    if (eol == std::string::npos) {  // a line cut by a crash is not a delivery
      out.clean = false;
      break;
    }
    std::string line = text.substr(pos, eol - pos);
    pos = eol + 1;
    if (line.empty() || line.find('\0') != std::string::npos ||
        std::find(out.destinations.begin(), out.destinations.end(), line) != out.destinations.end()) {
      out.clean = false;
      continue;
    }
    out.destinations.push_back(std::move(line));
  }
  return out;
}

}  // namespace

std::string UtcTime(uint64_t unix_ns) {
  const time_t secs = static_cast<time_t>(unix_ns / 1000000000ull);
  tm t{};
  gmtime_r(&secs, &t);
  char buf[32];
  strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &t);
  return buf;
}

std::optional<StoredWindow> ParseWindowId(const std::string& id) {
  // <13 digits>-<13 digits>-<8 hex>
  if (id.size() != 13 + 1 + 13 + 1 + 8 || id[13] != '-' || id[27] != '-') return std::nullopt;
  uint64_t start_ms = 0, end_ms = 0;
  if (!ParseU64(std::string_view(id).substr(0, 13), start_ms) ||
      !ParseU64(std::string_view(id).substr(14, 13), end_ms) || end_ms < start_ms) {
    return std::nullopt;
  }
  for (size_t i = 28; i < id.size(); ++i) {
    if (!std::isxdigit(static_cast<unsigned char>(id[i]))) return std::nullopt;
  }
  StoredWindow w;
  w.id = id;
  w.start_unix_ns = start_ms * 1000000ull;
  w.end_unix_ns = end_ms * 1000000ull;
  return w;
}

Result<WindowStore> WindowStore::OpenForWriting(const std::string& dir_arg) {
  std::string dir = dir_arg;
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  if (dir.empty()) return MakeError("--store needs a directory");
  if (mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
    return MakeError(dir + ": cannot create the store directory: " + Errno());
  }
  struct stat st {};
  if (lstat(dir.c_str(), &st) != 0) return MakeError(dir + ": " + Errno());
  if (S_ISLNK(st.st_mode)) return MakeError(dir + ": is a symbolic link; give the store's real path");
  if (!S_ISDIR(st.st_mode)) return MakeError(dir + ": not a directory; --store needs a directory");
  if (st.st_uid != geteuid()) {
    return MakeError(dir + ": owned by uid " + std::to_string(st.st_uid) + ", not by this user (uid " +
                     std::to_string(geteuid()) + "); use a store directory of your own");
  }
  if (st.st_mode & (S_IWGRP | S_IWOTH)) {
    return MakeError(dir + ": writable by other users; chmod go-w it or use another directory");
  }
  if (access(dir.c_str(), W_OK | X_OK) != 0) {
    return MakeError(dir + ": cannot write to the store directory: " + Errno());
  }
  WindowStore store(dir);
  const std::string lock_path = dir + "/" + kLockName;
  store.lock_.reset(open(lock_path.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (!store.lock_.valid()) return MakeError(lock_path + ": cannot open the store lock: " + Errno());
  if (flock(store.lock_.get(), LOCK_EX | LOCK_NB) != 0) {
    if (errno == EWOULDBLOCK) {
      return MakeError(dir + ": another arcprof is writing this store; stop it or use another --store");
    }
    return MakeError(lock_path + ": cannot lock the store: " + Errno());
  }
  // A writer killed mid-window leaves its temporary file; nothing reads it.
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* e = readdir(d)) {
      const std::string name = e->d_name;
      if (name.size() > 1 && name[0] == '.' && name.find(".db.tmp.") != std::string::npos) {
        unlinkat(dirfd(d), name.c_str(), 0);
      }
    }
    closedir(d);
  }
  store.session_ = SessionTag();
  return store;
}

Result<WindowStore> WindowStore::OpenForReading(const std::string& dir_arg) {
  std::string dir = dir_arg;
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  struct stat st {};
  if (stat(dir.c_str(), &st) != 0) {
    if (errno == ENOENT) return MakeError(dir + ": no such store; run `arcprof continuous --store " + dir + "` first", ErrorKind::kCapture);
    return MakeError(dir + ": cannot open the store: " + Errno(), ErrorKind::kCapture);
  }
  if (!S_ISDIR(st.st_mode)) {
    return MakeError(dir + ": not a store directory (for a capture file use -i)", ErrorKind::kCapture);
  }
  if (access(dir.c_str(), R_OK | X_OK) != 0) {
    return MakeError(dir + ": cannot read the store: " + Errno(), ErrorKind::kCapture);
  }
  return WindowStore(dir);
}

std::pair<uint64_t, uint64_t> WindowNameMs(uint64_t start_unix_ns, uint64_t end_unix_ns) {
  // Rounded to the nearest millisecond: a window closed on a boundary is named by it.
  const uint64_t start_ms = (start_unix_ns + 500000ull) / 1000000ull;
  return {start_ms, std::max<uint64_t>(start_ms, (end_unix_ns + 500000ull) / 1000000ull)};
}

Result<std::string> WindowStore::Append(const Profile& window) {
  const auto [start_ms, end_ms] = WindowNameMs(window.meta.start_unix_ns, EndUnixNs(window.meta));
  char id[64];
  snprintf(id, sizeof(id), "%013llu-%013llu-%s", static_cast<unsigned long long>(start_ms),
           static_cast<unsigned long long>(end_ms), session_.empty() ? "00000000" : session_.c_str());
  const std::string path = dir_ + "/" + id + ".db";
  if (auto ok = WriteCapture(path, window); !ok) return ok.error();
  return std::string(id);
}

std::vector<StoredWindow> WindowStore::List() const {
  std::vector<StoredWindow> out;
  std::vector<std::string> sent;  // ids with a marker
  std::map<std::string, Identity> identities;  // of the files present now
  std::map<std::string, uint64_t> changed;     // id -> ctime, to tell an original from its copy
  DIR* d = opendir(dir_.c_str());
  if (!d) return out;
  while (dirent* e = readdir(d)) {
    const std::string name = e->d_name;
    if (name.empty() || name[0] == '.') continue;
    if (EndsWith(name, ".sent")) {
      sent.push_back(name.substr(0, name.size() - 5));
      continue;
    }
    if (!EndsWith(name, ".db")) continue;
    auto w = ParseWindowId(name.substr(0, name.size() - 3));
    if (!w) continue;
    w->path = dir_ + "/" + name;
    struct stat st {};
    if (fstatat(dirfd(d), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) continue;  // removed meanwhile
    if (!S_ISREG(st.st_mode)) {
      w->unreadable = std::string("not a window file: ") + FileKind(st.st_mode);
      out.push_back(std::move(*w));
      continue;
    }
    w->bytes = static_cast<uint64_t>(st.st_size);
    Identity id;
    auto known = identities_.find(name);
    if (known != identities_.end() && known->second.inode == st.st_ino &&
        known->second.size == static_cast<uint64_t>(st.st_size) && known->second.mtime_ns == Ns(st.st_mtim) &&
        known->second.ctime_ns == Ns(st.st_ctim)) {
      id = known->second;
    } else {
      id.inode = st.st_ino;
      id.size = static_cast<uint64_t>(st.st_size);
      id.mtime_ns = Ns(st.st_mtim);
      id.ctime_ns = Ns(st.st_ctim);
      if (auto read = ReadCaptureIdentity(w->path)) {
        id.read = true;
        id.uuid = read->uuid;
        id.start_unix_ns = read->start_unix_ns;
        id.end_unix_ns = read->end_unix_ns;
      }
    }
    // A window whose identity cannot be read stays listed by its name: reading
    // it says what is wrong with it.
    if (id.read) {
      w->capture_uuid = id.uuid;
      w->unreadable = NameContradicts(*w, id.start_unix_ns, id.end_unix_ns);
    }
    changed[w->id] = id.ctime_ns;
    identities.emplace(name, std::move(id));
    out.push_back(std::move(*w));
  }
  closedir(d);
  identities_ = std::move(identities);
  std::sort(sent.begin(), sent.end());
  std::sort(out.begin(), out.end(), [](const StoredWindow& a, const StoredWindow& b) {
    return std::tie(a.start_unix_ns, a.id) < std::tie(b.start_unix_ns, b.id);
  });
  for (StoredWindow& w : out) {
    if (!w.unreadable.empty() && w.capture_uuid.empty()) continue;
    if (!std::binary_search(sent.begin(), sent.end(), w.id)) continue;
    w.sent_to = ReadSentMarker(dir_ + "/" + w.id + ".sent").destinations;
    w.sent = !w.sent_to.empty();
  }
  // One capture under several names is one window: the one sent, else the
  // oldest file (a copy is newer), else the first by name.
  std::map<std::string, StoredWindow*> original;
  for (StoredWindow& w : out) {
    if (!w.unreadable.empty() || w.capture_uuid.empty()) continue;
    auto [it, added] = original.try_emplace(w.capture_uuid, &w);
    if (added) continue;
    const auto rank = [&](const StoredWindow* x) { return std::tuple(!x->sent, changed[x->id], x->id); };
    StoredWindow* copy = &w;
    if (rank(&w) < rank(it->second)) {
      copy = it->second;
      it->second = &w;
    }
    copy->unreadable = "a copy of window " + it->second->id + " (the same capture inside)";
  }
  return out;
}

std::vector<StoredWindow> WindowStore::ListRange(uint64_t since, uint64_t until) const {
  std::vector<StoredWindow> out;
  for (StoredWindow& w : List()) {
    // Overlap of [start, end] with [since, until); a window of zero length at since counts.
    if (w.end_unix_ns < since || w.start_unix_ns >= until) continue;
    out.push_back(std::move(w));
  }
  return out;
}

Result<Profile> WindowStore::Read(const std::string& id) const {
  auto w = ParseWindowId(id);
  if (!w) return MakeError(dir_ + ": no window '" + id + "'", ErrorKind::kCapture);
  const std::string path = dir_ + "/" + id + ".db";
  struct stat st {};
  if (lstat(path.c_str(), &st) != 0) return MakeError(path + ": no such window", ErrorKind::kCapture);
  if (!S_ISREG(st.st_mode)) {
    return MakeError(path + ": not a window file: " + FileKind(st.st_mode), ErrorKind::kCapture);
  }
  auto profile = ReadCapture(path);
  if (!profile) return profile;
  if (const std::string why = NameContradicts(*w, profile->meta.start_unix_ns, EndUnixNs(profile->meta));
      !why.empty()) {
    return MakeError(path + ": " + why, ErrorKind::kCapture);
  }
  return profile;
}

Result<void> WindowStore::MarkSent(const std::string& id, const std::string& destination) {
  if (!ParseWindowId(id)) return MakeError(dir_ + ": no window '" + id + "'");
  if (destination.empty() || destination.find('\n') != std::string::npos) {
    return MakeError("a destination must be one non-empty line");
  }
  const std::string marker = dir_ + "/" + id + ".sent";
  SentMarker sent = ReadSentMarker(marker);
  const bool known = std::find(sent.destinations.begin(), sent.destinations.end(), destination) !=
                     sent.destinations.end();
  if (known && sent.clean) return {};
  // The whole marker is replaced (temporary file, fsync, rename, fsync of the
  // directory): a crash leaves the old marker or the new one, never a torn
  // one, and a torn one left by an older writer is repaired here, once.
  if (!known) sent.destinations.push_back(destination);
  std::string text;
  for (const std::string& d : sent.destinations) text += d + "\n";
  if (auto ok = AtomicFile::WriteWhole(marker, text); !ok) {
    return MakeError("cannot mark the window sent: " + ok.error().message);
  }
  return {};
}

Result<std::vector<UnsentWindow>> WindowStore::Unsent(const std::string& destination) const {
  std::vector<UnsentWindow> out;
  for (StoredWindow& w : List()) {
    if (!w.unreadable.empty()) continue;  // not a window: nothing to send
    if (std::find(w.sent_to.begin(), w.sent_to.end(), destination) == w.sent_to.end()) {
      UnsentWindow unsent;
      unsent.number = static_cast<int64_t>(w.start_unix_ns / 1000000ull);
      unsent.id = std::move(w.id);
      unsent.start_unix_ns = w.start_unix_ns;
      unsent.end_unix_ns = w.end_unix_ns;
      out.push_back(std::move(unsent));
    }
  }
  return out;
}

Result<Profile> WindowStore::ReadRange(uint64_t since, uint64_t until,
                                       std::vector<std::string>* warnings) const {
  Profile merged;
  size_t read = 0;
  const std::vector<StoredWindow> windows = ListRange(since, until);
  for (const StoredWindow& w : windows) {
    if (!w.unreadable.empty()) {
      if (warnings) warnings->push_back("skipped window " + w.id + ": " + w.unreadable);
      continue;
    }
    auto profile = ReadCapture(w.path);
    if (!profile) {
      if (warnings) warnings->push_back("skipped window " + w.id + ": " + profile.error().message);
      continue;
    }
    MergeProfile(merged, *profile);
    ++read;
  }
  if (read == 0) {
    std::string why = windows.empty() ? "no window in the time range" : "no readable window in the time range";
    return MakeError(dir_ + ": " + why + " (arcprof store info --store " + dir_ + " lists them)",
                     ErrorKind::kCapture);
  }
  return merged;
}

RetentionResult WindowStore::ApplyRetention(uint64_t retain_s, uint64_t max_bytes, uint64_t now) {
  RetentionResult result;
  std::vector<StoredWindow> windows;
  for (StoredWindow& w : List()) {
    if (w.unreadable.empty()) windows.push_back(std::move(w));  // only windows age out
  }
  uint64_t total = 0;
  for (const StoredWindow& w : windows) total += w.bytes;
  const uint64_t oldest_kept = retain_s > 0 && now > retain_s * 1000000000ull ? now - retain_s * 1000000000ull : 0;
  for (size_t i = 0; i + 1 < windows.size(); ++i) {
    const StoredWindow& w = windows[i];
    const bool too_old = retain_s > 0 && w.end_unix_ns < oldest_kept;
    const bool too_big = max_bytes > 0 && total > max_bytes;
    if (!too_old && !too_big) break;
    if (unlink(w.path.c_str()) != 0) continue;
    unlink((dir_ + "/" + w.id + ".sent").c_str());
    total -= w.bytes;
    ++result.removed;
    result.freed_bytes += w.bytes;
    if (!w.sent) ++result.removed_unsent;
  }
  return result;
}

uint64_t WindowStore::SizeOnDisk() const {
  uint64_t total = 0;
  DIR* d = opendir(dir_.c_str());
  if (!d) return 0;
  while (dirent* e = readdir(d)) {
    struct stat st {};
    if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode)) {
      total += static_cast<uint64_t>(st.st_blocks) * 512;
    }
  }
  closedir(d);
  return total;
}

Result<void> WindowStore::WriteConfig(const StoreConfig& c) {
  auto file = AtomicFile::Create(dir_ + "/" + kConfigName);
  if (!file) return file.error();
  std::string text = "format=arcprof continuous store 1\nhost=" + c.host +
                     "\nwindow_s=" + std::to_string(c.window_s) + "\nretain_s=" + std::to_string(c.retain_s) +
                     "\nmax_bytes=" + std::to_string(c.max_bytes) + "\n";
  if (auto ok = file->Write(text); !ok) return ok;
  return file->Commit();
}

StoreConfig WindowStore::ReadConfig() const {
  StoreConfig c;
  const std::string path = dir_ + "/" + kConfigName;
  ScopedFd fd(open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
  if (!fd.valid()) return c;
  char buf[kMaxConfigBytes];
  const ssize_t n = read(fd.get(), buf, sizeof(buf));
  if (n <= 0) return c;
  std::string_view text(buf, static_cast<size_t>(n));
  while (!text.empty()) {
    const size_t eol = text.find('\n');
    std::string_view line = text.substr(0, eol);
    text = eol == std::string_view::npos ? std::string_view() : text.substr(eol + 1);
    const size_t eq = line.find('=');
    if (eq == std::string_view::npos) continue;
    const std::string_view key = line.substr(0, eq), value = line.substr(eq + 1);
    if (key == "host") {
      c.host.assign(value);
    } else if (key == "window_s") {
      ParseU64(value, c.window_s);
    } else if (key == "retain_s") {
      ParseU64(value, c.retain_s);
    } else if (key == "max_bytes") {
      ParseU64(value, c.max_bytes);
    }
  }
  return c;
}

std::optional<uint64_t> ParseDurationNs(const std::string& text) {
  size_t digits = 0;
  while (digits < text.size() && std::isdigit(static_cast<unsigned char>(text[digits]))) ++digits;
  uint64_t value = 0;
  if (digits == 0 || !ParseU64(std::string_view(text).substr(0, digits), value)) return std::nullopt;
  const std::string unit = text.substr(digits);
  uint64_t scale;
  if (unit == "ms") scale = 1000000ull;
  else if (unit == "s" || unit.empty()) scale = 1000000000ull;
  else if (unit == "m" || unit == "min") scale = 60ull * 1000000000ull;
  else if (unit == "h") scale = 3600ull * 1000000000ull;
  else if (unit == "d") scale = 86400ull * 1000000000ull;
  else if (unit == "w") scale = 7ull * 86400ull * 1000000000ull;
  else return std::nullopt;
  if (value > UINT64_MAX / scale) return std::nullopt;
  return value * scale;
}

std::optional<uint64_t> ParseSize(const std::string& text) {
  size_t digits = 0;
  while (digits < text.size() && std::isdigit(static_cast<unsigned char>(text[digits]))) ++digits;
  uint64_t value = 0;
  if (digits == 0 || !ParseU64(std::string_view(text).substr(0, digits), value)) return std::nullopt;
  std::string unit = text.substr(digits);
  for (char& c : unit) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  if (!unit.empty() && unit.back() == 'B') unit.pop_back();
  if (unit.size() == 2 && unit[1] == 'I') unit.pop_back();  // KiB, MiB, GiB
  uint64_t scale;
  if (unit.empty()) scale = 1;
  else if (unit == "K") scale = 1ull << 10;
  else if (unit == "M") scale = 1ull << 20;
  else if (unit == "G") scale = 1ull << 30;
  else if (unit == "T") scale = 1ull << 40;
  else return std::nullopt;
  if (value > UINT64_MAX / scale) return std::nullopt;
  return value * scale;
}

Result<uint64_t> ParseTimePoint(const std::string& text, uint64_t now) {
  auto bad = [&] {
    return MakeError("'" + text +
                     "' is not a time: use a duration ago (30m, 2h, 7d), @UNIX_SECONDS or "
                     "[YYYY-MM-DDT]HH:MM[:SS][Z|+HH:MM]");
  };
  if (text == "now") return now;
  if (auto ago = ParseDurationNs(text)) return *ago > now ? 0 : now - *ago;
  if (!text.empty() && text[0] == '@') {
    uint64_t secs = 0;
    if (!ParseU64(std::string_view(text).substr(1), secs) || secs > UINT64_MAX / 1000000000ull) return bad();
    return secs * 1000000000ull;
  }
  tm t{};
  // HH:MM[:SS]: today, local time.
  if (text.size() >= 5 && text[2] == ':' && text.find('-') == std::string::npos) {
    const time_t now_s = static_cast<time_t>(now / 1000000000ull);
    localtime_r(&now_s, &t);
    const char* end = strptime(text.c_str(), "%H:%M", &t);
    if (end && *end == ':') end = strptime(end, ":%S", &t);
    else t.tm_sec = 0;
    if (!end || *end != '\0') return bad();
    t.tm_isdst = -1;
    const time_t secs = mktime(&t);
    if (secs < 0) return bad();
    return static_cast<uint64_t>(secs) * 1000000000ull;
  }
  const char* rest = strptime(text.c_str(), "%Y-%m-%dT%H:%M", &t);
  if (!rest) rest = strptime(text.c_str(), "%Y-%m-%d %H:%M", &t);
  if (!rest) {
    rest = strptime(text.c_str(), "%Y-%m-%d", &t);
    if (!rest) return bad();
  }
  if (*rest == ':') {
    rest = strptime(rest, ":%S", &t);
    if (!rest) return bad();
  }
  int64_t secs;
  if (*rest == 'Z' && rest[1] == '\0') {
    secs = timegm(&t);
  } else if ((*rest == '+' || *rest == '-') && strlen(rest) == 6 && rest[3] == ':') {
    const int sign = *rest == '+' ? 1 : -1;
    int hh = 0, mm = 0;
    if (sscanf(rest + 1, "%2d:%2d", &hh, &mm) != 2) return bad();
    secs = timegm(&t) - sign * (hh * 3600 + mm * 60);
  } else if (*rest == '\0') {
    t.tm_isdst = -1;
    secs = mktime(&t);
  } else {
    return bad();
  }
  if (secs < 0) return bad();
  return static_cast<uint64_t>(secs) * 1000000000ull;
}

}  // namespace arcprof::store
