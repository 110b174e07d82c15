#include "loader/launcher.h"

#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace arcprof {
namespace {

// Drops root for the child when arcprof runs under sudo. Returns errno or 0.
int DropToInvokingUser() {
  const char* uid_s = getenv("SUDO_UID");
  const char* gid_s = getenv("SUDO_GID");
  if (getuid() != 0 || !uid_s || !gid_s) return 0;
  const uid_t uid = static_cast<uid_t>(strtoul(uid_s, nullptr, 10));
  const gid_t gid = static_cast<gid_t>(strtoul(gid_s, nullptr, 10));
  if (uid == 0) return 0;
  const char* user = getenv("SUDO_USER");
  if (user && initgroups(user, gid) != 0) return errno;
  if (!user && setgroups(0, nullptr) != 0) return errno;
  if (setgid(gid) != 0) return errno;
  if (setuid(uid) != 0) return errno;
  return 0;
}

}  // namespace

Result<LaunchedCommand> LaunchedCommand::Fork(const std::vector<std::string>& argv) {
  if (argv.empty()) return MakeError("no command given after --");
  int gate[2], err[2];
  if (pipe2(gate, O_CLOEXEC) != 0 || pipe2(err, O_CLOEXEC) != 0) {
    return MakeError(std::string("pipe: ") + strerror(errno));
  }
  std::vector<char*> cargv;
  for (const std::string& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
  cargv.push_back(nullptr);

  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid < 0) return MakeError(std::string("fork: ") + strerror(errno));
  if (pid == 0) {
    close(gate[1]);
    close(err[0]);
    // The child must not outlive a crashed arcprof while parked at the gate.
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    char c;
    ssize_t n;
    do {
      n = read(gate[0], &c, 1);
    } while (n < 0 && errno == EINTR);
    if (n != 1) _exit(127);  // arcprof gave up: never run the command
    int e = DropToInvokingUser();
    // Changing credentials clears the death signal: set it again, then make
    // sure arcprof did not die before it took effect.
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(127);
    if (e == 0) {
      execvp(cargv[0], cargv.data());
      e = errno;
    }
    (void)!write(err[1], &e, sizeof(e));
    _exit(127);
  }
  close(gate[0]);
  close(err[1]);
  LaunchedCommand cmd;
  cmd.pid_ = pid;
  cmd.gate_.reset(gate[1]);
  cmd.error_.reset(err[0]);
  cmd.argv0_ = argv[0];
  return cmd;
}

LaunchedCommand& LaunchedCommand::operator=(LaunchedCommand&& other) noexcept {
  if (this != &other) {
    // The moved-from object must not kill the child in its destructor.
    pid_ = std::exchange(other.pid_, -1);
    gate_ = std::move(other.gate_);
    error_ = std::move(other.error_);
    started_ = other.started_;
    reaped_ = other.reaped_;
    status_ = other.status_;
    argv0_ = std::move(other.argv0_);
  }
  return *this;
}

LaunchedCommand::~LaunchedCommand() {
  if (pid_ <= 0 || reaped_) return;
  if (!started_) {
    Abort();
  } else {
    Kill();
  }
}

void LaunchedCommand::Signal(int sig) {
  if (pid_ > 0 && !reaped_) kill(pid_, sig);
}

void LaunchedCommand::Kill() {
  if (pid_ <= 0 || reaped_) return;
  kill(pid_, SIGKILL);
  while (waitpid(pid_, &status_, 0) < 0 && errno == EINTR) {
  }
  reaped_ = true;
}

Result<void> LaunchedCommand::Start() {
  const char go = 'g';
  if (write(gate_.get(), &go, 1) != 1) {
    return MakeError(std::string("cannot start the command: ") + strerror(errno));
  }
  gate_.reset();
  started_ = true;
  int child_errno = 0;
  ssize_t n;
  do {
    n = read(error_.get(), &child_errno, sizeof(child_errno));
  } while (n < 0 && errno == EINTR);
  error_.reset();
  if (n == sizeof(child_errno)) {
    waitpid(pid_, &status_, 0);
    reaped_ = true;
    return MakeError("cannot start '" + argv0_ + "': " + strerror(child_errno));
  }
  return {};
}

bool LaunchedCommand::Exited() {
  if (reaped_) return true;
  int status = 0;
  const pid_t r = waitpid(pid_, &status, WNOHANG);
  if (r == pid_ || (r < 0 && errno == ECHILD)) {
    status_ = status;
    reaped_ = true;
  }
  return reaped_;
}

void LaunchedCommand::Abort() {
  if (pid_ <= 0 || reaped_) return;
  gate_.reset();  // the child sees EOF at the gate and exits without running
  kill(pid_, SIGKILL);
  waitpid(pid_, &status_, 0);
  reaped_ = true;
}

}  // namespace arcprof
