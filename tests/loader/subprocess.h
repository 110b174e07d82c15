// A child process for runtime tests: argv, stderr captured line by line, signals, wait.
#pragma once

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <vector>
#include "tests/layer_names.h"

namespace arcprof::testing {

class Subprocess {
 public:
  explicit Subprocess(const std::vector<std::string>& argv, bool capture_stderr = true) {
    int err[2] = {-1, -1};
    if (capture_stderr && pipe2(err, O_CLOEXEC) != 0) return;
    pid_ = fork();
    if (pid_ == 0) {
      if (capture_stderr) dup2(err[1], 2);
      std::vector<char*> a;
      for (const auto& s : argv) a.push_back(const_cast<char*>(s.c_str()));
      a.push_back(nullptr);
      execv(a[0], a.data());
      _exit(127);
    }
    if (capture_stderr) {
      close(err[1]);
      err_fd_ = err[0];
    }
  }
  ~Subprocess() {
    if (pid_ > 0 && !waited_) {
      kill(pid_, SIGKILL);
      Wait();
    }
    if (err_fd_ >= 0) close(err_fd_);
  }
  pid_t pid() const { return pid_; }

  // Reads stderr until a line contains `needle` or the timeout passes.
  bool WaitForStderr(const std::string& needle, double timeout_s) {
    return WaitForStderrMatch([&needle](const std::string& text) { return text.find(needle) != std::string::npos; },
                              timeout_s);
  }
  // Reads stderr until `done(everything read so far)` or the timeout passes.
  template <typename Pred>
  bool WaitForStderrMatch(Pred done, double timeout_s) {
    auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
    while (std::chrono::steady_clock::now() < deadline) {
      if (done(stderr_)) return true;
      pollfd p{err_fd_, POLLIN, 0};
      if (poll(&p, 1, 50) > 0) {
        char buf[4096];
        ssize_t n = read(err_fd_, buf, sizeof(buf));
        if (n <= 0) break;
        stderr_.append(buf, static_cast<size_t>(n));
      }
    }
    return done(stderr_);
  }
  void Signal(int sig) { kill(pid_, sig); }
  // Waits for exit, collecting the rest of stderr. Returns the exit code (or 128+signal).
  int Wait() {
    if (err_fd_ >= 0) {
      char buf[4096];
      ssize_t n;
      while ((n = read(err_fd_, buf, sizeof(buf))) > 0) stderr_.append(buf, static_cast<size_t>(n));
    }
    int status = 0;
    waitpid(pid_, &status, 0);
    waited_ = true;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }
  const std::string& stderr_text() const { return stderr_; }

 private:
  pid_t pid_ = -1;
  int err_fd_ = -1;
  bool waited_ = false;
  std::string stderr_;
};

// In a forked child: runs argv (argv[0] a path); exits 127 when it cannot.
[[noreturn]] inline void ExecArgv(const std::vector<std::string>& argv) {
  std::vector<char*> a;
  for (const auto& s : argv) a.push_back(const_cast<char*>(s.c_str()));
  a.push_back(nullptr);
  execv(a[0], a.data());
  _exit(127);
}

// Runs argv to completion; returns {exit code, stdout}.
inline std::pair<int, std::string> RunCapture(const std::vector<std::string>& argv) {
  int out[2];
  if (pipe2(out, O_CLOEXEC) != 0) return {-1, ""};
  pid_t pid = fork();
  if (pid == 0) {
    dup2(out[1], 1);
    ExecArgv(argv);
  }
  close(out[1]);
  std::string text;
  char buf[65536];
  ssize_t n;
  while ((n = read(out[0], buf, sizeof(buf))) > 0) text.append(buf, static_cast<size_t>(n));
  close(out[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status), text};
}

}  // namespace arcprof::testing
