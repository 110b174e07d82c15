// `arcprof push` and the push options shared with `arcprof continuous`.
//
//   arcprof push [-i|--store PATH] URL [--service-name NAME] [--label K=V]...
//                [--tenant ID] [--max-time SECONDS]
// sends every window of PATH not yet sent to URL (push/pusher.h) and exits 0
// when none is left, 1 when some stay unsent (they are kept for a later run).
#pragma once

#include <CLI/CLI.hpp>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "push/pusher.h"

namespace arcprof::push {

// What --push and its companions parse into; Resolve() checks the labels.
struct PushFlags {
  std::string url;
  std::string service_name;  // "": Pyroscope: each process's service; OTLP: no service.name
  std::vector<std::string> labels;  // raw KEY=VALUE
  std::string tenant;
  // Checks the flags and fills `out`; a one-line error for a bad label or URL.
  Result<PushOptions> Resolve() const;
};

// Adds --service-name, --label and --tenant to `command` (and --push URL when
// `with_url_flag`: for `continuous`; `push` takes the URL as a positional).
void AddPushFlags(CLI::App& command, PushFlags& flags, bool with_url_flag);

class PushCommands {
 public:
  explicit PushCommands(CLI::App& app);
  PushCommands(const PushCommands&) = delete;
  PushCommands& operator=(const PushCommands&) = delete;
  std::optional<int> RunIfSelected(std::ostream& out, std::ostream& err);

 private:
  CLI::App* push_ = nullptr;
  std::string store_ = "arcprof.db";
  PushFlags flags_;
  double max_time_s_ = 60;
};

}  // namespace arcprof::push
