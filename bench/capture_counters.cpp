// Prints a capture's counters, one "name<TAB>value" a line, summed over its
// windows (ReadCapture): captures keep them in row blocks, which the sqlite3
// shell cannot decode. Used by bench/capture_size_bench.sh (samples and
// truncated stacks) and scripts/soak.sh.
// Usage: capture_counters CAPTURE.db
#include <cstdio>

#include "store/capture_store.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: capture_counters CAPTURE.db\n");
    return 2;
  }
  auto profile = arcprof::store::ReadCapture(argv[1]);
  if (!profile) {
    std::fprintf(stderr, "%s\n", profile.error().message.c_str());
    return 1;
  }
  for (const auto& [name, value] : profile->counters) std::printf("%s\t%lld\n", name.c_str(), static_cast<long long>(value));
  return 0;
}
