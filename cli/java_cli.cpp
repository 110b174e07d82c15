#include "cli/java_cli.h"
#include "cli/error_stream.h"

#include <sys/stat.h>

#include <spdlog/fmt/fmt.h>

#include "runtimes/java/java_attach.h"
#include "symbolize/jit_process_source.h"
#include "symbolize/jitdump_format.h"
#include "symbolize/symbolizer.h"

namespace arcprof::cli {

JavaCommands::JavaCommands(CLI::App& app) {
  java_ = app.add_subcommand("java", "Load arcprof's JVMTI agent into a running JVM, or show its state");
  java_->require_subcommand(1);
  attach_ = java_->add_subcommand("attach", "Load the agent into a running HotSpot JVM (HotSpot attach protocol)");
  attach_->add_option("pid", attach_pid_, "The JVM's process id")->required();
  attach_->add_option("--agent", agent_path_, "Absolute path of libarcprof_jvmti.so (default: next to arcprof)");
  attach_->add_option("--options", agent_options_, "Agent options, e.g. perfmap,sig (docs/java.md)");
  attach_->add_option("--timeout", timeout_s_, "Seconds to wait for the JVM")->check(CLI::PositiveNumber);
  status_ = java_->add_subcommand("status", "Show whether a JVM has the agent and what it wrote");
  status_->add_option("pid", status_pid_, "The JVM's process id")->required();
}

std::optional<int> JavaCommands::RunIfSelected(std::ostream& out, std::ostream& err) {
  if (!java_->parsed()) return std::nullopt;
  if (attach_->parsed()) {
    JavaAttachOptions options;
    options.agent_path = agent_path_;
    options.agent_options = agent_options_;
    options.timeout_s = timeout_s_;
    auto result = AttachAgent(attach_pid_, options);
    auto jvm = InspectJvm(attach_pid_);
    if (!result.ok()) {
      // Another arcprof's agent build got there first: it refuses to start a
      // second time in one JVM, and its files are the ones to read.
      if (jvm.ok() && jvm->agent_loaded) {
        out << fmt::format("arcprof: JVM {} already has arcprof's agent (loaded by another arcprof); it writes "
                           "/tmp/jit-{}.dump in the JVM's file system\n",
                           attach_pid_, jvm->ns_pid);
        return 0;
      }
      err << ErrorLine("", result.error().message);
      return 1;
    }
    out << fmt::format("arcprof: agent loaded into JVM {}; it writes /tmp/jit-{}.dump in the JVM's file system\n",
                       attach_pid_, jvm.ok() ? jvm->ns_pid : attach_pid_);
    return 0;
  }
  auto jvm = InspectJvm(status_pid_);
  if (!jvm.ok()) {
    err << ErrorLine("", jvm.error().message);
    return 1;
  }
  out << fmt::format("pid {} (pid {} in its namespace), uid {}: {}\n", jvm->pid, jvm->ns_pid, jvm->uid,
                     jvm->hotspot ? "HotSpot JVM" : "JVM (not HotSpot: attach is not supported)");
  struct stat st {};
  const bool socket =
      lstat(fmt::format("/proc/{}/root/tmp/.java_pid{}", jvm->pid, jvm->ns_pid).c_str(), &st) == 0 && S_ISSOCK(st.st_mode);
  const bool socket_ours = socket && st.st_uid == jvm->uid;
  out << fmt::format("attach listener: {}; SIGQUIT handled: {}\n",
                     !socket ? "not started"
                             : socket_ours ? "running"
                                           : fmt::format("not started (its socket name is taken by uid {})", st.st_uid),
                     jvm->catches_sigquit ? "yes" : "no");
  out << fmt::format("agent: {}\n", jvm->agent_loaded ? "loaded" : "not loaded");
  ProcessInfo info;
  info.pid = jvm->pid;
  info.ns_pid = jvm->ns_pid;
  info.uid = jvm->uid;
  JitProcessSource source(info);
  source.Poll(JitMonotonicNowNs());
  for (const std::string& w : source.TakeWarnings()) out << "warning: " << w << "\n";
  const JitSourceStats& s = source.stats();
  if (source.has_jitdump()) {
    out << fmt::format("jitdump: {} code loads, {} unloads, {} inline records, {} thread names\n", s.code_loads,
                       s.unloads, s.inline_records, source.thread_names().size());
  } else if (source.has_perf_map()) {
    out << fmt::format("perf map: {} entries\n", s.perf_map_entries);
  } else {
    out << "jitdump: none (attach the agent: arcprof java attach " << jvm->pid << ")\n";
  }
  if (auto flags = source.vm_flags()) {
    out << fmt::format("vm: {}; -XX:+PreserveFramePointer: {}; agent loaded {}\n", source.vm_name(),
                       (*flags & jitdump::kVmPreserveFramePointer) ? "on" : (s.frames > 0 ? "off (compiled frames stepped by their frame size)" : "off (Java stacks end at the first JIT frame)"),
                       (*flags & jitdump::kVmAttachedLate) ? "at runtime" : "at start");
  }
  return 0;
}

}  // namespace arcprof::cli
