// Pure parser of perf maps (`/tmp/perf-<pid>.map`, docs/formats.md §2): one
// "START SIZE NAME" line per symbol, hex numbers with or without 0x. Fuzzed
// by tests/java/fuzz_perf_map.cpp.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace arcprof::perfmap {

struct Entry {
  uint64_t start = 0;
  uint64_t size = 0;
  std::string name;
};

struct ParseProgress {
  size_t consumed = 0;   // bytes of complete lines parsed; resume from here
  size_t malformed = 0;  // lines skipped
};

// Parses every complete line of `text` into *out. A final line without its
// newline is left for the next read unless `at_end` (the writer is done).
ParseProgress ParseLines(std::string_view text, bool at_end, std::vector<Entry>* out);

// One line without its newline; false when it is not "START SIZE NAME".
bool ParseLine(std::string_view line, Entry* out);

}  // namespace arcprof::perfmap
