// libFuzzer target: the lines a JVM's agent sends `arcprof trace` back
// (loader/java_trace_reply.h), and root names.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "loader/java_trace_reply.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace arcprof;
  std::string_view in(reinterpret_cast<const char*>(data), size);
  ParseJavaRoot(in.substr(0, in.find('\n')));
  JavaTraceReply reply;
  while (!in.empty()) {
    const size_t nl = in.find('\n');
    ParseJavaTraceLine(in.substr(0, nl), &reply);
    if (nl == std::string_view::npos) break;
    in.remove_prefix(nl + 1);
  }
  for (const JavaTraceNode& n : reply.nodes) {
    if (n.parent != 0 && n.parent - 1 >= n.index) abort();
    if (n.ended > n.calls || n.self_ns > n.incl_ns) abort();
  }
  return 0;
}
