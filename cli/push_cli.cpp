#include "cli/push_cli.h"
#include "cli/error_stream.h"

#include "cli/exit_codes.h"

#include <chrono>

#include "push/capture_windows.h"
#include "push/store_windows.h"

namespace arcprof::push {
using arcprof::cli::ErrorLine;
using namespace arcprof::model;
using namespace arcprof::store;

Result<PushOptions> PushFlags::Resolve() const {
  PushOptions options;
  if (url.rfind("http://", 0) != 0 && url.rfind("https://", 0) != 0 && !IsOtlpUrl(url)) {
    return MakeError("--push: '" + Destination(url.substr(0, 200)) +
                     "' is not an http://, https:// (Pyroscope) or otlp+http://, otlp+https:// (OTLP) URL");
  }
  options.url = url;
  options.service_name = service_name;
  for (const std::string& arg : labels) {
    auto label = ParseLabel(arg);
    if (!label) return label.error();
    options.labels.push_back(*label);
  }
  options.tenant = tenant;
  return options;
}

void AddPushFlags(CLI::App& command, PushFlags& flags, bool with_url_flag) {
  if (with_url_flag) {
    command.add_option("--push", flags.url,
                       "Send every closed window to this Pyroscope server (http://host:4040) or OTLP "
                       "receiver (otlp+http://host:4318); unsent windows stay in the store "
                       "(docs/continuous.md)");
  }
  command.add_option("--service-name", flags.service_name,
                     "Pyroscope: service_name of every pushed series (default: each process's service: "
                     "one series per service, container and pod); OTLP: service.name of every resource");
  command.add_option("--label", flags.labels,
                     "Extra series label (OTLP: resource attribute) KEY=VALUE (repeatable)");
  command.add_option("--tenant", flags.tenant, "Pyroscope tenant (X-Scope-OrgID header)");
}

PushCommands::PushCommands(CLI::App& app) {
  push_ = app.add_subcommand("push", "Send a capture's or store's unsent windows to a Pyroscope server or OTLP receiver");
  push_->add_option("-i,--store", store_, "Capture or store to send from")->capture_default_str();
  push_->add_option("url", flags_.url,
                    "Pyroscope server (http://localhost:4040) or OTLP receiver (otlp+http://localhost:4318)")
      ->required();
  push_->add_option("--max-time", max_time_s_, "Give up retrying after this many seconds")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 86400.0));
  AddPushFlags(*push_, flags_, false);
}

std::optional<int> PushCommands::RunIfSelected(std::ostream& out, std::ostream& err) {
  if (!push_->parsed()) return std::nullopt;
  auto options = flags_.Resolve();
  if (!options) {
    err << ErrorLine("", options.error().message);
    return 1;
  }
  // A directory is a continuous store, a file a capture.
  Result<std::unique_ptr<WindowSource>> source = MakeError("");
  if (IsStoreDirectory(store_)) {
    auto opened = StoreWindows::Open(store_);
    source = opened ? Result<std::unique_ptr<WindowSource>>(std::move(*opened))
                    : Result<std::unique_ptr<WindowSource>>(opened.error());
  } else {
    auto opened = CaptureWindows::Open(store_);
    source = opened ? Result<std::unique_ptr<WindowSource>>(std::move(*opened))
                    : Result<std::unique_ptr<WindowSource>>(opened.error());
  }
  if (!source) {
    err << ErrorLine("", source.error().message);
    return cli::ExitCode(source.error());
  }
  Pusher pusher(*options, **source);
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(static_cast<int64_t>(max_time_s_ * 1000));
  auto left = pusher.SendAll(deadline);
  const PushStats stats = pusher.stats();
  const std::string where = Destination(options->url);
  if (!left) {
    err << ErrorLine("", left.error().message);
    return cli::ExitCode(left.error());
  }
  out << "pushed " << stats.windows_sent << " window" << (stats.windows_sent == 1 ? "" : "s") << " ("
      << stats.bytes_sent << " bytes) to " << where << (stats.using_ingest ? " (/ingest)" : "") << "\n";
  if (*left > 0 || stats.rejected > 0) {
    // The last error may quote the server's reply: ErrorLine escapes it.
    err << ErrorLine("", std::to_string(*left + stats.rejected) + " window(s) not sent to " +
                             std::string(where) + " (last error: " + stats.last_error + "); they stay in " +
                             store_ + " for the next run");
    return 1;
  }
  return 0;
}

}  // namespace arcprof::push
