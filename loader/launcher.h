// Starts the profiled command stopped at a gate, so that its pid can be added
// to the BPF filter before it runs a single instruction of its own, and makes
// sure that nothing the command starts outlives arcprof (docs/usage.md,
// "The command's process tree").
#pragma once

#include <sys/types.h>

#include <string>
#include <utility>
#include <vector>

#include "common/result.h"
#include "common/scoped_fd.h"

namespace arcprof {

class LaunchedCommand {
 public:
  // Forks a child that waits at the gate. Under sudo the command runs as the
  // invoking user (SUDO_UID/SUDO_GID), not as root. The child gets SIGKILL
  // when arcprof dies, even by SIGKILL (PR_SET_PDEATHSIG, kept across exec).
  //
  // Its whole process tree, daemons that setsid() included, goes with arcprof:
  // - the child is placed in a cgroup v2 of its own (created under arcprof's
  //   cgroup, removed at the end), which Kill() empties with cgroup.kill;
  // - a guardian process (forked here, in a session of its own, ignoring stop
  //   signals, holding no descriptor of arcprof's but a pipe) waits for
  //   arcprof's end of that pipe to close, which happens however arcprof ends,
  //   SIGKILL included, and then kills the cgroup and removes it;
  // - without a cgroup (no cgroup v2, no permission to create one) arcprof is
  //   the child subreaper of the tree, so orphans are re-parented to it, and
  //   Kill() sweeps every descendant; only a SIGKILL of arcprof then leaves
  //   the command's descendants (not the command) running.
  static Result<LaunchedCommand> Fork(const std::vector<std::string>& argv);
  LaunchedCommand(LaunchedCommand&& other) noexcept { *this = std::move(other); }
  LaunchedCommand& operator=(LaunchedCommand&& other) noexcept;
  ~LaunchedCommand();

  pid_t pid() const { return pid_; }
  // The command's cgroup directory ("" without one).
  const std::string& cgroup() const { return cgroup_; }
  // Opens the gate; the child execs. Fails when exec failed (no such file ...).
  Result<void> Start();
  // Non-blocking: true once the child has exited (exit status kept). Also
  // reaps orphans of the tree re-parented to arcprof.
  bool Exited();
  int exit_status() const { return status_; }
  // Kills a child that never started (used when setup fails).
  void Abort();
  // Sends `sig` to a running child.
  void Signal(int sig);
  // Kills (SIGKILL) the child and every process it started, and reaps the
  // child. The destructor does this too, also when the child itself has
  // exited: nothing the command started outlives arcprof.
  void Kill();

 private:
  LaunchedCommand() = default;
  void KillTree();
  void ReapOrphans();
  void StopGuardian();

  pid_t pid_ = -1;
  ScopedFd gate_;   // write end: closing it releases the child
  ScopedFd error_;  // read end: exec errors come back here (CLOEXEC)
  bool started_ = false;
  bool reaped_ = false;
  bool tree_killed_ = false;
  int status_ = 0;
  std::string argv0_;
  std::string cgroup_;       // the command's cgroup directory, "" without one
  ScopedFd cgroup_kill_;     // its cgroup.kill
  ScopedFd cgroup_events_;   // its cgroup.events ("populated 0|1")
  pid_t guardian_ = -1;
  ScopedFd guardian_pipe_;   // write end; the guardian acts when it closes
};

}  // namespace arcprof
