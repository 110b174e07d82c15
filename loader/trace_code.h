// `arcprof trace`: what the probes of one function are, read from its machine
// code (x86-64, decoded with capstone). Probing a `ret` instead of using a
// uretprobe keeps return addresses intact, so C++ exceptions and longjmp
// still unwind through probed frames.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "common/result.h"
#include "common/scoped_fd.h"

namespace arcprof {

// One function's code, decoded from its first byte to its end.
struct DecodedFunction {
  // Targets of direct calls (`call rel32`), ELF virtual addresses.
  std::vector<uint64_t> call_targets;
  // Where the function's frame ends: each `ret` and each direct jump out of
  // [start, end) (a tail call; `.cold` parts are told apart by the caller).
  std::vector<uint64_t> exits;
  // Targets of the direct jumps in `exits` (tail calls), in the same order
  // as they appear there after the rets; 0 for a ret.
  std::vector<uint64_t> exit_targets;
  uint64_t indirect_calls = 0;  // `call *...`: targets found by sampling only
  bool first_is_push = false;   // the first instruction is a push (the kernel emulates it)
  bool complete = true;         // false: an undecodable byte ended the sweep
};

// Decodes `code`, the bytes of a function loaded at ELF virtual address
// `start` (a linear sweep: compilers keep data such as jump tables out of
// .text on x86-64). At most 1 MiB is decoded; any input is safe.
DecodedFunction DecodeFunction(std::span<const uint8_t> code, uint64_t start);

// A function of a module's symbol table.
struct CodeFunction {
  uint64_t start = 0;  // ELF virtual address
  uint64_t end = 0;    // exclusive
  std::string name;    // as the symbolizer shows it (demangled)
  std::string raw;     // as in the symbol table (mangled)
};

// The functions of the ELF file at `path` (.symtab, else .dynsym), sorted by
// start, and its PT_LOAD segments' mapping of virtual addresses to file
// offsets (uprobes are placed by file offset).
struct CodeModule {
  std::string path;
  std::shared_ptr<ScopedFd> file;  // open once: a map_files link may not resolve later
  std::vector<CodeFunction> functions;
  struct Segment {
    uint64_t vaddr = 0, offset = 0, filesz = 0;
  };
  std::vector<Segment> segments;
  // The function starting at vaddr, or nullptr.
  const CodeFunction* At(uint64_t vaddr) const;
  // File offset of a virtual address in a loaded segment, or 0 when none.
  uint64_t FileOffset(uint64_t vaddr) const;
  // Reads [vaddr, vaddr + size) from the file (at most 1 MiB).
  Result<std::vector<uint8_t>> Read(uint64_t vaddr, uint64_t size) const;
};
Result<CodeModule> ReadCodeModule(const std::string& path);

// The functions a name selects: the demangled name itself, its name without
// the parameter list (`ns::C::f` for `ns::C::f(int)`), or the raw symbol.
std::vector<const CodeFunction*> FindFunctions(const CodeModule& module, const std::string& name);

}  // namespace arcprof
