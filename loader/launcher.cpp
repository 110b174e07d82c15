#include "loader/launcher.h"

#include <dirent.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <optional>
#include <sstream>

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

// How long the tree may take to die after SIGKILL (processes in
// uninterruptible sleep) before its cgroup is left behind.
constexpr int kEmptyWaitMs = 5000;

void SleepMs(long ms) {
  timespec ts{ms / 1000, (ms % 1000) * 1000000};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

// "populated 1" in cgroup.events: some process is still in the cgroup (or a
// descendant cgroup). Async-signal-safe (the guardian calls it after fork).
bool Populated(int events_fd) {
  char buf[256];
  const ssize_t n = pread(events_fd, buf, sizeof(buf) - 1, 0);
  if (n <= 0) return false;
  buf[n] = '\0';
  const char* p = strstr(buf, "populated ");
  return p != nullptr && p[10] == '1';
}

// Kills every process of the cgroup and waits (bounded) until it is empty.
// Async-signal-safe.
void KillCgroup(int kill_fd, int events_fd) {
  (void)!write(kill_fd, "1", 1);
  for (int waited = 0; waited < kEmptyWaitMs && Populated(events_fd); waited += 5) SleepMs(5);
}

// The cgroup v2 directory for a command of this process: a new child of
// arcprof's own cgroup ("0::PATH" in /proc/self/cgroup), under the cgroup2
// mount found in /proc/self/mountinfo (/sys/fs/cgroup on a pure v2 machine,
// /sys/fs/cgroup/unified on a hybrid one). "" when there is none.
std::string CommandCgroupDir() {
  std::string mount_point, mount_root;
  {
    std::ifstream in("/proc/self/mountinfo");
    std::string line;
    while (std::getline(in, line)) {
      const size_t dash = line.find(" - ");
      if (dash == std::string::npos) continue;
      std::istringstream after(line.substr(dash + 3));
      std::string fstype;
      after >> fstype;
      if (fstype != "cgroup2") continue;
      std::istringstream before(line.substr(0, dash));
      std::string id, parent, device, root, point;
      before >> id >> parent >> device >> root >> point;
      // Octal escapes (a space in the path): not worth decoding, skip.
      if (point.empty() || point.find('\\') != std::string::npos || root.find('\\') != std::string::npos) continue;
      mount_point = point;
      mount_root = root;
      break;
    }
  }
  if (mount_point.empty()) return "";
  std::string own;
  {
    std::ifstream in("/proc/self/cgroup");
    std::string line;
    while (std::getline(in, line)) {
      if (line.rfind("0::", 0) == 0) own = line.substr(3);
    }
  }
  if (own.empty() || own[0] != '/' || own.find(" (deleted)") != std::string::npos) return "";
  if (mount_root != "/") {
    if (own.compare(0, mount_root.size(), mount_root) != 0) return "";
    own = own.substr(mount_root.size());
    if (own.empty()) own = "/";
  }
  static std::atomic<unsigned> launches{0};
  return mount_point + (own == "/" ? "" : own) + "/arcprof-" + std::to_string(getpid()) + "-" +
         std::to_string(launches.fetch_add(1));
}

// Closes every descriptor from 3 on except `keep` (sorted, all >= 3).
void CloseAllBut(const int (&keep)[3]) {
  unsigned from = 3;
  for (int fd : keep) {
    if (static_cast<unsigned>(fd) > from) syscall(SYS_close_range, from, static_cast<unsigned>(fd) - 1, 0);
    from = static_cast<unsigned>(fd) + 1;
  }
  syscall(SYS_close_range, from, ~0u, 0);
}

// The guardian, in the forked child: outlives arcprof by as long as it takes
// to kill the command's cgroup. Only async-signal-safe calls (arcprof may have
// threads).
[[noreturn]] void Guardian(int watch_fd, int kill_fd, int events_fd, int null_fd, const char* dir) {
  // Its own session: a terminal's Ctrl-C (meant for arcprof and the command)
  // and a kill of arcprof's process group do not reach it.
  setsid();
  struct sigaction ignore {};
  ignore.sa_handler = SIG_IGN;
  for (int sig : {SIGINT, SIGTERM, SIGQUIT, SIGHUP, SIGUSR1, SIGUSR2, SIGALRM, SIGPIPE, SIGTSTP, SIGTTIN, SIGTTOU}) {
    sigaction(sig, &ignore, nullptr);
  }
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  // Nothing of arcprof's stays open in it (BPF programs, perf events, a pipe
  // someone reads to its end): three descriptors above stdio, /dev/null below.
  int keep[3] = {fcntl(watch_fd, F_DUPFD, 3), fcntl(kill_fd, F_DUPFD, 3), fcntl(events_fd, F_DUPFD, 3)};
  const int null_copy = fcntl(null_fd, F_DUPFD, 3);
  for (int std_fd = 0; std_fd < 3; ++std_fd) dup2(null_copy, std_fd);
  const int watch = keep[0], kill_cg = keep[1], events = keep[2];
  std::sort(std::begin(keep), std::end(keep));
  CloseAllBut(keep);
  char c;
  for (;;) {
    const ssize_t n = read(watch, &c, 1);
    if (n == 0 || (n < 0 && errno != EINTR)) break;  // arcprof's end closed: it ended
  }
  KillCgroup(kill_cg, events);
  rmdir(dir);
  _exit(0);
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

  LaunchedCommand cmd;
  // The command's cgroup, made before the fork (nothing may run outside it).
  std::string cgroup = CommandCgroupDir();
  ScopedFd cgroup_procs;
  if (!cgroup.empty()) {
    if (mkdir(cgroup.c_str(), 0755) == 0) {
      cmd.cgroup_kill_.reset(open((cgroup + "/cgroup.kill").c_str(), O_WRONLY | O_CLOEXEC));
      cmd.cgroup_events_.reset(open((cgroup + "/cgroup.events").c_str(), O_RDONLY | O_CLOEXEC));
      cgroup_procs.reset(open((cgroup + "/cgroup.procs").c_str(), O_WRONLY | O_CLOEXEC));
      if (cmd.cgroup_kill_.valid() && cmd.cgroup_events_.valid() && cgroup_procs.valid()) {
        cmd.cgroup_ = cgroup;
      } else {  // a kernel before 5.14 has no cgroup.kill
        cmd.cgroup_kill_.reset();
        cmd.cgroup_events_.reset();
        rmdir(cgroup.c_str());
      }
    }
  }

  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid < 0) {
    if (!cmd.cgroup_.empty()) rmdir(cmd.cgroup_.c_str());
    return MakeError(std::string("fork: ") + strerror(errno));
  }
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
  cmd.pid_ = pid;
  cmd.gate_.reset(gate[1]);
  cmd.error_.reset(err[0]);
  cmd.argv0_ = argv[0];

  // Into the cgroup while it waits at the gate, before it can fork.
  if (!cmd.cgroup_.empty()) {
    const std::string text = std::to_string(pid);
    if (write(cgroup_procs.get(), text.data(), text.size()) != static_cast<ssize_t>(text.size())) {
      cmd.cgroup_kill_.reset();
      cmd.cgroup_events_.reset();
      rmdir(cmd.cgroup_.c_str());
      cmd.cgroup_.clear();
    }
  }
  cgroup_procs.reset();

  if (!cmd.cgroup_.empty()) {
    int watch[2];
    ScopedFd null_fd(open("/dev/null", O_RDWR | O_CLOEXEC));
    if (null_fd.valid() && pipe2(watch, O_CLOEXEC) == 0) {
      const pid_t guardian = fork();
      if (guardian == 0) {
        Guardian(watch[0], cmd.cgroup_kill_.get(), cmd.cgroup_events_.get(), null_fd.get(), cmd.cgroup_.c_str());
      }
      close(watch[0]);
      if (guardian > 0) {
        cmd.guardian_ = guardian;
        cmd.guardian_pipe_.reset(watch[1]);
      } else {
        close(watch[1]);
      }
    }
  } else {
    // No cgroup: orphans of the command's tree are re-parented to arcprof,
    // where Kill() finds them (an arcprof killed by SIGKILL cannot).
    prctl(PR_SET_CHILD_SUBREAPER, 1);
  }
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
    tree_killed_ = other.tree_killed_;
    status_ = other.status_;
    argv0_ = std::move(other.argv0_);
    cgroup_ = std::exchange(other.cgroup_, std::string());
    cgroup_kill_ = std::move(other.cgroup_kill_);
    cgroup_events_ = std::move(other.cgroup_events_);
    guardian_ = std::exchange(other.guardian_, -1);
    guardian_pipe_ = std::move(other.guardian_pipe_);
  }
  return *this;
}

LaunchedCommand::~LaunchedCommand() {
  if (pid_ <= 0) return;  // moved from
  if (!started_) {
    Abort();
  } else {
    Kill();
  }
  StopGuardian();
}

void LaunchedCommand::Signal(int sig) {
  if (pid_ > 0 && !reaped_) kill(pid_, sig);
}

void LaunchedCommand::ReapOrphans() {
  // Only without a cgroup is arcprof the subreaper: then its children are the
  // command and the orphans of its tree (arcprof forks nothing else).
  if (!cgroup_.empty()) return;
  for (int i = 0; i < 4096; ++i) {
    int status = 0;
    const pid_t r = waitpid(-1, &status, WNOHANG);
    if (r <= 0) break;
    if (r == pid_ && !reaped_) {
      status_ = status;
      reaped_ = true;
    }
  }
}

void LaunchedCommand::KillTree() {
  if (!cgroup_.empty()) {
    KillCgroup(cgroup_kill_.get(), cgroup_events_.get());
    if (!reaped_) {
      kill(pid_, SIGKILL);  // a root command may have moved itself out
      while (waitpid(pid_, &status_, 0) < 0 && errno == EINTR) {
      }
      reaped_ = true;
    }
    if (!Populated(cgroup_events_.get())) rmdir(cgroup_.c_str());
    return;
  }
  if (!reaped_) {
    kill(pid_, SIGKILL);
    while (waitpid(pid_, &status_, 0) < 0 && errno == EINTR) {
    }
    reaped_ = true;
  }
  // The sweep: every descendant left (re-parented to arcprof, the subreaper)
  // gets SIGKILL, with its own descendants, until none is left.
  for (int round = 0; round < 200; ++round) {
    std::vector<pid_t> found;
    std::vector<pid_t> parents = {getpid()};
    for (size_t i = 0; i < parents.size() && found.size() < 65536; ++i) {
      const std::string tasks = "/proc/" + std::to_string(parents[i]) + "/task";
      DIR* d = opendir(tasks.c_str());
      if (!d) continue;
      while (dirent* e = readdir(d)) {
        if (e->d_name[0] == '.') continue;
        std::ifstream in(tasks + "/" + e->d_name + "/children");
        pid_t child;
        while (in >> child) {
          found.push_back(child);
          parents.push_back(child);
        }
      }
      closedir(d);
    }
    if (found.empty()) break;
    for (pid_t p : found) kill(p, SIGKILL);
    ReapOrphans();
    SleepMs(1);
  }
}

void LaunchedCommand::Kill() {
  if (pid_ <= 0 || tree_killed_) return;
  KillTree();
  ReapOrphans();
  tree_killed_ = true;
}

void LaunchedCommand::StopGuardian() {
  guardian_pipe_.reset();  // the guardian wakes, finds the cgroup gone, exits
  if (guardian_ > 0) {
    while (waitpid(guardian_, nullptr, 0) < 0 && errno == EINTR) {
    }
    guardian_ = -1;
  }
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
  if (!reaped_) {
    int status = 0;
    const pid_t r = waitpid(pid_, &status, WNOHANG);
    if (r == pid_ || (r < 0 && errno == ECHILD)) {
      status_ = status;
      reaped_ = true;
    }
  }
  ReapOrphans();
  return reaped_;
}

void LaunchedCommand::Abort() {
  if (pid_ <= 0 || tree_killed_) return;
  gate_.reset();  // the child sees EOF at the gate and exits without running
  Kill();
}

}  // namespace arcprof
