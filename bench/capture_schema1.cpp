// Rewrites a capture in schema 1 (a table row per frame and call-tree node),
// so that bench/capture_size_bench.sh can compare the sizes and `report` times
// of the same contents in both schemas; with --current, in the schema this
// build writes (an older capture or store window rewritten, PTT included);
// with --schema N, in schema N (1 to the current one).
// Usage: capture_schema1 [--current | --schema N] IN.db OUT.db
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "store/capture_store.h"

int main(int argc, char** argv) {
  int version = 1;
  if (argc == 4 && std::strcmp(argv[1], "--current") == 0) {
    version = arcprof::store::kCaptureSchemaVersion;
    ++argv;
    --argc;
  } else if (argc == 5 && std::strcmp(argv[1], "--schema") == 0) {
    version = std::atoi(argv[2]);
    argv += 2;
    argc -= 2;
  }
  if (argc != 3) {
    std::fprintf(stderr, "usage: capture_schema1 [--current | --schema N] IN.db OUT.db\n");
    return 2;
  }
  auto profile = arcprof::store::ReadCapture(argv[1]);
  if (!profile) {
    std::fprintf(stderr, "%s\n", profile.error().message.c_str());
    return 1;
  }
  if (auto r = arcprof::store::WriteCapture(argv[2], *profile, {.schema_version = version}); !r) {
    std::fprintf(stderr, "%s\n", r.error().message.c_str());
    return 1;
  }
  return 0;
}
