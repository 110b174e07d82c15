// Fuzzes what the Node runtime reads from a file it may not trust: the
// v8dbg_* constants (name -> value) a binary named node exports, through
// V8Layout::Read, and the mapped path through MayBeNode. Input: lines
// "name value".
#include <cstdint>
#include <cstdlib>
#include <map>
#include <string>
#include <string_view>

#include "runtimes/node/node_runtime.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  std::map<std::string, int64_t, std::less<>> constants;
  size_t at = 0;
  while (at < text.size()) {
    size_t end = text.find('\n', at);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view line = text.substr(at, end - at);
    const size_t space = line.find(' ');
    if (space != std::string_view::npos) {
      constants[std::string(line.substr(0, space))] = strtoll(std::string(line.substr(space + 1)).c_str(), nullptr, 0);
    }
    at = end + 1;
  }
  auto layout = arcprof::runtimes::V8Layout::Read([&](std::string_view name) -> std::optional<int64_t> {
    auto it = constants.find(name);
    if (it == constants.end()) return std::nullopt;
    return it->second;
  });
  if (layout && (layout->fp_function > ARCPROF_V8_FRAME_BELOW || layout->fp_function % 8 != 0)) abort();
  (void)arcprof::runtimes::MayBeNode(text);
  return 0;
}
