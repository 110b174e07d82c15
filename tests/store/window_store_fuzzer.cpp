// libFuzzer target for what a continuous store reads from outside: window ids
// (file names), store.conf, sent markers, and the --since/--retain/--max-size
// texts. The first byte picks the parser.
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstdint>
#include <string>

#include "store/window_store.h"

namespace {

std::string Dir() {
  static std::string dir = [] {
    char tmpl[] = "/tmp/arcprof-store-fuzz-XXXXXX";
    std::string d = mkdtemp(tmpl);
    close(open((d + "/1764000000000-1764000060000-0123abcd.db").c_str(), O_WRONLY | O_CREAT, 0600));
    return d;
  }();
  return dir;
}

void WriteFile(const std::string& path, const std::string& text) {
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  if (fd < 0) return;
  (void)!write(fd, text.data(), text.size());
  close(fd);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string text(reinterpret_cast<const char*>(data) + 1, size - 1);
  switch (data[0] % 6) {
    case 0:
      (void)arcprof::store::ParseWindowId(text);
      break;
    case 1:
      (void)arcprof::store::ParseDurationNs(text);
      break;
    case 2:
      (void)arcprof::store::ParseSize(text);
      break;
    case 3:
      (void)arcprof::store::ParseTimePoint(text, 1764000000ull * 1000000000ull);
      break;
    case 4: {
      WriteFile(Dir() + "/store.conf", text);
      auto store = arcprof::store::WindowStore::OpenForReading(Dir());
      if (store) (void)store->ReadConfig();
      break;
    }
    case 5: {
      WriteFile(Dir() + "/1764000000000-1764000060000-0123abcd.sent", text);
      auto store = arcprof::store::WindowStore::OpenForReading(Dir());
      if (store) {
        for (const auto& w : store->List()) (void)w.sent_to.size();
        (void)store->Unsent("http://a");
      }
      break;
    }
  }
  return 0;
}
