// The arcprof command line: registers every subcommand (each in its own
// cli/*_cli.* file), parses, and runs the one selected.
#include <CLI/CLI.hpp>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <iostream>
#include <optional>
#include <string>

#include "cli/continuous_cli.h"
#include "cli/error_stream.h"
#include "cli/exit_codes.h"
#include "cli/java_cli.h"
#include "cli/merge_cli.h"
#include "cli/trace_cli.h"
#include "cli/push_cli.h"
#include "cli/record_cli.h"
#include "cli/report_cli.h"
#include "cli/store_cli.h"

#ifndef ARCPROF_VERSION
#define ARCPROF_VERSION "0.0.0"
#endif

namespace {

std::string JoinArgs(int argc, char** argv) {
  std::string s;
  for (int i = 0; i < argc; ++i) {
    if (i) s += ' ';
    s += argv[i];
  }
  return s;
}

// The first word that is not an option, when it names no subcommand of `app`
// (`arcprof trace`): every option before it is a flag, so it is the command.
std::optional<std::string> UnknownCommand(CLI::App& app, int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--") return std::nullopt;
    if (!arg.empty() && arg[0] == '-') continue;
    for (const CLI::App* command : app.get_subcommands({})) {
      if (command->check_name(arg)) return std::nullopt;
    }
    return arg;
  }
  return std::nullopt;
}

std::string CommandNames(CLI::App& app) {
  std::string names;
  for (const CLI::App* command : app.get_subcommands({})) {
    if (!names.empty()) names += ", ";
    names += command->get_name();
  }
  return names;
}

}  // namespace

int main(int argc, char** argv) {
  // Every error and warning goes through the escaping stream and logger (cli/error_stream.h).
  arcprof::cli::SafeErrorStream err(std::cerr);
  using arcprof::cli::ErrorLine;
  CLI::App app{"arcprof: system-wide CPU profiler (eBPF sampling, tprof and arcflow reports)",
               "arcprof"};
  app.set_version_flag("--version", ARCPROF_VERSION);
  app.require_subcommand(1);
  bool verbose = false;
  app.add_flag("-v,--verbose", verbose, "Log what arcprof is doing");

  // In the order `arcprof --help` lists them.
  arcprof::cli::RecordCommand record(app);
  arcprof::cli::ContinuousCommand continuous(app);
  arcprof::cli::StoreCommands store(app);
  arcprof::cli::ReportCommands reports(app);  // report, export, diff
  arcprof::cli::JavaCommands java(app);
  arcprof::push::PushCommands push(app);
  arcprof::cli::MergeCommand merge(app);
  arcprof::cli::TraceCommand trace(app);

  if (auto unknown = UnknownCommand(app, argc, argv)) {
    err << ErrorLine("", "unknown command '" + *unknown + "'; commands: " + CommandNames(app) +
                             " (see arcprof --help)");
    return arcprof::cli::kExitUnknownCommand;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    // Usage errors: one line, exit code 1 (CLI11's own codes vary).
    std::string what = e.what();
    std::replace(what.begin(), what.end(), '\n', ' ');
    err << ErrorLine("", what + " (see arcprof --help)");
    return arcprof::cli::kExitFailure;
  }
  arcprof::cli::InstallEscapingLogger();
  spdlog::set_level(verbose ? spdlog::level::debug : spdlog::level::warn);
  spdlog::set_pattern("arcprof: %v");

  const std::string command_line = JoinArgs(argc, argv);
  if (auto code = record.RunIfSelected(command_line, err)) return *code;
  if (auto code = continuous.RunIfSelected(command_line, err)) return *code;
  if (auto code = store.RunIfSelected(std::cout, err)) return *code;
  if (auto code = reports.RunIfSelected(std::cout, err)) return *code;
  if (auto code = java.RunIfSelected(std::cout, err)) return *code;
  if (auto code = push.RunIfSelected(std::cout, err)) return *code;
  if (auto code = merge.RunIfSelected(command_line, err)) return *code;
  if (auto code = trace.RunIfSelected(command_line, err)) return *code;
  return arcprof::cli::kExitFailure;
}
