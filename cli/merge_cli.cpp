#include "cli/merge_cli.h"

#include "cli/error_stream.h"
#include "cli/exit_codes.h"
#include "store/capture_merge.h"
#include "store/capture_store.h"

namespace arcprof::cli {

MergeCommand::MergeCommand(CLI::App& app) {
  merge_ = app.add_subcommand(
      "merge", "Merge captures of several machines into one (host > process > thread > stack)");
  merge_->add_option("inputs", inputs_, "Captures to merge")->required();
  merge_->add_option("-o,--output", output_, "The merged capture")->required();
  merge_->add_flag("--merge-hosts", merge_hosts_, "Fold the hosts together (no host level)");
}

std::optional<int> MergeCommand::RunIfSelected(const std::string& command_line, std::ostream& err) {
  if (!merge_->parsed()) return std::nullopt;
  auto merged = store::MergeCaptures(inputs_, merge_hosts_);
  if (!merged) {
    err << ErrorLine("", merged.error().message);
    return ExitCode(merged.error());
  }
  for (const std::string& note : merged->notes) err << ErrorLine("", "note: " + note);
  merged->profile.meta.command_line = command_line;
  if (auto r = store::WriteCapture(output_, merged->profile); !r) {
    err << ErrorLine("", r.error().message);
    return ExitCode(r.error());
  }
  return kExitOk;
}

}  // namespace arcprof::cli
