// Loading our JVMTI agent into a running HotSpot JVM through its attach
// protocol, in C++ (no JDK tools needed): the `.attach_pid<nspid>` trigger
// file, SIGQUIT, then the `.java_pid<nspid>` UNIX socket in the target's
// /tmp, reached through /proc/PID/root (container-safe). The exchange runs on
// a helper thread that takes the target's uid/gid (per-thread credentials),
// so the JVM sees its own user, and everything is bounded by a timeout.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace arcprof {

struct JvmProcess {
  uint32_t pid = 0;
  uint32_t ns_pid = 0;  // pid inside its namespace: names its /tmp files
  uint32_t uid = 0, gid = 0;  // effective ids of the JVM
  bool hotspot = false;       // libjvm.so mapped
  bool other_jvm = false;     // an OpenJ9 (libj9vm) or other non-HotSpot JVM
  bool agent_loaded = false;  // libarcprof_jvmti.so mapped
  bool catches_sigquit = false;  // its signal handlers are installed (safe to signal)
  std::string version;  // java.vm.version from the side file, "" when unknown
};

// What /proc says about pid as a JVM; an error when it is not one or is gone.
Result<JvmProcess> InspectJvm(uint32_t pid, const std::string& proc_root = "/proc");

// What a process's executable mappings say about it as a JVM.
struct JvmMappings {
  bool hotspot = false;       // libjvm.so
  bool other_jvm = false;     // libj9vm*
  bool agent_loaded = false;  // libarcprof_jvmti.so
};
// Notes one executable mapping's path (as the kernel names it).
void NoteJvmMapping(std::string_view path, JvmMappings* maps);
// InspectJvm with the mappings known already (the side band's address
// spaces): /proc/PID/status is the only file read, and nothing is read for
// a process that maps no JVM.
Result<JvmProcess> InspectJvmWith(uint32_t pid, const JvmMappings& maps, const std::string& proc_root = "/proc");

// Whether pid has a SIGQUIT handler yet, from its status alone (a HotSpot JVM
// installs it late in its start-up; its maps need not be read again to
// know); nullopt when the process is gone.
std::optional<bool> CatchesSigquit(uint32_t pid, const std::string& proc_root = "/proc");

// Every running process with a JVM (HotSpot or not) mapped.
std::vector<uint32_t> FindJvmPids(const std::string& proc_root = "/proc");

// Every process id under proc_root.
std::vector<uint32_t> ListPids(const std::string& proc_root = "/proc");

struct JavaAttachOptions {
  std::string agent_path;      // absolute; "" = libarcprof_jvmti.so next to this binary
  std::string agent_options;   // passed to Agent_OnAttach (e.g. "perfmap")
  double timeout_s = 10;       // for the socket to appear and for the answer
  std::string proc_root = "/proc";
  // The caller's InspectJvm of pid, just read: not read again (a JVM's maps
  // are hundreds of lines; a daemon under JVM churn read them three times
  // per JVM).
  std::optional<JvmProcess> inspected;
};

// Where the agent is installed: next to the running arcprof binary.
std::string DefaultAgentPath();

// Loads the agent into the JVM. Returns the JVM's answer (e.g. "return code:
// 0") on success; a one-line reason otherwise (not HotSpot, attach disabled,
// dynamic agent loading disabled, timeout).
Result<std::string> AttachAgent(uint32_t pid, const JavaAttachOptions& options);

// The most of a JVM's attach answer that is read; the answer to `load` is a
// few bytes ("0\nreturn code: 0\n").
inline constexpr size_t kMaxAttachReply = 4096;

// Outside text (an attach answer) made safe for one terminal line: control
// characters, backslashes and non-ASCII bytes as \xNN, newlines as spaces,
// cut at max_chars with "...".
std::string SanitizeAttachText(std::string_view text, size_t max_chars = 200);

// The agent file may be loaded into a JVM (which runs it with the JVM's
// rights): the file and every folder above it (symlinks resolved) owned by
// root and not writable by group or others (a sticky folder such as /tmp is
// fine). A one-line reason otherwise.
Result<void> CheckAgentFile(const std::string& path);

// The agent's answer when the JVM was still starting (Agent_OnAttach
// returned JNI_EDETACHED): the error message of AttachAgent contains this,
// and trying again a moment later works.
inline constexpr std::string_view kJvmNotLiveYet = "the JVM is still starting";

}  // namespace arcprof
