// The CPython interpreters of this machine the Python tests run: Debian's
// /usr/bin/python3 (3.11) and pyenv's 2.7 and 3.6-3.13 under $HOME/.pyenv/versions.
#pragma once

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

namespace arcprof::testing {

struct Interpreter {
  std::string label;    // "debian-3.11", "pyenv-3.12", "pyenv-2.7"
  uint32_t major = 3;
  uint32_t minor = 0;
  std::string binary;   // absent: empty
  std::string include;  // .../include/pythonX.Y (with internal/ from 3.7), "" when absent
};

inline std::string PyenvRoot() {
  const char* home = getenv("HOME");
  return std::string(home && *home ? home : "/root") + "/.pyenv/versions";
}

// The newest pyenv install of major.minor, "" when none.
inline std::string PyenvPrefix(uint32_t minor, uint32_t major = 3) {
  std::vector<std::string> found;
  std::error_code ec;
  const std::string want = std::to_string(major) + "." + std::to_string(minor) + ".";
  for (const auto& e : std::filesystem::directory_iterator(PyenvRoot(), ec)) {
    const std::string name = e.path().filename();
    if (name.rfind(want, 0) == 0) found.push_back(e.path());
  }
  std::sort(found.begin(), found.end());
  return found.empty() ? "" : found.back();
}

inline std::vector<Interpreter> Interpreters() {
  std::vector<Interpreter> out;
  Interpreter debian{"debian-3.11", 3, 11, "", ""};
  if (access("/usr/bin/python3.11", X_OK) == 0) debian.binary = "/usr/bin/python3.11";
  if (access("/usr/include/python3.11/internal/pycore_frame.h", R_OK) == 0) debian.include = "/usr/include/python3.11";
  out.push_back(debian);
  const std::pair<uint32_t, uint32_t> versions[] = {{2, 7}, {3, 6}, {3, 7}, {3, 8}, {3, 9},
                                                     {3, 10}, {3, 11}, {3, 12}, {3, 13}};
  for (const auto& [major, minor] : versions) {
    const std::string m = std::to_string(major) + "." + std::to_string(minor);
    Interpreter py{"pyenv-" + m, major, minor, "", ""};
    const std::string prefix = PyenvPrefix(minor, major);
    if (!prefix.empty() && access((prefix + "/bin/python" + m).c_str(), X_OK) == 0) py.binary = prefix + "/bin/python" + m;
    // 3.6 and 3.7 keep their headers in python3.Xm; from 3.7 internal/ holds
    // what the probe reads (2.7 and 3.6 have it all in pystate.h).
    const bool internal = major == 3 && minor >= 7;
    for (const std::string& dir : {prefix + "/include/python" + m, prefix + "/include/python" + m + "m"}) {
      if (!prefix.empty() && access((dir + (internal ? "/internal" : "/pystate.h")).c_str(), R_OK) == 0) py.include = dir;
    }
    out.push_back(py);
  }
  return out;
}

}  // namespace arcprof::testing
