#include "cli/store_cli.h"

#include "cli/error_stream.h"
#include "cli/exit_codes.h"
#include "reports/store_info.h"
#include "store/window_store.h"

namespace arcprof::cli {

StoreCommands::StoreCommands(CLI::App& app) {
  store_ = app.add_subcommand("store", "Inspect a continuous store");
  store_->require_subcommand(1);
  info_ = store_->add_subcommand("info", "Windows, size, retention and unsent windows");
  info_->add_option("--store", store_dir_, "Store directory")->required();
  info_->add_option("--format", format_, "text or json")
      ->capture_default_str()
      ->check(CLI::IsMember({"text", "json"}));
}

std::optional<int> StoreCommands::RunIfSelected(std::ostream& out, std::ostream& err) {
  if (!info_->parsed()) return std::nullopt;
  auto opened = store::WindowStore::OpenForReading(store_dir_);
  if (!opened) {
    err << ErrorLine("", opened.error().message);
    return ExitCode(opened.error());
  }
  return reports::PrintStoreInfo(*opened, format_, out, err);
}

}  // namespace arcprof::cli
