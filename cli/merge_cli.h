// `arcprof merge`: captures of several machines into one capture, host >
// process > thread > stack (store/capture_merge.h).
//
//   arcprof merge A.db B.db ... -o merged.db [--merge-hosts]
#pragma once

#include <CLI/CLI.hpp>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

namespace arcprof::cli {

class MergeCommand {
 public:
  // Adds `merge` to `app`; the object must outlive app.parse().
  explicit MergeCommand(CLI::App& app);
  MergeCommand(const MergeCommand&) = delete;
  MergeCommand& operator=(const MergeCommand&) = delete;

  // Runs when `merge` was parsed: 0, or the error's code (2 for inputs that
  // do not go together or cannot be read). `command_line` is stored in the
  // merged capture.
  std::optional<int> RunIfSelected(const std::string& command_line, std::ostream& err);

 private:
  CLI::App* merge_ = nullptr;
  std::vector<std::string> inputs_;
  std::string output_;
  bool merge_hosts_ = false;
};

}  // namespace arcprof::cli
