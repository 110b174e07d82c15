// What `arcprof trace` of a Java root reads: the root's name, and the
// agent's result lines (runtimes/java/agent/trace_agent.h has the protocol).
// Outside input: every line is checked and bounded.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace arcprof {

// "com.example.Cache.get" as a Java method: {"com/example/Cache", "get"};
// nothing when it cannot name one (fewer than two parts, not identifiers).
struct JavaRoot {
  std::string klass;  // internal name
  std::string method;
};
std::optional<JavaRoot> ParseJavaRoot(std::string_view root);

// The agent's results, as read from the control connection.
struct JavaTraceNode {
  uint32_t tid = 0, index = 0, parent = 0, method = 0;
  uint64_t calls = 0, ended = 0, thrown = 0, incl_ns = 0, self_ns = 0, unreturned = 0;
};
struct JavaTraceReply {
  std::vector<JavaTraceNode> nodes;
  std::unordered_map<uint32_t, std::string> names;  // method id -> com.example.Cache.get
  std::map<std::string, int64_t> counters;
  std::string last_skip;  // why the last method left out was
  bool end = false;       // "end" seen
  size_t bad_lines = 0;
};
// Limits of what is kept of one reply (the JVM's process is not trusted).
inline constexpr size_t kMaxJavaTraceNodes = 4'000'000;
inline constexpr size_t kMaxJavaTraceNames = 100'000;
inline constexpr size_t kMaxJavaTraceLine = 4096;
// Adds one line of the results (m, n, c, end); a malformed line is counted
// in bad_lines and skipped.
void ParseJavaTraceLine(std::string_view line, JavaTraceReply* reply);

}  // namespace arcprof
