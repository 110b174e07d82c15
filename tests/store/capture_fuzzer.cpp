// libFuzzer target for the capture reader: every input is written to a private
// temporary file and read with ReadCapture, which must return a value or an
// error and never crash, hang or read out of bounds.
#include <stdlib.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>

#include "store/capture_store.h"

namespace {

// Writes the input to a fresh 0600 file in /tmp (mkstemp: O_EXCL) and removes
// it when done, so runs leave nothing behind whatever way libFuzzer exits.
class InputFile {
 public:
  InputFile(const uint8_t* data, size_t size) {
    char name[] = "/tmp/arcprof-capture-fuzz-XXXXXX";
    const int fd = ::mkstemp(name);
    if (fd < 0) return;
    path_ = name;
    size_t written = 0;
    while (written < size) {
      const ssize_t n = ::write(fd, data + written, size - written);
      if (n <= 0) break;
      written += static_cast<size_t>(n);
    }
    ::close(fd);
  }
  ~InputFile() {
    if (!path_.empty()) ::unlink(path_.c_str());
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const InputFile file(data, size);
  if (file.path().empty()) return 0;
  auto profile = arcprof::store::ReadCapture(file.path());
  if (profile.ok()) {
    // Walk what was read: every id must be in range.
    uint64_t total = 0;
    for (const auto& thread : profile->threads) {
      const auto& tree = thread.tree;
      for (const auto& node : tree.nodes()) {
        if (node.frame != arcprof::model::CallTree::kNoFrame) total += profile->frames.at(node.frame).address & 1;
        total += tree.nodes()[node.parent].n & 1;
      }
    }
    (void)total;
  } else if (profile.error().kind != arcprof::ErrorKind::kCapture ||
             profile.error().message.find('\n') != std::string::npos) {
    fprintf(stderr, "bad error (kind %d): %s\n", static_cast<int>(profile.error().kind),
            profile.error().message.c_str());
    abort();
  }
  return 0;
}
