// Java method names by HotSpot Method*, versioned by time, from the METHODS
// records of our agent's side file (symbolize/jitdump.h). A JVM names tens of
// thousands of methods (24,285 in 1,935 records, 1.4 MB, for one that
// compiles its source at start) and samples look up a few hundred: records
// are kept as read (their bytes in an arena) and a record's names are found
// when one of them is first asked for.
//
// The index is of records, not of Method*s. A record is one class's methods,
// whose Method*s lie close together in metaspace: each record is cut (in its
// own order, one pass) into pieces of at most kPieceMethods Method*s within
// kPieceSpan bytes, and the pieces are kept sorted by their lowest Method*
// (in a few sorted runs, merged as records come in). A lookup looks at the
// pieces that start within kPieceSpan below the Method* (3 on average, 26 at
// most for that JVM) and scans the ones that cover it. Hashing every
// Method* of every JVM (a fresh 1 MB table each) was 5% of a whole-machine
// daemon's CPU under a JVM restarted every 4 s. A file whose pieces pile up
// (the same Method*s in hundreds of records: class unloading reusing them,
// or a hostile file) makes a lookup walk more than kMaxWalk pieces: the
// table then indexes every Method* in a hash table, as it did before, and
// answers from it from then on. Fuzzed with the side-file parser
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
  // later added; within one record the later Method*), else the earliest
  // record's (a sample that raced it; within one record the first).
  std::optional<std::string_view> Find(uint64_t method, uint64_t t_ns);
  // Heap bytes held.
  size_t bytes() const;
  // Whether lookups walked too many pieces and every Method* is hashed (tests).
  bool hashed() const { return hashed_; }
  // Method*s kept at most; records past it are dropped whole.
  static constexpr uint64_t kMaxMethods = 16u << 20;
  static constexpr uint64_t kPieceSpan = 4096;  // bytes of metaspace
  static constexpr uint32_t kPieceMethods = 64;
  static constexpr size_t kMaxWalk = 256;  // pieces one lookup looks at

 private:
  struct Record {
    uint64_t t_ns = 0;
    uint32_t count = 0;
    std::string_view bytes;             // count Method*s, then the names
    std::vector<uint32_t> name_starts;  // count + 1 offsets into the names, once asked
  };
  // Method*s [begin, end) of records_[record], all within [low, low + span].
  struct Piece {
    uint64_t low = 0;
    uint32_t span = 0;
    uint32_t record = 0;
    uint32_t begin = 0, end = 0;
  };
  // The best (latest and earliest) of the versions a lookup found.
  struct Choice;
  struct Slot {
    uint64_t method = 0;
    uint32_t head = 0;  // newest entry + 1; 0: an empty slot
  };
  struct Entry {
    uint32_t record = 0, index = 0;  // records_[record], its index-th name
    uint32_t next = 0;               // the entry before it of the same Method*, + 1
  };
  void AddPieces(uint32_t record);
  void SortNew();       // pieces added since the last lookup become a sorted run
  void MergeRuns(size_t keep);  // merges the runs past the first `keep`
  // false: the lookup walked more than kMaxWalk pieces (*choice is partial).
  bool FindInPieces(uint64_t method, uint64_t t_ns, Choice* choice);
  void FindInHash(uint64_t method, uint64_t t_ns, Choice* choice);
  void IndexNew();
  void Grow(size_t methods);  // room for `methods` distinct Method*s
  std::string_view NameAt(Record& record, uint32_t index);

  std::vector<Record> records_;
  StringArena bytes_;
  size_t name_starts_bytes_ = 0;
  uint64_t added_ = 0;  // Method*s in records_
  // The piece index: pieces_[runs_[i], runs_[i + 1]) sorted by low (the last
  // run ends at sorted_), sizes halving run to run; pieces_[sorted_, end)
  // were added since the last lookup.
  std::vector<Piece> pieces_;
  std::vector<size_t> runs_;
  size_t sorted_ = 0;
  uint32_t lookups_since_sort_ = 0;
  // The hash index, once pieces piled up (hashed_).
  bool hashed_ = false;
  size_t indexed_ = 0;      // records_[0, indexed_) are in the hash index
  std::vector<Slot> slots_;  // open addressing, a power of two, at most half full
  size_t slots_used_ = 0;
  std::vector<Entry> entries_;
};

}  // namespace arcprof
