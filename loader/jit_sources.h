// JIT symbols in a recording, for every runtime that writes them (a JVM's
// agent, node --perf-basic-prof, python -X perf): installs the symbolizer's
// JIT source factory (jitdump + arcprof side file, else perf map, per
// process: symbolize/jit_process_source.h), tails those files on every drain
// tick, lets a source go within a second of its process's exit, counts the
// jit.* counters and prints the sources' warnings. Owned by the runtime
// extension (loader/runtime_extension.cpp), which tells the runtimes of each
// source opened and let go (Runtime::JitSourceOpened, JitSourceClosing).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>

#include "symbolize/jit_process_source.h"

namespace arcprof {

class Symbolizer;

class JitSources {
 public:
  using Listener = std::function<void(uint32_t pid, JitProcessSource& source)>;
  // opened: a source was made for a process (on its first JIT frame);
  // closing: it is let go (its process exited or exec'd), right after.
  JitSources(Listener opened, Listener closing) : opened_(std::move(opened)), closing_(std::move(closing)) {}

  // Installs the factory in the symbolizer.
  void Start(Symbolizer& symbolizer);
  // Tails every source; every second, lets the sources of exited processes go.
  void Poll(uint64_t now_ns);
  // Tails every source and adds the jit.* counters since the previous call.
  void CloseWindow(std::map<std::string, int64_t>& counters);
  // Lets every source of an exited process go (between windows).
  void ForgetExited();

 private:
  struct Entry {
    std::shared_ptr<JitProcessSource> source;
    JitSourceStats reported;  // stats at the previous window
  };
  void CloseExited(uint64_t now_ns);
  void Close(uint32_t pid, Entry& entry, uint64_t now_ns);
  void Report(JitProcessSource& source);
  void Account(Entry& entry);

  Listener opened_, closing_;
  Symbolizer* symbolizer_ = nullptr;
  std::map<uint32_t, Entry> sources_;
  JitSourceStats delta_;  // since the previous window, of sources live and let go
  uint64_t last_retire_ns_ = 0;
};

}  // namespace arcprof
