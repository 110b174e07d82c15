// A time-versioned index of one process's JIT code (docs/formats.md §1.11): every
// CODE_LOAD, MOVE, unload and perf-map line is a version of an address range
// valid from its timestamp on; a lookup (addr, t) answers with the latest
// version loaded at or before t that still covers addr and was not unloaded,
// falling back to the earliest later one (a sample that raced the record).
// Records may arrive in any time order: nothing here depends on the order of
// the Add calls except for ties at equal times (the later call wins).
#pragma once

#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "common/frame.h"
#include "symbolize/jit_source.h"
#include "symbolize/name_pool.h"
#include "symbolize/string_arena.h"

namespace arcprof {

struct JitInlineRange {
  uint32_t pc_offset = 0;  // covers (previous range's pc_offset, pc_offset]
  // Outermost first, without the compiled method itself; empty: nothing inlined here.
  std::vector<std::string_view> chain;
};

struct JitIndexStats {
  uint64_t versions = 0;
  uint64_t unloads = 0;
  uint64_t unmatched_unloads = 0;
  uint64_t inline_tables = 0;
  uint64_t lookups = 0;
  uint64_t cache_hits = 0;
  uint64_t fallback_later = 0;  // answered with a version loaded after the sample
};

class JitCodeIndex {
 public:
  JitCodeIndex();

  // Code `name` occupies [addr, addr+size) from t_ns on. code_index 0: none
  // (perf maps); otherwise unique per load, as in jitdump.
  void AddCode(uint64_t t_ns, uint64_t addr, uint64_t size, std::string_view name, uint64_t code_index = 0,
               FrameKind kind = FrameKind::kJit);
  // The code of code_index now (also) lives at new_addr.
  void AddMove(uint64_t t_ns, uint64_t new_addr, uint64_t size, uint64_t code_index);
  // The code loaded as code_index (or, when 0, the latest load at addr) is gone from t_ns on.
  void AddUnload(uint64_t t_ns, uint64_t addr, uint64_t code_index);
  // Inlining ranges of code_index; ranges sorted by pc_offset here.
  void AddInline(uint64_t code_index, std::vector<JitInlineRange> ranges);
  // The same from our agent's INLINE record (jitdump::InlineBlock::record,
  // checked by the parser): its bytes are kept and decoded into ranges when
  // a lookup first lands in that code (most compiled code is never sampled).
  void AddInlineRecord(uint64_t code_index, std::string_view record);
  // The frame facts of code_index (JitSymbol::frame_size, frame_complete).
  void AddFrame(uint64_t code_index, int32_t frame_size, int32_t frame_complete);

  std::optional<JitSymbol> Find(uint64_t addr, uint64_t t_ns);

  // The live range of a version, for tests and checks: [t_load, t_unload).
  struct VersionView {
    uint64_t start, end, t_load, t_unload;
    std::string_view name;
  };
  std::vector<VersionView> Versions() const;
  const JitIndexStats& stats() const { return stats_; }
  // About how many heap bytes the index holds (walks it: for a window close).
  size_t bytes() const;

 private:
  static constexpr uint64_t kNever = UINT64_MAX;
  static constexpr uint32_t kNone = UINT32_MAX;
  struct Version {
    uint64_t start = 0, end = 0;
    uint64_t t_load = 0, t_unload = kNever;
    std::string_view name;
    FrameKind kind = FrameKind::kJit;
    uint32_t inline_table = kNone;
    int32_t frame_size = 0;
    int32_t frame_complete = -1;
  };
  struct CacheEntry {
    uint64_t addr = 0;
    uint64_t from = 0, until = 0;  // until 0: empty
    uint32_t version = 0;
    uint64_t generation = 0;
  };

  // Ranges given now, or an INLINE record's bytes (in record_bytes_) to decode
  // at the first lookup that needs them.
  struct InlineTable {
    std::vector<JitInlineRange> ranges;
    std::string_view record;  // not decoded yet when not empty
  };

  std::string_view Intern(std::string_view name);
  uint32_t AddVersion(Version v);
  void AttachInline(uint64_t code_index, InlineTable table);
  const std::vector<JitInlineRange>& Ranges(uint32_t table);
  JitSymbol Answer(uint32_t id, uint64_t addr);

  std::vector<Version> versions_;
  std::unordered_map<uint64_t, std::vector<uint32_t>> pages_;  // 4 KiB page -> versions touching it
  std::vector<uint32_t> large_;                                // versions too large for pages_
  std::unordered_map<uint64_t, uint32_t> by_code_index_;
  std::unordered_map<uint64_t, uint32_t> pending_inline_;  // code_index -> inline_tables_ id
  std::unordered_map<uint64_t, uint64_t> pending_unload_;  // code_index -> t_ns
  std::unordered_map<uint64_t, std::pair<int32_t, int32_t>> pending_frame_;
  std::vector<InlineTable> inline_tables_;
  StringArena record_bytes_;  // INLINE records not decoded yet (and names of decoded ones)
  // Each distinct name once: its bytes in the arena (views stay valid), a
  // view in the set. A JVM has 10,000s of methods and a daemon holds every
  // live JVM's; a std::string node per name cost ~65 bytes more per method.
  std::unordered_set<std::string_view> names_;
  StringArena name_bytes_;
  std::vector<CacheEntry> cache_;
  uint64_t generation_ = 1;
  JitIndexStats stats_;
};

}  // namespace arcprof
