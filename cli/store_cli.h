// `arcprof store info`: a continuous store's windows, size, retention and
// unsent windows (reports/store_info.h).
//
//   arcprof store info --store DIR [--format text|json]
#pragma once

#include <CLI/CLI.hpp>
#include <optional>
#include <ostream>
#include <string>

namespace arcprof::cli {

class StoreCommands {
 public:
  // Adds `store` and its subcommands to `app`; the object must outlive app.parse().
  explicit StoreCommands(CLI::App& app);
  StoreCommands(const StoreCommands&) = delete;
  StoreCommands& operator=(const StoreCommands&) = delete;

  // Runs when a `store` subcommand was parsed: 0, or the error's code.
  std::optional<int> RunIfSelected(std::ostream& out, std::ostream& err);

 private:
  CLI::App* store_ = nullptr;
  CLI::App* info_ = nullptr;
  std::string store_dir_;
  std::string format_ = "text";
};

}  // namespace arcprof::cli
