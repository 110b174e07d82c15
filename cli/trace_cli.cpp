#include "cli/trace_cli.h"

#include "cli/error_stream.h"
#include "cli/exit_codes.h"
#include "cli/record_cli.h"
#include "loader/trace.h"

namespace arcprof::cli {

TraceCommand::TraceCommand(CLI::App& app) {
  RecordOptions& rec = options_;
  rec.output = "arcprof-trace.db";
  trace_ = app.add_subcommand("trace", "Count every call of a function's call subgraph, with exact times");
  trace_->add_option("--root", rec.trace.root,
                     "The function whose calls and callees are counted (its symbol name, C++ names "
                     "with or without the parameter list; a Java method as package.Class.method)")
      ->required();
  trace_->add_option("-p,--pid", pid_, "The process to trace")->check(CLI::Range(1u, 4194304u));
  trace_->add_option("-d,--duration", rec.duration_s,
                     "Seconds to trace (default: until Ctrl-C or the command exits)")
      ->check(DurationValidator());
  trace_->add_option("-o,--output", rec.output, "Capture file")->capture_default_str();
  trace_->add_option("--discover", rec.trace.discover_s,
                     "-p: seconds of sampling before the probes go in, to find what the root calls "
                     "through pointers")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 60.0));
  trace_->add_flag("--no-calibration", no_calibration_,
                   "Keep the probes' own cost in the times (it is measured and taken out by default)");
  trace_->add_option("-F,--freq", rec.frequency_hz, "Samples per second (the sampled context)")
      ->capture_default_str()
      ->check(CLI::Range(1, 100000));
  trace_->add_flag("-q,--quiet", rec.quiet, "Print only errors and warnings");
  trace_->add_option("command", rec.command, "Command to launch and trace (after --)");
  trace_->get_option("--pid")->excludes(trace_->get_option("command"));
}

std::optional<int> TraceCommand::RunIfSelected(const std::string& command_line, std::ostream& err) {
  if (!trace_->parsed()) return std::nullopt;
  RecordOptions& rec = options_;
  rec.command_line = command_line;
  if (pid_ != 0) rec.pids = {pid_};
  rec.trace.calibrate = !no_calibration_;
  // The sampled context only: no off-CPU stacks, PTT or JVM attach.
  rec.off_cpu = false;
  rec.ptt = false;
  rec.java = false;
  auto result = RunTrace(rec);
  if (!result) {
    err << ErrorLine("", result.error().message);
    return kExitTraceError;
  }
  return *result;
}

}  // namespace arcprof::cli
