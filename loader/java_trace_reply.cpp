#include "loader/java_trace_reply.h"

#include <cctype>
#include <charconv>

#include "common/text.h"

namespace arcprof {
namespace {

bool IsIdentifier(std::string_view s) {
  if (s.empty() || (s[0] >= '0' && s[0] <= '9')) return false;
  for (unsigned char c : s) {
    if (!(std::isalnum(c) || c == '_' || c == '$' || c >= 0x80)) return false;
  }
  return true;
}

template <typename T>
bool Number(std::string_view s, T* out) {
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && end == s.data() + s.size();
}

std::vector<std::string_view> Words(std::string_view line, size_t max) {
  std::vector<std::string_view> out;
  while (!line.empty() && out.size() < max) {
    const size_t space = line.find(' ');
    out.push_back(line.substr(0, space));
    if (space == std::string_view::npos) break;
    line.remove_prefix(space + 1);
  }
  return out;
}

}  // namespace

std::optional<JavaRoot> ParseJavaRoot(std::string_view root) {
  const size_t dot = root.rfind('.');
  if (dot == std::string_view::npos || dot == 0) return std::nullopt;
  JavaRoot out;
  out.method = std::string(root.substr(dot + 1));
  if (!IsIdentifier(out.method)) return std::nullopt;
  std::string_view klass = root.substr(0, dot);
  while (true) {
    const size_t next = klass.find('.');
    const std::string_view part = klass.substr(0, next);
    if (!IsIdentifier(part)) return std::nullopt;
    out.klass += part;
    if (next == std::string_view::npos) break;
    out.klass += '/';
    klass.remove_prefix(next + 1);
  }
  return out;
}

void ParseJavaTraceLine(std::string_view line, JavaTraceReply* reply) {
  if (line.size() > kMaxJavaTraceLine) {
    ++reply->bad_lines;
    return;
  }
  if (line == "end") {
    reply->end = true;
    return;
  }
  const std::vector<std::string_view> w = Words(line, 12);
  if (w.size() == 11 && w[0] == "n") {
    JavaTraceNode n;
    uint64_t* values[] = {&n.calls, &n.ended, &n.thrown, &n.incl_ns, &n.self_ns, &n.unreturned};
    bool ok = Number(w[1], &n.tid) && Number(w[2], &n.index) && Number(w[3], &n.parent) && Number(w[4], &n.method);
    for (int i = 0; i < 6 && ok; ++i) ok = Number(w[5 + i], values[i]);
    // A node's parent comes before it.
    if (ok && (n.parent == 0 || n.parent - 1 < n.index) && n.ended <= n.calls && n.thrown <= n.ended &&
        n.self_ns <= n.incl_ns && reply->nodes.size() < kMaxJavaTraceNodes) {
      reply->nodes.push_back(n);
      return;
    }
  } else if (w.size() >= 3 && w[0] == "m") {
    uint32_t id = 0;
    const std::string_view name = line.substr(w[0].size() + w[1].size() + 2);
    if (Number(w[1], &id) && !name.empty() && reply->names.size() < kMaxJavaTraceNames) {
      reply->names[id] = EscapeControl(std::string(name));
      return;
    }
  } else if (w.size() >= 3 && w[0] == "c") {
    if (w[1] == "last_skip") {
      reply->last_skip = EscapeControl(std::string(line.substr(std::min(line.size(), size_t{14}))));
      return;
    }
    int64_t v = 0;
    if (w.size() == 3 && Number(w[2], &v) && w[1].size() <= 64 && reply->counters.size() < 64) {
      reply->counters[std::string(w[1])] = v;
      return;
    }
  }
  ++reply->bad_lines;
}

}  // namespace arcprof
