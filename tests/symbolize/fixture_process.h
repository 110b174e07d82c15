// Runs a fixture program, reads the "name 0xADDR" lines it prints until
// "ready", and kills it on destruction.
#pragma once

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <sstream>
#include <string>
#include <vector>
#include "tests/layer_names.h"

extern char** environ;

namespace arcprof::testing {

class FixtureProcess {
 public:
  // Starts `path`; extra_env entries ("NAME=value") are added to the environment.
  explicit FixtureProcess(const std::string& path, std::vector<std::string> extra_env = {}) {
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0) {
      error_ = "pipe failed";
      return;
    }
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, fds[1], STDOUT_FILENO);
    std::vector<std::string> env_strings = std::move(extra_env);
    for (char** e = environ; *e; ++e) env_strings.emplace_back(*e);
    std::vector<char*> envp;
    for (std::string& s : env_strings) envp.push_back(s.data());
    envp.push_back(nullptr);
    std::string arg0 = path;
    char* argv[] = {arg0.data(), nullptr};
    int rc = posix_spawn(&pid_, path.c_str(), &actions, nullptr, argv, envp.data());
    posix_spawn_file_actions_destroy(&actions);
    close(fds[1]);
    if (rc != 0) {
      close(fds[0]);
      pid_ = 0;
      error_ = "posix_spawn " + path + " failed: " + std::to_string(rc);
      return;
    }
    ReadUntilReady(fds[0]);
    close(fds[0]);
  }
  ~FixtureProcess() { Kill(); }
  FixtureProcess(const FixtureProcess&) = delete;
  FixtureProcess& operator=(const FixtureProcess&) = delete;

  // Kills the process and reaps it.
  void Kill() {
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
      pid_ = 0;
    }
  }

  bool ok() const { return error_.empty(); }
  const std::string& error() const { return error_; }
  pid_t pid() const { return pid_; }
  uint64_t address(const std::string& name) const {
    auto it = addresses_.find(name);
    return it == addresses_.end() ? 0 : it->second;
  }
  const std::map<std::string, uint64_t>& addresses() const { return addresses_; }

 private:
  void ReadUntilReady(int fd) {
    std::string text;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (text.find("ready\n") == std::string::npos) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) {
        error_ = "fixture did not print 'ready' within 10 s; got: " + text;
        return;
      }
      pollfd p{fd, POLLIN, 0};
      if (poll(&p, 1, static_cast<int>(left.count())) <= 0) continue;
      char buffer[4096];
      ssize_t n = read(fd, buffer, sizeof(buffer));
      if (n <= 0) {
        error_ = "fixture exited before 'ready'; got: " + text;
        return;
      }
      text.append(buffer, static_cast<size_t>(n));
    }
    std::istringstream lines(text);
    std::string name, value;
    while (lines >> name && name != "ready" && lines >> value) {
      addresses_[name] = std::strtoull(value.c_str(), nullptr, 16);
    }
  }

  pid_t pid_ = 0;
  std::string error_;
  std::map<std::string, uint64_t> addresses_;
};

}  // namespace arcprof::testing
