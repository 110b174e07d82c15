// The symbolizer: names code in the address spaces (spaces/address_spaces.h)
// from symbol sources (ELF files via elfutils, kallsyms, the vDSO, JIT
// sources), answering "which function was at this address in this process at
// this time". Every answer is a name or Unknown(reason).
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
#include "spaces/address_spaces.h"
#include "symbolize/jit_source.h"
#include "symbolize/symbol_types.h"

namespace arcprof {

class DebuginfodFetcher;

struct SymbolizerOptions {
  std::string kallsyms_path = "/proc/kallsyms";
  std::vector<std::string> debug_dirs = {"/usr/lib/debug"};
  // Check a .gnu_debuglink file's CRC when build-ids cannot be compared.
  bool verify_debuglink_crc = true;
  // A process's JIT source is dropped with the process
  // (AddressSpacesOptions::exited_retention_ns). Its tables (every method
  // name of a JVM: megabytes) are let go sooner, at the first forget pass
  // this long after its process exited: samples taken before an exit are
  // drained within a second of it.
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

// Names what the address spaces know: the Symbolizer listens to them (a
// process forgotten, an image replaced) and must not outlive them. It is the
// unwinder's JitCodeLookup.
class Symbolizer : public JitCodeLookup {
 public:
  explicit Symbolizer(AddressSpaces& spaces, SymbolizerOptions options = {});
  ~Symbolizer() override;
  Symbolizer(const Symbolizer&) = delete;
  Symbolizer& operator=(const Symbolizer&) = delete;

  AddressSpaces& spaces() { return spaces_; }

  // Not thread-safe: one thread feeds events and resolves. Names and modules
  // in the answers stay valid for the Symbolizer's lifetime.
  SymbolizedFrame ResolveUser(uint32_t pid, uint64_t addr, uint64_t t_ns);
  SymbolizedFrame ResolveKernel(uint64_t addr);

  // JIT code (anonymous executable memory with a JIT source) at addr in pid
  // at t_ns, with its frame facts for the unwinder; nullopt otherwise.
  std::optional<JitSymbol> FindJitCode(uint32_t pid, uint64_t addr, uint64_t t_ns) override;
  // The name of the method an interpreted frame of pid holds, by the id its
  // runtime's FrameStepper read (UnwindResult::methods: HotSpot's Method*),
  // from the process's JIT source (JitSymbolSource::MethodName).
  std::optional<std::string_view> InterpretedMethodName(uint32_t pid, uint64_t method, uint64_t t_ns);

  // Installs the source of JIT symbols for anonymous executable memory.
  void SetJitSymbolSourceFactory(JitSymbolSourceFactory factory);

  // Called on every JIT symbol FindJitCode returns, so that the runtime
  // owning the process can say how to step a frame its perf map only names
  // (runtimes/: CPython's -X perf trampolines). One refiner per owner; an
  // empty one removes the owner's.
  using JitFrameRefiner = std::function<void(uint32_t pid, JitSymbol& code)>;
  void SetJitFrameRefiner(const void* owner, JitFrameRefiner refiner);

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
  AddressSpaces& spaces_;
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace arcprof
