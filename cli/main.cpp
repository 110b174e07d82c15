// The arcprof command line.
#include <CLI/CLI.hpp>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <memory>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <optional>

#include "loader/continuous.h"
#include "cli/error_stream.h"
#include "cli/exit_codes.h"
#include "cli/java_cli.h"
#include "loader/record.h"
#include "cli/push_cli.h"
#include "push/store_windows.h"
#include "cli/report_cli.h"
#include "store/capture_merge.h"
#include "store/capture_store.h"
#include "reports/store_info.h"
#include "store/window_store.h"

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

// -d: finite seconds from 0 to a year (nan, inf, negative and overflowing
// values are refused with the range, not a 309-digit maximum).
CLI::Validator DurationValidator() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        constexpr double kMax = 366.0 * 24 * 3600;
        char* end = nullptr;
        const double v = std::strtod(text.c_str(), &end);
        if (end == text.c_str() || *end != 0 || !std::isfinite(v) || v < 0 || v > kMax) {
          return "seconds from 0 to " + std::to_string(static_cast<long long>(kMax)) +
                 " (a year), not '" + text + "'";
        }
        return "";
      },
      "SECONDS");
}

// --call-graph fp|dwarf|hybrid, or dwarf,BYTES / hybrid,BYTES with 1 to 131072 bytes.
CLI::Validator CallGraphValidator() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        const auto comma = text.find(',');
        const std::string mode = text.substr(0, comma);
        if (mode != "fp" && mode != "dwarf" && mode != "hybrid") {
          return "fp, dwarf or hybrid (dwarf,BYTES and hybrid,BYTES as in perf), not '" + text + "'";
        }
        if (comma == std::string::npos) return "";
        const std::string size = text.substr(comma + 1);
        char* end = nullptr;
        const unsigned long long bytes = std::strtoull(size.c_str(), &end, 10);
        if (mode == "fp" || size.empty() || *end != 0 || bytes == 0 || bytes > 131072) {
          return "a stack size from 1 to 131072 bytes after 'dwarf,' or 'hybrid,', not '" + text + "'";
        }
        return "";
      },
      "MODE[,BYTES]");
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

  arcprof::RecordOptions rec;
  CLI::App* record = app.add_subcommand("record", "Sample CPUs and write a capture");
  record->add_option("-d,--duration", rec.duration_s,
                     "Seconds to record (default: until Ctrl-C or the command exits)")
      ->check(DurationValidator());
  record->add_option("-p,--pid", rec.pids, "Only these processes and their children (PID,...)")
      ->delimiter(',');
  record->add_option("-F,--freq", rec.frequency_hz, "Samples per second per CPU")
      ->capture_default_str()
      ->check(CLI::Range(1, 100000));
  record->add_option("-e,--event", rec.event,
                     "Sampling event: cpu-clock, task-clock, page-faults, context-switches, "
                     "cycles, instructions, ...")
      ->capture_default_str();
  record->add_option("-o,--output", rec.output, "Capture file")->capture_default_str();
  record->add_option("--buffer-mb", rec.buffer_mb,
                     "Sample ring buffer size in MiB (default: from -F, the CPUs and --stack-kb, 8 to 64)")
      ->check(CLI::Range(1, 2048));
  record->add_option("--call-graph", rec.call_graph,
                     "Stack unwinding: fp (frame pointers), dwarf (unwind tables over a stack "
                     "copy) or hybrid (unwind tables, frame pointers where there are none); "
                     "dwarf,BYTES or hybrid,BYTES also sets --stack-kb (as in perf)")
      ->capture_default_str()
      ->check(CallGraphValidator());
  record->add_option("--stack-kb", rec.stack_kb,
                     "User stack copied per sample for dwarf/hybrid unwinding, in KiB (default: 64, "
                     "and a deeper stack down to its base, up to 256)")
      ->check(CLI::Range(1, 256));
  record->add_option("--debuginfod-budget", rec.debuginfod_budget_s,
                     "With DEBUGINFOD_URLS set: seconds from the start for looking up stripped "
                     "modules' debug files in the background (0: no debuginfod)")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 3600.0));
  record->add_flag("-q,--quiet", rec.quiet, "Print only errors and warnings");
  // perf's habits: -a and -g describe what arcprof does anyway; -c samples by count.
  bool all_cpus = false, call_graphs = false;
  record->add_flag("-a,--all-cpus", all_cpus,
                   "Whole machine (what record does without -p or a command; as in perf)");
  record->add_flag("-g", call_graphs, "Record call graphs (always on; as in perf)");
  record->add_option("-c,--count", rec.sample_period,
                     "Sample every N events instead of -F (cpu-clock/task-clock: every N ns)")
      ->check(CLI::Range(uint64_t{1}, uint64_t{1} << 62));
  record->add_option("command", rec.command, "Command to launch and profile (after --)");

  record->add_flag_callback("--ptt", [&rec] { rec.ptt = true; },
                            "Per-thread time, interrupt and idle accounting (default: on for "
                            "whole-machine recordings)");
  record->add_flag_callback("--no-ptt", [&rec] { rec.ptt = false; }, "No per-thread time");
  record->add_option("--ptt-events", rec.ptt_events,
                     "Counters read at each context switch for PTT (at most 4; hardware ones "
                     "need a PMU)")
      ->capture_default_str();
  record->add_option("--ptt-interval", rec.ptt_interval_ms,
                     "Milliseconds per stored per-CPU accounting row")
      ->capture_default_str()
      ->check(CLI::Range(10, 60000));
  record->add_option("--ptt-max-threads", rec.ptt_max_threads,
                     "Threads the PTT thread map holds")
      ->capture_default_str()
      ->check(CLI::Range(1024, 4194304));
  record->get_option("--ptt")->excludes(record->get_option("--no-ptt"));
  record->add_flag_callback("--off-cpu", [&rec] { rec.off_cpu = true; },
                            "Off-CPU stacks and blocked time (default: on with -p or a command)");
  record->add_flag_callback("--no-off-cpu", [&rec] { rec.off_cpu = false; },
                            "No off-CPU stacks");
  record->add_option("--off-cpu-max-stacks", rec.off_cpu_max_keys,
                     "Distinct off-CPU (thread, blocking place) keys summed in BPF")
      ->capture_default_str()
      ->check(CLI::Range(1024, 4194304));
  record->get_option("--off-cpu")->excludes(record->get_option("--no-off-cpu"));
  record->add_flag_callback("--java", [&rec] { rec.java = true; },
                            "Load the JVMTI agent into running HotSpot JVMs (default; docs/java.md)");
  record->add_flag_callback("--no-java", [&rec] { rec.java = false; },
                            "Do not attach to JVMs (jitdumps and perf maps are still read)");
  record->get_option("--java")->excludes(record->get_option("--no-java"));

  // `continuous`: the sampling options of record, a store instead of -o.
  arcprof::ContinuousOptions cont;
  cont.record.frequency_hz = 49;
  cont.record.quiet = true;
  std::string window = "60s", retain = "7d", max_size = "2GB";
  CLI::App* continuous = app.add_subcommand(
      "continuous", "Whole-machine capture for days: one window per --window into a store");
  continuous->add_option("--store", cont.store_dir, "Store directory (created mode 0700)")->required();
  continuous->add_option("--window", window, "Window length (s, m, h)")->capture_default_str();
  continuous->add_option("--retain", retain, "Remove windows older than this (0: never)")
      ->capture_default_str();
  continuous->add_option("--max-size", max_size, "Remove the oldest windows above this size (0: no limit)")
      ->capture_default_str();
  continuous->add_option("--log", cont.log_path, "Append messages to FILE; SIGHUP reopens it");
  continuous->add_option("-p,--pid", cont.record.pids, "Only these processes and their children (PID,...)")
      ->delimiter(',');
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
  std::string window_max_size = "24MB", names_max_size = "16MB";
  continuous
      ->add_option("--names-max-size", names_max_size,
                   "Release the interned frame names at a window close past this size")
      ->group("");  // for tests: the default suits every machine
  continuous
      ->add_option("--window-max-size", window_max_size,
                   "Close a window early when its frames and call trees hold more than this (0: no limit)")
      ->capture_default_str();
  continuous->add_flag_callback("--no-ptt", [&cont] { cont.record.ptt = false; }, "No per-thread time");
  continuous->add_flag_callback("--no-java", [&cont] { cont.record.java = false; }, "Do not attach to JVMs");
  arcprof::push::PushFlags push_flags;
  arcprof::push::AddPushFlags(*continuous, push_flags, true);
  continuous->add_flag_callback("--verbose-java", [&cont] { cont.record.quiet = false; },
                                "Log every JVM attach");

  std::string store_dir, store_format = "text";
  CLI::App* store = app.add_subcommand("store", "Inspect a continuous store");
  store->require_subcommand(1);
  CLI::App* store_info = store->add_subcommand("info", "Windows, size, retention and unsent windows");
  store_info->add_option("--store", store_dir, "Store directory")->required();
  store_info->add_option("--format", store_format, "text or json")
      ->capture_default_str()
      ->check(CLI::IsMember({"text", "json"}));

  arcprof::cli::ReportCommands reports(app);
  arcprof::cli::JavaCommands java(app);
  arcprof::push::PushCommands push(app);

  std::vector<std::string> merge_inputs;
  std::string merge_output;
  bool merge_hosts = false;
  CLI::App* merge = app.add_subcommand(
      "merge", "Merge captures of several machines into one (host > process > thread > stack)");
  merge->add_option("inputs", merge_inputs, "Captures to merge")->required();
  merge->add_option("-o,--output", merge_output, "The merged capture")->required();
  merge->add_flag("--merge-hosts", merge_hosts, "Fold the hosts together (no host level)");

  // -p and a command are mutually exclusive; CLI11 cannot express "option vs
  // positional" on one subcommand via excludes(self), so check after parsing.
  record->get_option("--pid")->excludes(record->get_option("command"));
  record->get_option("--all-cpus")->excludes(record->get_option("--pid"));
  record->get_option("--all-cpus")->excludes(record->get_option("command"));
  record->get_option("--count")->excludes(record->get_option("--freq"));

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
    return 1;
  }
  arcprof::cli::InstallEscapingLogger();
  spdlog::set_level(verbose ? spdlog::level::debug : spdlog::level::warn);
  spdlog::set_pattern("arcprof: %v");

  if (record->parsed()) {
    rec.command_line = JoinArgs(argc, argv);
    // --call-graph dwarf,8192 (perf's form): the size is the stack copy.
    if (const auto comma = rec.call_graph.find(','); comma != std::string::npos) {
      const uint64_t bytes = std::stoull(rec.call_graph.substr(comma + 1));
      rec.stack_kb = static_cast<uint32_t>((bytes + 1023) / 1024);
      rec.call_graph.resize(comma);
    }
    auto result = arcprof::RunRecord(rec);
    if (!result) {
      err << ErrorLine("", result.error().message);
      return arcprof::cli::ExitCode(result.error());
    }
    return *result;
  }
  if (continuous->parsed()) {
    cont.record.command_line = JoinArgs(argc, argv);
    auto parse = [&err](const std::string& text, const char* option, auto parser) -> std::optional<uint64_t> {
      if (text == "0") return 0;
      auto v = parser(text);
      if (!v) err << ErrorLine("", std::string(option) + ": '" + text + "' is not valid (see arcprof continuous --help)");
      return v;
    };
    auto w = parse(window, "--window", arcprof::store::ParseDurationNs);
    auto r = parse(retain, "--retain", arcprof::store::ParseDurationNs);
    auto m = parse(max_size, "--max-size", arcprof::store::ParseSize);
    auto wm = parse(window_max_size, "--window-max-size", arcprof::store::ParseSize);
    auto nm = parse(names_max_size, "--names-max-size", arcprof::store::ParseSize);
    if (!w || !r || !m || !wm || !nm || *nm == 0) {
      if (nm && *nm == 0) err << ErrorLine("", "--names-max-size must be above 0");
      return 1;
    }
    cont.window_max_bytes = *wm;
    cont.record.names_budget_bytes = *nm;
    cont.window_ns = *w;
    cont.retain_ns = *r;
    cont.max_bytes = *m;
    // --push: a sender thread reads the store and marks windows sent.
    std::unique_ptr<arcprof::push::StoreWindows> push_source;
    std::unique_ptr<arcprof::push::Pusher> pusher;
    if (!push_flags.url.empty()) {
      auto push_options = push_flags.Resolve();
      if (!push_options) {
        err << ErrorLine("", push_options.error().message);
        return 1;
      }
      cont.on_start = [&, options = *push_options](const std::string& dir) -> arcprof::Result<void> {
        auto source = arcprof::push::StoreWindows::Open(dir);
        if (!source) return source.error();
        push_source = std::move(*source);
        pusher = std::make_unique<arcprof::push::Pusher>(options, *push_source);
        pusher->Start();
        return {};
      };
      cont.on_window_written = [&] {
        if (pusher) pusher->WindowClosed();
      };
      cont.on_stop = [&] {
        if (pusher) pusher->Stop(std::chrono::seconds(5));
      };
    }
    auto result = arcprof::RunContinuous(cont);
    if (!result) {
      err << ErrorLine("", result.error().message);
      return arcprof::cli::ExitCode(result.error());
    }
    return *result;
  }
  if (store_info->parsed()) {
    auto opened = arcprof::store::WindowStore::OpenForReading(store_dir);
    if (!opened) {
      err << ErrorLine("", opened.error().message);
      return arcprof::cli::ExitCode(opened.error());
    }
    return arcprof::reports::PrintStoreInfo(*opened, store_format, std::cout, err);
  }
  if (auto code = reports.RunIfSelected(std::cout, err)) return *code;
  if (auto code = java.RunIfSelected(std::cout, err)) return *code;
  if (auto code = push.RunIfSelected(std::cout, err)) return *code;
  if (merge->parsed()) {
    auto merged = arcprof::store::MergeCaptures(merge_inputs, merge_hosts);
    if (!merged) {
      err << ErrorLine("", merged.error().message);
      return arcprof::cli::ExitCode(merged.error());
    }
    for (const std::string& note : merged->notes) err << ErrorLine("", "note: " + note);
    merged->profile.meta.command_line = JoinArgs(argc, argv);
    if (auto r = arcprof::store::WriteCapture(merge_output, merged->profile); !r) {
      err << ErrorLine("", r.error().message);
      return arcprof::cli::ExitCode(r.error());
    }
    return 0;
  }
  return 1;
}
