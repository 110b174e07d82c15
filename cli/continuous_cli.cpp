#include "cli/continuous_cli.h"

#include <chrono>
#include <memory>

#include "cli/error_stream.h"
#include "cli/exit_codes.h"
#include "cli/record_cli.h"
#include "push/store_windows.h"
#include "store/window_store.h"

namespace arcprof::cli {

ContinuousCommand::ContinuousCommand(CLI::App& app) {
  // The sampling options of record, a store instead of -o.
  ContinuousOptions& cont = options_;
  cont.record.frequency_hz = 49;
  cont.record.quiet = true;
  CLI::App* continuous = continuous_ = app.add_subcommand(
      "continuous", "Whole-machine capture for days: one window per --window into a store");
  continuous->add_option("--store", cont.store_dir, "Store directory (created mode 0700)")->required();
  continuous->add_option("--window", window_, "Window length (s, m, h)")->capture_default_str();
  continuous->add_option("--retain", retain_, "Remove windows older than this (0: never)")
      ->capture_default_str();
  continuous->add_option("--max-size", max_size_, "Remove the oldest windows above this size (0: no limit)")
      ->capture_default_str();
  continuous->add_option("--log", cont.log_path, "Append messages to FILE; SIGHUP reopens it");
  continuous->add_option("-p,--pid", cont.record.pids, "Only these processes and their children (PID,...)")
      ->delimiter(',');
  AddCgroupSelectionOptions(continuous, cont.record.cgroups);
  AddAllocFlags(*continuous, cont.record);
  continuous->add_option("-F,--freq", cont.record.frequency_hz, "Samples per second per CPU")
      ->capture_default_str()
      ->check(CLI::Range(1, 100000));
  continuous->add_option("-e,--event", cont.record.event, "Sampling event (as for record)")
      ->capture_default_str();
  continuous->add_option("--call-graph", cont.record.call_graph, "fp, dwarf or hybrid (as for record)")
      ->capture_default_str()
      ->check(CLI::IsMember({"fp", "dwarf", "hybrid"}));
  continuous->add_option("--stack-kb", cont.record.stack_kb,
                         "User stack copied per sample, in KiB (as for record)")
      ->check(CLI::Range(1, 256));
  continuous->add_option("--buffer-mb", cont.record.buffer_mb,
                         "Sample ring buffer size in MiB (default: from -F, the CPUs and --stack-kb, 8 to 64)")
      ->check(CLI::Range(1, 4096));
  continuous
      ->add_option("--names-max-size", names_max_size_,
                   "Release the interned frame names at a window close past this size")
      ->group("");  // for tests: the default suits every machine
  continuous
      ->add_option("--window-max-size", window_max_size_,
                   "Close a window early when its frames and call trees hold more than this (0: no limit)")
      ->capture_default_str();
  continuous->add_flag_callback("--no-ptt", [&cont] { cont.record.ptt = false; }, "No per-thread time");
  continuous->add_flag_callback("--no-java", [&cont] { cont.record.java = false; }, "Do not attach to JVMs");
  push::AddPushFlags(*continuous, push_flags_, true);
  continuous->add_flag_callback("--verbose-java", [&cont] { cont.record.quiet = false; },
                                "Log every JVM attach");
}

std::optional<int> ContinuousCommand::RunIfSelected(const std::string& command_line, std::ostream& err) {
  if (!continuous_->parsed()) return std::nullopt;
  ContinuousOptions& cont = options_;
  cont.record.command_line = command_line;
  auto parse = [&err](const std::string& text, const char* option, auto parser) -> std::optional<uint64_t> {
    if (text == "0") return 0;
    auto v = parser(text);
    if (!v) err << ErrorLine("", std::string(option) + ": '" + text + "' is not valid (see arcprof continuous --help)");
    return v;
  };
  auto w = parse(window_, "--window", store::ParseDurationNs);
  auto r = parse(retain_, "--retain", store::ParseDurationNs);
  auto m = parse(max_size_, "--max-size", store::ParseSize);
  auto wm = parse(window_max_size_, "--window-max-size", store::ParseSize);
  auto nm = parse(names_max_size_, "--names-max-size", store::ParseSize);
  if (!w || !r || !m || !wm || !nm || *nm == 0) {
    if (nm && *nm == 0) err << ErrorLine("", "--names-max-size must be above 0");
    return kExitFailure;
  }
  cont.window_max_bytes = *wm;
  cont.record.names_budget_bytes = *nm;
  cont.window_ns = *w;
  cont.retain_ns = *r;
  cont.max_bytes = *m;
  // --push: a sender thread reads the store and marks windows sent.
  std::unique_ptr<push::StoreWindows> push_source;
  std::unique_ptr<push::Pusher> pusher;
  if (!push_flags_.url.empty()) {
    auto push_options = push_flags_.Resolve();
    if (!push_options) {
      err << ErrorLine("", push_options.error().message);
      return kExitFailure;
    }
    cont.on_start = [&, options = *push_options](const std::string& dir) -> Result<void> {
      auto source = push::StoreWindows::Open(dir);
      if (!source) return source.error();
      push_source = std::move(*source);
      pusher = std::make_unique<push::Pusher>(options, *push_source);
      pusher->Start();
      return {};
    };
    cont.on_window_written = [&](const std::string& id, model::Profile&& window) {
      if (!pusher) return;
      push_source->Keep(id, std::move(window));  // sent without reading it back
      pusher->WindowClosed();
    };
    cont.on_stop = [&] {
      if (pusher) pusher->Stop(std::chrono::seconds(5));
    };
  }
  auto result = RunContinuous(cont);
  if (!result) {
    err << ErrorLine("", result.error().message);
    return ExitCode(result.error());
  }
  return *result;
}

}  // namespace arcprof::cli
