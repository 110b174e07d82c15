// `arcprof java attach PID` and `arcprof java status PID`: manual use of the
// JVMTI agent (docs/java.md).
#pragma once

#include <CLI/CLI.hpp>
#include <optional>
#include <ostream>
#include <string>

namespace arcprof::cli {

class JavaCommands {
 public:
  explicit JavaCommands(CLI::App& app);
  // The exit code when a java subcommand was given, nullopt otherwise.
  std::optional<int> RunIfSelected(std::ostream& out, std::ostream& err);

 private:
  CLI::App* java_ = nullptr;
  CLI::App* attach_ = nullptr;
  CLI::App* status_ = nullptr;
  uint32_t attach_pid_ = 0;
  uint32_t status_pid_ = 0;
  std::string agent_path_;
  std::string agent_options_;
  double timeout_s_ = 10;
};

}  // namespace arcprof::cli
