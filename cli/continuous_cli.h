// `arcprof continuous`: whole-machine capture for days, one window per
// --window into a store (loader/continuous.h, docs/continuous.md), with
// --push sending each closed window (push/pusher.h).
//
//   arcprof continuous --store DIR [--window 60s] [--retain 7d] [--max-size 2GB] [--log FILE]
//                      [-p PID,...] [-F 49] [-e EVENT] [--call-graph fp|dwarf|hybrid]
//                      [--stack-kb KB] [--buffer-mb MB] [--window-max-size 24MB]
//                      [--no-ptt] [--no-java] [--verbose-java] [--push URL ...]
#pragma once

#include <CLI/CLI.hpp>
#include <optional>
#include <ostream>
#include <string>

#include "cli/push_cli.h"
#include "loader/continuous.h"

namespace arcprof::cli {

class ContinuousCommand {
 public:
  // Adds `continuous` to `app`; the object must outlive app.parse().
  explicit ContinuousCommand(CLI::App& app);
  ContinuousCommand(const ContinuousCommand&) = delete;
  ContinuousCommand& operator=(const ContinuousCommand&) = delete;

  // Runs when `continuous` was parsed: 0 after SIGTERM/SIGINT, 1 for a bad
  // option value, the error's code otherwise (cli/exit_codes.h).
  std::optional<int> RunIfSelected(const std::string& command_line, std::ostream& err);

 private:
  CLI::App* continuous_ = nullptr;
  ContinuousOptions options_;
  // Sizes and durations as given ("60s", "2GB"), parsed by the store's parsers.
  std::string window_ = "60s";
  std::string retain_ = "7d";
  std::string max_size_ = "2GB";
  std::string window_max_size_ = "24MB";
  std::string names_max_size_ = "16MB";
  push::PushFlags push_flags_;
};

}  // namespace arcprof::cli
