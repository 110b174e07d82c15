// Pure parsers of the jitdump file (docs/formats.md §1) and of arcprof's side file
// (symbolize/jitdump_format.h). They take bytes, never touch the file system,
// and stop at a truncated tail without calling it corruption: the runtime is
// still appending. Fuzzed by tests/java/fuzz_jitdump.cpp.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace arcprof::jitdump {

struct FileHeader {
  bool swapped = false;      // written in the other byte order
  uint32_t header_size = 0;  // records start here
  uint32_t elf_mach = 0;
  uint32_t pid = 0;
  uint64_t timestamp_ns = 0;  // when the file was made (CLOCK_MONOTONIC)
  uint64_t flags = 0;
};

// The 40-byte header; an error for anything that is not a jitdump we can use
// (ARCH_TIMESTAMP files are refused: their clock is not the samples').
Result<FileHeader> ParseFileHeader(std::string_view data);

struct CodeLoad {
  uint64_t t_ns = 0;
  uint32_t pid = 0, tid = 0;
  uint64_t addr = 0, size = 0, index = 0;
  std::string name;
};

struct CodeMove {
  uint64_t t_ns = 0;
  uint64_t old_addr = 0, new_addr = 0, size = 0, index = 0;
};

struct Records {
  std::vector<CodeLoad> loads;
  std::vector<CodeMove> moves;
  bool closed = false;     // JIT_CODE_CLOSE seen
  uint64_t skipped = 0;    // unknown or unused record types
  // Empty again, keeping the vectors' capacity (a reader parses into one
  // Records at every poll).
  void Clear() {
    loads.clear();
    moves.clear();
    closed = false;
    skipped = 0;
  }
};

struct ParseProgress {
  size_t consumed = 0;     // bytes of whole records parsed; resume from here
  bool corrupt = false;    // stop for good (message in error)
  std::string error;
};

// Parses the records in `data` (which starts at a record boundary) into *out.
// Stops at a truncated tail (consumed < data.size(), not corrupt).
ParseProgress ParseRecords(std::string_view data, bool swapped, Records* out);

// ---- side file ----

struct VmInfo {
  uint64_t t_ns = 0;
  uint32_t pid = 0;
  uint32_t flags = 0;  // kVm* bits
  std::string vm;
};

struct ThreadName {
  uint64_t t_ns = 0;
  uint32_t tid = 0;
  std::string name;  // "" at thread end
};

struct Unload {
  uint64_t t_ns = 0;
  uint64_t addr = 0, index = 0;
};

struct InlineEntry {
  uint32_t pc_offset = 0;
  std::vector<uint32_t> chain;  // indexes into InlineInfo::names, innermost first
};

struct InlineInfo {
  uint64_t t_ns = 0;
  uint64_t addr = 0, index = 0;
  std::vector<std::string_view> names;  // views into the decoded record
  std::vector<InlineEntry> entries;
};

// One INLINE record as written (header included), a view into the data given
// to ParseSideRecords, which checked it whole. Most compiled methods are
// never sampled: a reader keeps the bytes and decodes a record when a lookup
// lands in its code.
struct InlineBlock {
  uint64_t t_ns = 0;
  uint64_t addr = 0, index = 0;
  std::string_view record;
};

// The record's names and pc entries; false (and *out partly filled) when
// the bytes are not a whole, valid INLINE record.
bool DecodeInline(std::string_view record, InlineInfo* out);

struct MethodName {
  uint64_t t_ns = 0;
  uint64_t method = 0;  // HotSpot Method*
  std::string_view name;
};

// One METHODS record as it was written: `count` Method*s (u64, native byte
// order) followed by as many NUL-terminated names, a view into the data given
// to ParseSideRecords. A JVM names tens of thousands of methods (24,285 in
// 1.4 MB for one that compiles its source at start) and a profile looks up a
// handful: the reader keeps the bytes and finds a name when it is asked for.
// The parser has checked that the names are there (at least `count` NULs).
struct MethodBlock {
  uint64_t t_ns = 0;
  uint32_t count = 0;
  std::string_view bytes;  // count * 8 bytes of Method*s, then the names

  uint64_t method(uint32_t i) const;
  std::string_view names() const { return bytes.substr(size_t{count} * 8); }
};

// The block's (Method*, name) pairs, in order (tests, tools).
std::vector<MethodName> MethodNames(const MethodBlock& block);

struct FrameInfo {
  uint64_t t_ns = 0;
  uint64_t addr = 0, index = 0;
  int32_t frame_size = 0;      // bytes, > 0
  int32_t frame_complete = -1;  // code offset, -1 never
};

struct SideRecords {
  std::vector<VmInfo> vm;
  std::vector<ThreadName> threads;
  std::vector<Unload> unloads;
  std::vector<InlineBlock> inlines;
  std::vector<MethodBlock> methods;
  std::vector<FrameInfo> frames;
  uint64_t skipped = 0;
  // Empty again, keeping the vectors' capacity (a JVM's side file is read
  // at every poll while it runs, thousands of method names at a time).
  void Clear() {
    vm.clear();
    threads.clear();
    unloads.clear();
    inlines.clear();
    methods.clear();
    frames.clear();
    skipped = 0;
  }
};

// The 16-byte side-file header; returns the offset records start at.
Result<uint32_t> ParseSideHeader(std::string_view data);
ParseProgress ParseSideRecords(std::string_view data, SideRecords* out);

}  // namespace arcprof::jitdump
