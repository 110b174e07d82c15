#include "spaces/proc_parse.h"

#include <charconv>

namespace arcprof::procfs {
namespace {

// Parses an unsigned number in `base` at the front of *s and consumes it.
template <typename T>
bool TakeNumber(std::string_view* s, int base, T* out) {
  if (s->empty()) return false;
  auto [ptr, ec] = std::from_chars(s->data(), s->data() + s->size(), *out, base);
  if (ec != std::errc() || ptr == s->data()) return false;
  s->remove_prefix(static_cast<size_t>(ptr - s->data()));
  return true;
}

bool TakeChar(std::string_view* s, char c) {
  if (s->empty() || s->front() != c) return false;
  s->remove_prefix(1);
  return true;
}

// Consumes at least one space or tab.
bool TakeBlanks(std::string_view* s) {
  size_t n = 0;
  while (n < s->size() && ((*s)[n] == ' ' || (*s)[n] == '\t')) ++n;
  s->remove_prefix(n);
  return n > 0;
}

}  // namespace

std::string_view StripDeletedSuffix(std::string_view path, bool* deleted) {
  constexpr std::string_view kDeleted = " (deleted)";
  bool is_deleted = path.size() > kDeleted.size() &&
                    path.substr(path.size() - kDeleted.size()) == kDeleted;
  if (deleted) *deleted = is_deleted;
  if (is_deleted) path.remove_suffix(kDeleted.size());
  return path;
}

Result<MapsEntry> ParseMapsLine(std::string_view line) {
  if (!line.empty() && line.back() == '\n') line.remove_suffix(1);
  const std::string_view original = line;
  auto bad = [&](const char* what) {
    return MakeError("malformed /proc/PID/maps line (" + std::string(what) + "): '" +
                     std::string(original.substr(0, 200)) + "'");
  };
  MapsEntry e;
  if (!TakeNumber(&line, 16, &e.start) || !TakeChar(&line, '-') || !TakeNumber(&line, 16, &e.end))
    return bad("address range");
  if (e.end < e.start) return bad("end before start");
  if (!TakeBlanks(&line) || line.size() < 4) return bad("permissions");
  const std::string_view perms = line.substr(0, 4);
  if ((perms[0] != 'r' && perms[0] != '-') || (perms[1] != 'w' && perms[1] != '-') ||
      (perms[2] != 'x' && perms[2] != '-') || (perms[3] != 'p' && perms[3] != 's'))
    return bad("permissions");
  if (perms[0] == 'r') e.prot |= kProtRead;
  if (perms[1] == 'w') e.prot |= kProtWrite;
  if (perms[2] == 'x') e.prot |= kProtExec;
  e.shared = perms[3] == 's';
  line.remove_prefix(4);
  if (!TakeBlanks(&line) || !TakeNumber(&line, 16, &e.pgoff)) return bad("offset");
  if (!TakeBlanks(&line) || !TakeNumber(&line, 16, &e.dev_major) || !TakeChar(&line, ':') ||
      !TakeNumber(&line, 16, &e.dev_minor))
    return bad("device");
  if (!TakeBlanks(&line) || !TakeNumber(&line, 10, &e.inode)) return bad("inode");
  if (!line.empty()) {
    // The kernel pads with spaces up to a column before the path.
    if (!TakeBlanks(&line)) return bad("path separator");
    e.path = std::string(StripDeletedSuffix(line, &e.deleted));
  }
  return e;
}

std::vector<MapsEntry> ParseMaps(std::string_view text, size_t* malformed) {
  std::vector<MapsEntry> entries;
  size_t bad = 0;
  while (!text.empty()) {
    size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);
    if (line.empty()) continue;
    auto entry = ParseMapsLine(line);
    if (entry.ok()) {
      entries.push_back(std::move(entry).value());
    } else {
      ++bad;
    }
  }
  if (malformed) *malformed = bad;
  return entries;
}

std::string ParseComm(std::string_view text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == '\0')) text.remove_suffix(1);
  return std::string(text);
}

std::string ParseCmdline(std::string_view raw) {
  while (!raw.empty() && raw.back() == '\0') raw.remove_suffix(1);
  std::string out(raw);
  for (char& c : out) {
    if (c == '\0') c = ' ';
  }
  return out;
}

Result<ProcStatus> ParseStatus(std::string_view text) {
  ProcStatus status;
  while (!text.empty()) {
    size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);
    size_t colon = line.find(':');
    if (colon == std::string_view::npos) continue;
    std::string_view key = line.substr(0, colon);
    std::string_view value = line.substr(colon + 1);
    if (key == "Name") {
      TakeBlanks(&value);
      status.name = std::string(value);
    } else if (key == "Tgid") {
      TakeBlanks(&value);
      if (!TakeNumber(&value, 10, &status.tgid)) return MakeError("malformed Tgid line in /proc/PID/status");
    } else if (key == "Uid") {
      if (!TakeBlanks(&value) || !TakeNumber(&value, 10, &status.uid) || !TakeBlanks(&value) ||
          !TakeNumber(&value, 10, &status.euid))
        return MakeError("malformed Uid line in /proc/PID/status");
      status.has_uid = true;
    } else if (key == "NSpid") {
      status.nspid.clear();
      uint32_t id = 0;
      while (TakeBlanks(&value) && TakeNumber(&value, 10, &id)) status.nspid.push_back(id);
      if (!value.empty()) return MakeError("malformed NSpid line in /proc/PID/status");
    }
  }
  if (!status.has_uid) return MakeError("no Uid line in /proc/PID/status");
  return status;
}

Result<uint64_t> ParseStatStartTicks(std::string_view text) {
  const size_t paren = text.rfind(')');
  if (paren == std::string_view::npos) return MakeError("no ')' after the name in /proc/PID/stat");
  text.remove_prefix(paren + 1);
  // Fields 3 (state) to 21 come before starttime.
  for (int field = 3; field < 22; ++field) {
    if (!TakeChar(&text, ' ')) return MakeError("/proc/PID/stat ends before its field 22");
    const size_t end = text.find(' ');
    if (end == 0 || end == std::string_view::npos) return MakeError("/proc/PID/stat ends before its field 22");
    text.remove_prefix(end);
  }
  uint64_t ticks = 0;
  if (!TakeChar(&text, ' ') || !TakeNumber(&text, 10, &ticks) || (!text.empty() && text.front() != ' ' &&
                                                                    text.front() != '\n')) {
    return MakeError("malformed starttime (field 22) in /proc/PID/stat");
  }
  return ticks;
}

}  // namespace arcprof::procfs
