// `arcprof record`: sample CPUs and write a capture (loader/record.h).
//
//   arcprof record [-d SECONDS] [-p PID,...] [-F HZ | -c N] [-e EVENT] [-o arcprof.db]
//                  [--call-graph fp|dwarf|hybrid[,BYTES]] [--stack-kb KB] [--buffer-mb MB]
//                  [--ptt|--no-ptt] [--off-cpu|--no-off-cpu] [--alloc] [--java|--no-java] ... [-- CMD ARGS]
#pragma once

#include <CLI/CLI.hpp>
#include <optional>
#include <ostream>
#include <string>

#include "loader/record.h"

namespace arcprof::cli {

// --container, --cgroup, --service of record and continuous: profile only
// those, filtered in BPF (loader/cgroup_targets.h).
void AddCgroupSelectionOptions(CLI::App* command, CgroupSelection& selection);
// -d/--duration: finite seconds from 0 to a year (record and trace).
CLI::Validator DurationValidator();

// --alloc, --alloc-rate, --alloc-max-blocks of record and continuous
// (loader/alloc_source.h).
void AddAllocFlags(CLI::App& command, RecordOptions& options);

class RecordCommand {
 public:
  // Adds `record` to `app`; the object must outlive app.parse() (the options
  // are bound to its members).
  explicit RecordCommand(CLI::App& app);
  RecordCommand(const RecordCommand&) = delete;
  RecordCommand& operator=(const RecordCommand&) = delete;

  // Runs when `record` was parsed: the recording's exit code (the command's,
  // with a command), or the error's (cli/exit_codes.h). `command_line` is how
  // arcprof was invoked, stored in the capture.
  std::optional<int> RunIfSelected(const std::string& command_line, std::ostream& err);

 private:
  CLI::App* record_ = nullptr;
  RecordOptions options_;
  bool all_cpus_ = false;     // -a: accepted, what record does anyway
  bool call_graphs_ = false;  // -g: accepted, always on
};

}  // namespace arcprof::cli
