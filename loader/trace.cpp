#include "loader/trace.h"

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <unistd.h>

#include "common/text.h"
#include "loader/java_trace.h"
#include "loader/record.h"

namespace arcprof {
namespace {

// The real uid of process `pid` (Uid: line of its status), or -1.
long ProcessUid(uint32_t pid) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  for (int i = 0; i < 64 && std::getline(status, line); ++i) {
    if (line.rfind("Uid:", 0) == 0) return std::strtol(line.c_str() + 4, nullptr, 10);
  }
  return -1;
}

// Who asked: the user sudo ran us for, else our real uid.
long InvokingUid() {
  if (geteuid() == 0) {
    if (const char* sudo = getenv("SUDO_UID"); sudo && *sudo) {
      char* end = nullptr;
      const long uid = std::strtol(sudo, &end, 10);
      if (end && *end == 0 && uid >= 0) return uid;
    }
  }
  return static_cast<long>(getuid());
}

}  // namespace

Result<int> RunTrace(const RecordOptions& options) {
  if (options.pids.size() + (options.command.empty() ? 0 : 1) != 1) {
    return MakeError("trace: give one process (-p PID) or a command (-- CMD ARGS)");
  }
  if (!options.pids.empty()) {
    const uint32_t pid = options.pids[0];
    const long owner = ProcessUid(pid);
    if (owner < 0) return MakeError("trace: no such process: " + std::to_string(pid));
    const long me = InvokingUid();
    if (me != 0 && owner != me) {
      return MakeError("trace: process " + std::to_string(pid) + " belongs to uid " + std::to_string(owner) +
                       ", not to you (uid " + std::to_string(me) + "): only your own processes are traced");
    }
  }
  RecordOptions run = options;
  run.trace.java = IsJavaTrace(options.trace.root, options.pids.empty() ? 0 : options.pids[0], options.command);
  // A JVM's sampled context is named by the agent's JIT records.
  if (run.trace.java) run.java = true;
  auto code = RunRecord(run);
  if (!code) return code.error();
  if (options.trace.outcome->process_exited) {
    return MakeError("trace: process " + std::to_string(options.trace.outcome->exited_pid) +
                     " exited while traced; the trace up to its exit is in " + options.output);
  }
  return *code;
}

}  // namespace arcprof
