// The CPython interpreters of this machine the Python tests run: Debian's
// /usr/bin/python3 (3.11) and pyenv's 3.7-3.13 under $HOME/.pyenv/versions.
#pragma once

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

namespace arcprof::testing {

struct Interpreter {
  std::string label;    // "debian-3.11", "pyenv-3.12"
  uint32_t minor = 0;
  std::string binary;   // absent: empty
  std::string include;  // .../include/python3.X (with internal/), "" when absent
};

inline std::string PyenvRoot() {
  const char* home = getenv("HOME");
  return std::string(home && *home ? home : "/root") + "/.pyenv/versions";
}

// The newest pyenv install of 3.minor, "" when none.
inline std::string PyenvPrefix(uint32_t minor) {
  std::vector<std::string> found;
  std::error_code ec;
  const std::string want = "3." + std::to_string(minor) + ".";
  for (const auto& e : std::filesystem::directory_iterator(PyenvRoot(), ec)) {
    const std::string name = e.path().filename();
    if (name.rfind(want, 0) == 0) found.push_back(e.path());
  }
  std::sort(found.begin(), found.end());
  return found.empty() ? "" : found.back();
}

inline std::vector<Interpreter> Interpreters() {
  std::vector<Interpreter> out;
  Interpreter debian{"debian-3.11", 11, "", ""};
  if (access("/usr/bin/python3.11", X_OK) == 0) debian.binary = "/usr/bin/python3.11";
  if (access("/usr/include/python3.11/internal/pycore_frame.h", R_OK) == 0) debian.include = "/usr/include/python3.11";
  out.push_back(debian);
  for (uint32_t minor : {7u, 8u, 9u, 10u, 11u, 12u, 13u}) {
    Interpreter py{"pyenv-3." + std::to_string(minor), minor, "", ""};
    const std::string prefix = PyenvPrefix(minor);
    const std::string m = "3." + std::to_string(minor);
    if (!prefix.empty() && access((prefix + "/bin/python" + m).c_str(), X_OK) == 0) py.binary = prefix + "/bin/python" + m;
    // 3.7 keeps its headers in python3.7m; internal/ holds what the probe reads.
    for (const std::string& dir : {prefix + "/include/python" + m, prefix + "/include/python" + m + "m"}) {
      if (!prefix.empty() && access((dir + "/internal").c_str(), R_OK) == 0) py.include = dir;
    }
    out.push_back(py);
  }
  return out;
}

}  // namespace arcprof::testing
