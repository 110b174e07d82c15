// `arcprof trace`: exact call counts and times of one function's call
// subgraph (loader/trace.h).
//
//   arcprof trace --root FUNC [-p PID | -- CMD ARGS] [-d S] [-o FILE]
#pragma once

#include <CLI/CLI.hpp>
#include <optional>
#include <ostream>
#include <string>

#include "loader/record.h"

namespace arcprof::cli {

class TraceCommand {
 public:
  // Adds `trace` to `app`; the object must outlive app.parse().
  explicit TraceCommand(CLI::App& app);
  TraceCommand(const TraceCommand&) = delete;
  TraceCommand& operator=(const TraceCommand&) = delete;

  // Runs when `trace` was parsed: 0, or 2 with one line for any error (a
  // root that does not exist or is not reached, a process that exits or is
  // not the caller's).
  std::optional<int> RunIfSelected(const std::string& command_line, std::ostream& err);

 private:
  CLI::App* trace_ = nullptr;
  RecordOptions options_;
  uint32_t pid_ = 0;
  bool no_calibration_ = false;
};

}  // namespace arcprof::cli
