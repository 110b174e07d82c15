// Small helpers shared by the symbolizer tests.
#pragma once

#include <stdlib.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include "tests/layer_names.h"

namespace arcprof::testing {

// A private directory under /tmp (mkdtemp: mode 0700), removed with its contents.
class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/arcprof-symbolize-XXXXXX";
    if (mkdtemp(tmpl)) path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    if (!path_.empty()) std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// Copies `from` to `to`, creating parent directories.
inline void CopyFile(const std::string& from, const std::string& to) {
  std::filesystem::create_directories(std::filesystem::path(to).parent_path());
  std::filesystem::copy_file(from, to, std::filesystem::copy_options::overwrite_existing);
}

// The build-id that binutils' readelf reports, independent of our ELF code.
inline std::string ReadelfBuildId(const std::string& path) {
  std::string command = "readelf -n '" + path + "' 2>/dev/null";
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen(command.c_str(), "r"), pclose);
  if (!pipe) return "";
  std::array<char, 512> line{};
  while (fgets(line.data(), line.size(), pipe.get())) {
    std::string text(line.data());
    auto pos = text.find("Build ID: ");
    if (pos != std::string::npos) {
      std::string id = text.substr(pos + 10);
      while (!id.empty() && (id.back() == '\n' || id.back() == ' ')) id.pop_back();
      return id;
    }
  }
  return "";
}

}  // namespace arcprof::testing
