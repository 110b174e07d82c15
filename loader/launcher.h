// Starts the profiled command stopped at a gate, so that its pid can be added
// to the BPF filter before it runs a single instruction of its own.
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
  static Result<LaunchedCommand> Fork(const std::vector<std::string>& argv);
  LaunchedCommand(LaunchedCommand&& other) noexcept { *this = std::move(other); }
  LaunchedCommand& operator=(LaunchedCommand&& other) noexcept;
  ~LaunchedCommand();

  pid_t pid() const { return pid_; }
  // Opens the gate; the child execs. Fails when exec failed (no such file ...).
  Result<void> Start();
  // Non-blocking: true once the child has exited (exit status kept).
  bool Exited();
  int exit_status() const { return status_; }
  // Kills a child that never started (used when setup fails).
  void Abort();
  // Sends `sig` to a running child.
  void Signal(int sig);
  // Kills (SIGKILL) and reaps a running child. The destructor does this too:
  // the command never outlives arcprof.
  void Kill();

 private:
  LaunchedCommand() = default;
  pid_t pid_ = -1;
  ScopedFd gate_;   // write end: closing it releases the child
  ScopedFd error_;  // read end: exec errors come back here (CLOEXEC)
  bool started_ = false;
  bool reaped_ = false;
  int status_ = 0;
  std::string argv0_;
};

}  // namespace arcprof
