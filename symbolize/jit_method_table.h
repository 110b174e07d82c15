// Java method names by HotSpot Method*, versioned by time, from the METHODS
// records of our agent's side file (symbolize/jitdump.h). A JVM names tens of
// thousands of methods (24,285 in 1.4 MB for one that compiles its source at
// start) and samples look up a handful: records are kept as read (their bytes
// in an arena), their Method*s go into a hash index at the next lookup, and a
// record's names are found when one of them is first asked for. Parsing,
// copying and sorting every name was 18% of a whole-machine daemon's CPU
// under a JVM restarted every 4 s. Fuzzed with the side-file parser
// (tests/java/fuzz/fuzz_jitdump.cpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "symbolize/jitdump.h"
#include "symbolize/string_arena.h"

namespace arcprof {

class JitMethodTable {
 public:
  // Keeps a copy of the record's bytes (the caller's buffer may go).
  void Add(const jitdump::MethodBlock& block);
  // The name the latest record at or before t_ns gave (at equal times the
  // later added), else the earliest record's (a sample that raced it).
  std::optional<std::string_view> Find(uint64_t method, uint64_t t_ns);
  // Heap bytes held.
  size_t bytes() const;
  // Method*s kept at most; records past it are dropped whole.
  static constexpr uint64_t kMaxMethods = 16u << 20;

 private:
  struct Record {
    uint64_t t_ns = 0;
    uint32_t count = 0;
    std::string_view bytes;             // count Method*s, then the names
    std::vector<uint32_t> name_starts;  // count + 1 offsets into the names, once asked
  };
  struct Slot {
    uint64_t method = 0;
    uint32_t head = 0;  // newest entry + 1; 0: an empty slot
  };
  struct Entry {
    uint32_t record = 0, index = 0;  // records_[record], its index-th name
    uint32_t next = 0;               // the entry before it of the same Method*, + 1
  };
  void IndexNew();
  void Grow(size_t methods);  // room for `methods` distinct Method*s
  std::string_view NameAt(Record& record, uint32_t index);

  std::vector<Record> records_;
  size_t indexed_ = 0;      // records_[0, indexed_) are in the index
  std::vector<Slot> slots_;  // open addressing, a power of two, at most half full
  size_t slots_used_ = 0;
  std::vector<Entry> entries_;
  StringArena bytes_;
  size_t name_starts_bytes_ = 0;
  uint64_t added_ = 0;  // Method*s in records_
};

}  // namespace arcprof
