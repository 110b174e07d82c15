// The symbolizer: a process/mapping timeline fed by process events (perf
// side-band records or a /proc snapshot) and symbol sources (ELF files via
// elfutils, kallsyms, the vDSO), answering "which function was at this address
// in this process at this time". Every answer is a name or Unknown(reason).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/frame.h"
#include "symbolize/jit_source.h"
#include "symbolize/symbol_types.h"

namespace arcprof {

class DebuginfodFetcher;

struct SymbolizerOptions {
  std::string proc_root = "/proc";
  std::string kallsyms_path = "/proc/kallsyms";
  std::vector<std::string> debug_dirs = {"/usr/lib/debug"};
  // Check a .gnu_debuglink file's CRC when build-ids cannot be compared.
  bool verify_debuglink_crc = true;
  // What is known about a process (mappings, names, JIT source) is dropped
  // this long after it exited, in the time of the events; files no
  // remembered process maps are closed then. Samples are drained long before.
  uint64_t exited_retention_ns = 10'000'000'000;
  // A JIT source (every method name of a JVM: megabytes) is let go sooner,
  // at the first forget pass this long after its process exited: samples
  // taken before an exit are drained within a second of it.
  uint64_t exited_jit_retention_ns = 3'000'000'000;
  // Symbol tables held at once (ModuleCache::kSymbolBudgetBytes): the least
  // recently used files' tables are given back past it.
  size_t symbol_budget_bytes = 32u << 20;
  // Cached user answers: 2^bits slots of ~112 bytes (16: 7 MiB).
  uint32_t answer_cache_bits = 16;
  // Where stripped files are looked up in the background (not owned; must
  // outlive the Symbolizer); nullptr: no debuginfod.
  DebuginfodFetcher* debuginfod = nullptr;
};

struct SymbolizerStats {
  uint64_t elf_files_loaded = 0;
  uint64_t lookups = 0;
  uint64_t cache_hits = 0;
  uint64_t file_cache_hits = 0;  // answered from another process's lookup of the same file offset
  uint64_t processes_forgotten = 0;  // dropped after exit + retention
  uint64_t files_closed = 0;
  uint64_t open_files = 0;           // now
  uint64_t processes = 0;            // remembered now
  uint64_t symbol_bytes = 0;         // symbol tables held now
  uint64_t symbol_tables_released = 0;  // for the budget, since the start
  uint64_t name_bytes = 0;             // interned names held now (NamePool::bytes)
  uint64_t names_released = 0;         // by ReleaseNames, since the start
};

// What the symbolizer holds now, in (estimated) heap bytes: a daemon logs it
// at each window close (-v) against its budgets.
struct SymbolizerHeld {
  size_t symbol_bytes = 0;        // ELF symbol tables (budget: symbol_budget_bytes)
  size_t kernel_bytes = 0;        // kallsyms table and the kernel answer cache
  size_t answer_cache_bytes = 0;  // cached user answers (answer_cache_bits) and file answers (fixed)
  size_t name_bytes = 0;          // interned names (NamePool)
  size_t process_bytes = 0;       // timeline mappings and registry records
  size_t jit_bytes = 0;           // JIT sources' method tables
  size_t processes = 0;           // remembered now
  size_t exited_processes = 0;    // of those, exited (kept exited_retention_ns)
  size_t jit_sources = 0;         // holding tables now
  size_t total() const {
    return symbol_bytes + kernel_bytes + answer_cache_bytes + name_bytes + process_bytes + jit_bytes;
  }
};

class Symbolizer {
 public:
  explicit Symbolizer(SymbolizerOptions options = {});
  ~Symbolizer();
  Symbolizer(const Symbolizer&) = delete;
  Symbolizer& operator=(const Symbolizer&) = delete;

  // Reads /proc/*/maps, comm, cmdline of every running process as of time t_ns.
  void SnapshotAllProcesses(uint64_t t_ns);
  void SnapshotProcess(uint32_t pid, uint64_t t_ns);

  // Timeline events, in the CLOCK_MONOTONIC domain of the samples. Mapped files
  // are opened at once through /proc/PID/map_files or /proc/PID/root while the
  // process lives, so samples of short-lived processes still resolve later.
  void OnMmap(uint32_t pid, uint64_t t_ns, const MappingEvent& mapping);
  // `exited`: the caller already holds this process's exit event (applied
  // after this one): /proc is not read for a process that is gone.
  void OnExec(uint32_t pid, uint64_t t_ns, std::string_view comm, bool exited = false);
  void OnComm(uint32_t pid, uint32_t tid, uint64_t t_ns, std::string_view comm);
  void OnFork(uint32_t parent_pid, uint32_t child_pid, uint64_t t_ns);
  void OnExit(uint32_t pid, uint64_t t_ns);

  // Drops what is known about processes that exited more than
  // exited_retention_ns before t_ns, and closes the files only they mapped.
  // The event handlers call it as event time passes (at most every 5 s);
  // a long-lived session may call it too.
  void ForgetExited(uint64_t t_ns);
  // Changes whenever ForgetExited dropped something: caches keyed by pid or
  // file id (the unwinder's) check KnowsProcess / FileOpen then.
  uint64_t forget_epoch() const;
  bool KnowsProcess(uint32_t pid) const;
  // Known and its exit event seen (false for a process never seen).
  bool ProcessExited(uint32_t pid) const;
  bool FileOpen(uint32_t file_id) const;

  // The process as last known (comm, command line, uid); nullptr when never
  // seen or forgotten.
  const ProcessInfo* Process(uint32_t pid) const;
  // The thread name last seen for tid (falls back to the process comm).
  std::string_view ThreadName(uint32_t pid, uint32_t tid) const;

  // Not thread-safe: one thread feeds events and resolves. Names and modules
  // in the answers stay valid for the Symbolizer's lifetime.
  SymbolizedFrame ResolveUser(uint32_t pid, uint64_t addr, uint64_t t_ns);
  SymbolizedFrame ResolveKernel(uint64_t addr);

  // The file mapped at addr in pid at t_ns, if any (and open).
  std::optional<MappedFile> FindMappedFile(uint32_t pid, uint64_t addr, uint64_t t_ns);

  // Every open file mapped in pid's address space live at t_ns (see
  // AddressSpaceFiles).
  std::optional<AddressSpaceFiles> MappedFiles(uint32_t pid, uint64_t t_ns);

  // Changes whenever anything known about pid's address space changes (exec,
  // mappings, exit): answers for its native code hold while it does not.
  uint64_t ProcessVersion(uint32_t pid) const;

  // Module name (as frames carry it) -> GNU build-id (hex) of every mapped
  // file that has one (forgotten processes' files included), for captures
  // and pprof mappings.
  std::map<std::string, std::string> ModuleBuildIds() const;

  // JIT code (anonymous executable memory with a JIT source) at addr in pid
  // at t_ns, with its frame facts for the unwinder; nullopt otherwise.
  std::optional<JitSymbol> FindJitCode(uint32_t pid, uint64_t addr, uint64_t t_ns);
  // A Java method's name by its Method* in pid (interpreted frames).
  std::optional<std::string_view> JavaMethodName(uint32_t pid, uint64_t method, uint64_t t_ns);

  // Installs the source of JIT symbols for anonymous executable memory.
  void SetJitSymbolSourceFactory(JitSymbolSourceFactory factory);

  // Called from OnMmap for every mapping event (after the mapping is added),
  // so that an extension learns which processes map its runtime (libjvm.so)
  // from the side band instead of reading every process's /proc maps. One
  // observer per owner; an empty one removes the owner's. With replay_known,
  // the new observer is first told the current file mappings of the
  // processes already known (a whole-machine or -p recording's snapshot).
  using MappingObserver = std::function<void(uint32_t pid, const MappingEvent& mapping)>;
  void SetMappingObserver(const void* owner, MappingObserver observer, bool replay_known = false);

  const SymbolizerStats& stats() const;
  // Walks every remembered process and JIT source: for a window close, not
  // for every sample.
  SymbolizerHeld Held() const;
  // The names handed out (SymbolizedFrame::symbol, inlining lists, Java
  // method names) live in one pool that grows with the distinct functions
  // sampled: on a build machine by ~800 a minute, without end. When it holds
  // more than budget_bytes, every name is released and cached answers are
  // dropped; names are interned again as they are asked for. Every view
  // handed out before dangles then: only a caller that holds none may call
  // it (a recording session right after SampleProcessor::TakeWindow).
  // Returns how many names were released.
  size_t ReleaseNames(size_t budget_bytes);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace arcprof
