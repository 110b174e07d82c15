// libFuzzer target for the capture reader: every input is written to a private
// temporary file and read with ReadCapture, which must return a value or an
// error and never crash, hang or read out of bounds.
#include <stdlib.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "reports/capture_store.h"

namespace {

class FuzzFile {
 public:
  FuzzFile() {
    char name[] = "/tmp/arcprof-capture-fuzz-XXXXXX";
    if (::mkdtemp(name) != nullptr) dir_ = name;
  }
  ~FuzzFile() {
    std::error_code ignored;
    if (!dir_.empty()) std::filesystem::remove_all(dir_, ignored);
  }
  std::string path() const { return dir_ + "/capture.db"; }
  bool ok() const { return !dir_.empty(); }

 private:
  std::string dir_;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static FuzzFile file;
  if (!file.ok()) return 0;
  {
    std::ofstream out(file.path(), std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  }
  auto profile = arcprof::ReadCapture(file.path());
  if (profile.ok()) {
    // Walk what was read: every id must be in range.
    uint64_t total = 0;
    for (const auto& tree : profile->trees) {
      for (const auto& node : tree.nodes()) {
        if (node.frame != arcprof::CallTree::kNoFrame) total += profile->frames.at(node.frame).address & 1;
        total += profile->trees.size() > 0 ? tree.nodes()[node.parent].n & 1 : 0;
      }
    }
    (void)total;
  } else if (profile.error().exit_code != arcprof::kCaptureErrorExitCode ||
             profile.error().message.find('\n') != std::string::npos) {
    fprintf(stderr, "bad error (exit code %d): %s\n", profile.error().exit_code,
            profile.error().message.c_str());
    abort();
  }
  return 0;
}
