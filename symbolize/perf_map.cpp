#include "symbolize/perf_map.h"

namespace arcprof::perfmap {
namespace {

bool IsBlank(char c) { return c == ' ' || c == '\t'; }

// Hex number with an optional 0x/0X; at least one digit, at most 16.
bool ParseHex(std::string_view s, size_t* pos, uint64_t* out) {
  size_t i = *pos;
  if (i + 1 < s.size() && s[i] == '0' && (s[i + 1] == 'x' || s[i + 1] == 'X')) i += 2;
  uint64_t v = 0;
  size_t digits = 0;
  for (; i < s.size(); ++i) {
    const char c = s[i];
    int d;
    if (c >= '0' && c <= '9') d = c - '0';
    else if (c >= 'a' && c <= 'f') d = c - 'a' + 10;
    else if (c >= 'A' && c <= 'F') d = c - 'A' + 10;
    else break;
    if (++digits > 16) return false;
    v = v << 4 | static_cast<uint64_t>(d);
  }
  if (digits == 0) return false;
  *pos = i;
  *out = v;
  return true;
}

}  // namespace

bool ParseLine(std::string_view line, Entry* out) {
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  size_t pos = 0;
  while (pos < line.size() && IsBlank(line[pos])) ++pos;
  uint64_t start = 0, size = 0;
  if (!ParseHex(line, &pos, &start)) return false;
  if (pos >= line.size() || !IsBlank(line[pos])) return false;
  while (pos < line.size() && IsBlank(line[pos])) ++pos;
  if (!ParseHex(line, &pos, &size)) return false;
  if (pos >= line.size() || !IsBlank(line[pos])) return false;
  while (pos < line.size() && IsBlank(line[pos])) ++pos;
  if (pos >= line.size()) return false;  // no name
  if (start + size < start) return false;
  out->start = start;
  out->size = size;
  out->name.assign(line.substr(pos));
  return true;
}

ParseProgress ParseLines(std::string_view text, bool at_end, std::vector<Entry>* out) {
  ParseProgress p;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    if (nl == std::string_view::npos) {
      if (!at_end) break;
      nl = text.size();
    }
    std::string_view line = text.substr(pos, nl - pos);
    pos = nl < text.size() ? nl + 1 : nl;
    if (line.empty() || line == "\r") continue;
    Entry e;
    if (ParseLine(line, &e)) out->push_back(std::move(e));
    else ++p.malformed;
  }
  p.consumed = pos;
  return p;
}

}  // namespace arcprof::perfmap
