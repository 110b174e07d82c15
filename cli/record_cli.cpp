#include "cli/record_cli.h"

#include <cmath>
#include <cstdlib>

#include "cli/error_stream.h"
#include "cli/exit_codes.h"
#include "model/value_types.h"

namespace arcprof::cli {

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

namespace {

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

void AddAllocFlags(CLI::App& command, RecordOptions& options) {
  command.add_flag("--alloc", options.alloc,
                   "Native allocations (libc malloc/free, C++ new/delete) sampled by bytes: " +
                       std::string(model::kAllocBytes.name) + ", " + std::string(model::kAllocCount.name) + ", " +
                       std::string(model::kInuseBytes.name) + ", " + std::string(model::kInuseCount.name) +
                       " (uprobes: costly on the whole machine)");
  command.add_option("--alloc-rate", options.alloc_rate, "--alloc: mean bytes between sampled allocations")
      ->capture_default_str()
      ->check(CLI::Range(uint64_t{1}, uint64_t{1} << 40));
  command.add_option("--alloc-max-blocks", options.alloc_max_blocks,
                     "--alloc: live sampled blocks tracked (past it, counted in alloc.blocks_untracked)")
      ->capture_default_str()
      ->check(CLI::Range(1024, 16777216));
}

void AddCgroupSelectionOptions(CLI::App* command, CgroupSelection& selection) {
  command->add_option("--container", selection.containers,
                      "Only these containers (ids or id prefixes, comma-separated), filtered in the kernel")
      ->delimiter(',');
  command->add_option("--cgroup", selection.cgroups,
                      "Only tasks in this cgroup v2 path or below it (repeatable), filtered in the kernel");
  command->add_option("--service", selection.services,
                      "Only these systemd services (NAME for NAME.service, comma-separated), filtered in the kernel")
      ->delimiter(',');
}

RecordCommand::RecordCommand(CLI::App& app) {
  RecordOptions& rec = options_;
  CLI::App* record = record_ = app.add_subcommand("record", "Sample CPUs and write a capture");
  record->add_option("-d,--duration", rec.duration_s,
                     "Seconds to record (default: until Ctrl-C or the command exits)")
      ->check(DurationValidator());
  record->add_option("-p,--pid", rec.pids, "Only these processes and their children (PID,...)")
      ->delimiter(',');
  AddCgroupSelectionOptions(record, rec.cgroups);
  record->add_option("-F,--freq", rec.frequency_hz, "Samples per second per CPU")
      ->capture_default_str()
      ->check(CLI::Range(1, 100000));
  record->add_option("-e,--event", rec.event,
                     "Sampling event: cpu-clock, task-clock, page-faults, context-switches, "
                     "cycles, instructions, ...")
      ->capture_default_str();
  record->add_option("-o,--output", rec.output, "Capture file")->capture_default_str();
  record->add_option("--buffer-mb", rec.buffer_mb,
                     "Sample ring buffer size in MiB (default: from -F, the CPUs and --stack-kb, 8 to 64; "
                     "with -p or a command it starts at 2 and grows to that while it fills)")
      ->check(CLI::Range(1, 2048));
  record->add_option("--max-thread-records", rec.max_thread_records,
                     "Thread records kept before the oldest exited threads are folded into "
                     "\"[exited threads]\" of their process or \"[exited processes]\" by name (0: never)")
      ->capture_default_str()
      ->check(CLI::Range(size_t{0}, size_t{1} << 30));
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
  record->add_flag("-a,--all-cpus", all_cpus_,
                   "Whole machine (what record does without -p or a command; as in perf)");
  record->add_flag("-g", call_graphs_, "Record call graphs (always on; as in perf)");
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
  AddAllocFlags(*record, rec);
  record->add_flag_callback("--java", [&rec] { rec.java = true; },
                            "Load the JVMTI agent into running HotSpot JVMs (default; docs/java.md)");
  record->add_flag_callback("--no-java", [&rec] { rec.java = false; },
                            "Do not attach to JVMs (jitdumps and perf maps are still read)");
  record->get_option("--java")->excludes(record->get_option("--no-java"));
  record->add_flag_callback("--no-runtimes", [&rec] { rec.runtimes = false; },
                            "Do not name Python and JavaScript frames (native frames only)");

  // -p and a command are mutually exclusive; CLI11 cannot express "option vs
  // positional" on one subcommand via excludes(self), so check after parsing.
  record->get_option("--pid")->excludes(record->get_option("command"));
  record->get_option("--all-cpus")->excludes(record->get_option("--pid"));
  record->get_option("--all-cpus")->excludes(record->get_option("command"));
  record->get_option("--count")->excludes(record->get_option("--freq"));
}

std::optional<int> RecordCommand::RunIfSelected(const std::string& command_line, std::ostream& err) {
  if (!record_->parsed()) return std::nullopt;
  RecordOptions& rec = options_;
  rec.command_line = command_line;
  // --call-graph dwarf,8192 (perf's form): the size is the stack copy.
  if (const auto comma = rec.call_graph.find(','); comma != std::string::npos) {
    const uint64_t bytes = std::stoull(rec.call_graph.substr(comma + 1));
    rec.stack_kb = static_cast<uint32_t>((bytes + 1023) / 1024);
    rec.call_graph.resize(comma);
  }
  auto result = RunRecord(rec);
  if (!result) {
    err << ErrorLine("", result.error().message);
    return ExitCode(result.error());
  }
  return *result;
}

}  // namespace arcprof::cli
