// `arcprof diff`: reads both captures (or store ranges) and writes the
// differential flame graph and table of reports/diff.h.
#pragma once

#include <CLI/CLI.hpp>
#include <optional>
#include <ostream>
#include <string>

#include "reports/diff.h"
#include "reports/export_options.h"

namespace arcprof::cli {

// The `diff` subcommand:
//   arcprof diff BEFORE.db AFTER.db [-o arcprof-diff.svg] [--top 20] [--format text|json]
//   arcprof diff --store DIR 2h..1h 30m.. [...]   (two time ranges of a continuous store)
//                [--pid ..] [--tid ..] [--comm ..] [--root NAME] [--min PCT] [--icicle] [--metric M]
class DiffCommand {
 public:
  explicit DiffCommand(CLI::App& app);
  DiffCommand(const DiffCommand&) = delete;
  DiffCommand& operator=(const DiffCommand&) = delete;

  // Runs when `diff` was parsed: 0 success, 1 usage or output error, 2 capture error.
  std::optional<int> RunIfSelected(std::ostream& out, std::ostream& err);
  CLI::App* command() const { return command_; }

 private:
  CLI::App* command_ = nullptr;
  std::string before_;
  std::string after_;
  std::string store_dir_;  // --store: before_ and after_ are ranges of it
  std::string output_ = "arcprof-diff.svg";
  size_t top_ = 20;
  std::string format_ = "text";
  reports::ExportOptions options_;
};

}  // namespace arcprof::cli
