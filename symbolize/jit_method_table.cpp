#include "symbolize/jit_method_table.h"

#include <algorithm>
#include <cstring>
#include <utility>

namespace arcprof {
namespace {

// Where a Method* (8-byte aligned metadata) starts its probe.
size_t MethodHash(uint64_t method) {
  const uint64_t h = (method >> 3) * 0x9E3779B97F4A7C15ull;
  return static_cast<size_t>(h ^ (h >> 29));
}

uint64_t MethodAt(std::string_view bytes, uint32_t i) {
  uint64_t method = 0;
  std::memcpy(&method, bytes.data() + size_t{i} * 8, 8);
  return method;
}

// Lookups without a new record in between after which the sorted runs
// become one (a JVM names most of its methods at start, then samples ask).
constexpr uint32_t kLookupsBeforeOneRun = 64;

}  // namespace

// Versions are numbered in the order they were read, (record, index):
// (time, number) orders them as they were written.
struct JitMethodTable::Choice {
  bool latest = false, earliest = false;
  uint64_t latest_t = 0, earliest_t = 0;
  uint32_t latest_record = 0, latest_index = 0;
  uint32_t earliest_record = 0, earliest_index = 0;

  void Consider(uint64_t t, uint32_t record, uint32_t index, uint64_t t_ns) {
    const auto key = std::pair(record, index);
    if (t <= t_ns &&
        (!latest || t > latest_t || (t == latest_t && key > std::pair(latest_record, latest_index)))) {
      latest = true;
      latest_t = t;
      latest_record = record;
      latest_index = index;
    }
    if (!earliest || t < earliest_t || (t == earliest_t && key < std::pair(earliest_record, earliest_index))) {
      earliest = true;
      earliest_t = t;
      earliest_record = record;
      earliest_index = index;
    }
  }
};

void JitMethodTable::Add(const jitdump::MethodBlock& block) {
  // The file is the JVM's user's: past kMaxMethods (a JVM names tens of
  // thousands) later names are dropped, and entry numbers fit 32 bits.
  if (block.count == 0 || block.count > kMaxMethods - added_) return;
  added_ += block.count;
  records_.push_back({block.t_ns, block.count, bytes_.Store(block.bytes), {}});
  if (!hashed_) AddPieces(static_cast<uint32_t>(records_.size() - 1));
}

void JitMethodTable::AddPieces(uint32_t r) {
  const Record& record = records_[r];
  uint32_t begin = 0;
  uint64_t low = MethodAt(record.bytes, 0), high = low;
  for (uint32_t i = 1; i < record.count; ++i) {
    const uint64_t method = MethodAt(record.bytes, i);
    const uint64_t new_low = std::min(low, method), new_high = std::max(high, method);
    if (new_high - new_low > kPieceSpan || i - begin == kPieceMethods) {
      pieces_.push_back({low, static_cast<uint32_t>(high - low), r, begin, i});
      begin = i;
      low = high = method;
    } else {
      low = new_low;
      high = new_high;
    }
  }
  pieces_.push_back({low, static_cast<uint32_t>(high - low), r, begin, record.count});
}

void JitMethodTable::MergeRuns(size_t keep) {
  const auto by_low = [](const Piece& a, const Piece& b) { return a.low < b.low; };
  while (runs_.size() > std::max<size_t>(keep, 1)) {
    const size_t last = runs_.back();
    runs_.pop_back();
    std::inplace_merge(pieces_.begin() + static_cast<ptrdiff_t>(runs_.back()),
                       pieces_.begin() + static_cast<ptrdiff_t>(last),
                       pieces_.begin() + static_cast<ptrdiff_t>(sorted_), by_low);
  }
}

void JitMethodTable::SortNew() {
  if (sorted_ < pieces_.size()) {
    std::sort(pieces_.begin() + static_cast<ptrdiff_t>(sorted_), pieces_.end(),
              [](const Piece& a, const Piece& b) { return a.low < b.low; });
    runs_.push_back(sorted_);
    sorted_ = pieces_.size();
    lookups_since_sort_ = 0;
    // Each run at most half the one before it: O(log n) runs, and a piece
    // is merged O(log n) times.
    while (runs_.size() >= 2) {
      const size_t n = runs_.size();
      if (2 * (sorted_ - runs_[n - 1]) < runs_[n - 1] - runs_[n - 2]) break;
      MergeRuns(n - 1);
    }
  } else if (runs_.size() > 1 && ++lookups_since_sort_ >= kLookupsBeforeOneRun) {
    MergeRuns(1);
  }
}

bool JitMethodTable::FindInPieces(uint64_t method, uint64_t t_ns, Choice* choice) {
  SortNew();
  // A piece covering `method` starts within kPieceSpan below it.
  const uint64_t lowest = method >= kPieceSpan ? method - kPieceSpan : 0;
  size_t walked = 0;
  for (size_t run = 0; run < runs_.size(); ++run) {
    const auto first = pieces_.begin() + static_cast<ptrdiff_t>(runs_[run]);
    const auto last = pieces_.begin() + static_cast<ptrdiff_t>(run + 1 < runs_.size() ? runs_[run + 1] : sorted_);
    auto it = std::upper_bound(first, last, method, [](uint64_t m, const Piece& p) { return m < p.low; });
    while (it != first) {
      --it;
      if (it->low < lowest) break;
      if (++walked > kMaxWalk) return false;
      if (method - it->low > it->span) continue;
      const Record& record = records_[it->record];
      for (uint32_t i = it->begin; i < it->end; ++i) {
        if (MethodAt(record.bytes, i) == method) choice->Consider(record.t_ns, it->record, i, t_ns);
      }
    }
  }
  return true;
}

void JitMethodTable::Grow(size_t methods) {
  // At most half full: one rehash for all that was read since the last
  // lookup (a JVM names thousands of methods per read), not one per doubling.
  size_t size = std::max<size_t>(1024, slots_.size());
  while (methods * 2 > size) size *= 2;
  if (size == slots_.size()) return;
  std::vector<Slot> old = std::exchange(slots_, std::vector<Slot>(size));
  const size_t mask = slots_.size() - 1;
  for (const Slot& slot : old) {
    if (slot.head == 0) continue;
    size_t at = MethodHash(slot.method) & mask;
    while (slots_[at].head != 0) at = (at + 1) & mask;
    slots_[at] = slot;
  }
}

void JitMethodTable::IndexNew() {
  if (indexed_ == records_.size()) return;
  size_t pending = 0;
  for (size_t r = indexed_; r < records_.size(); ++r) pending += records_[r].count;
  Grow(slots_used_ + pending);
  if (entries_.capacity() < entries_.size() + pending) {
    entries_.reserve(std::max(entries_.size() + pending, 2 * entries_.capacity()));
  }
  const size_t mask = slots_.size() - 1;
  for (; indexed_ < records_.size(); ++indexed_) {
    const Record& record = records_[indexed_];
    for (uint32_t i = 0; i < record.count; ++i) {
      // The slots are random accesses into up to MBs: ask for a later one early.
      constexpr uint32_t kAhead = 8;
      if (i + kAhead < record.count) {
        __builtin_prefetch(&slots_[MethodHash(MethodAt(record.bytes, i + kAhead)) & mask]);
      }
      const uint64_t method = MethodAt(record.bytes, i);
      size_t at = MethodHash(method) & mask;
      while (slots_[at].head != 0 && slots_[at].method != method) at = (at + 1) & mask;
      Slot& slot = slots_[at];
      if (slot.head == 0) {
        slot.method = method;
        ++slots_used_;
      }
      entries_.push_back({static_cast<uint32_t>(indexed_), i, slot.head});
      slot.head = static_cast<uint32_t>(entries_.size());
    }
  }
}

void JitMethodTable::FindInHash(uint64_t method, uint64_t t_ns, Choice* choice) {
  IndexNew();
  if (slots_.empty()) return;
  const size_t mask = slots_.size() - 1;
  size_t at = MethodHash(method) & mask;
  while (slots_[at].head != 0 && slots_[at].method != method) at = (at + 1) & mask;
  for (uint32_t e = slots_[at].head; e != 0; e = entries_[e - 1].next) {
    const Entry& entry = entries_[e - 1];
    choice->Consider(records_[entry.record].t_ns, entry.record, entry.index, t_ns);
  }
}

std::string_view JitMethodTable::NameAt(Record& record, uint32_t index) {
  const std::string_view names = record.bytes.substr(size_t{record.count} * 8);
  if (record.name_starts.empty()) {
    // The parser checked that the record holds `count` NULs.
    record.name_starts.reserve(size_t{record.count} + 1);
    size_t at = 0;
    for (uint32_t i = 0; i < record.count && at <= names.size(); ++i) {
      record.name_starts.push_back(static_cast<uint32_t>(at));
      const size_t nul = names.find('\0', at);
      at = nul == std::string_view::npos ? names.size() + 1 : nul + 1;
    }
    record.name_starts.push_back(static_cast<uint32_t>(at));
    name_starts_bytes_ += record.name_starts.capacity() * sizeof(uint32_t);
  }
  if (size_t{index} + 1 >= record.name_starts.size()) return {};
  const uint32_t start = record.name_starts[index];
  return names.substr(start, record.name_starts[index + 1] - 1 - start);
}

std::optional<std::string_view> JitMethodTable::Find(uint64_t method, uint64_t t_ns) {
  Choice choice;
  if (!hashed_ && !FindInPieces(method, t_ns, &choice)) {
    // Pieces piled up: hash every Method* once, as a bound on every later lookup.
    hashed_ = true;
    std::vector<Piece>().swap(pieces_);
    std::vector<size_t>().swap(runs_);
    sorted_ = 0;
    choice = Choice{};
  }
  if (hashed_) FindInHash(method, t_ns, &choice);
  if (choice.latest) return NameAt(records_[choice.latest_record], choice.latest_index);
  if (choice.earliest) return NameAt(records_[choice.earliest_record], choice.earliest_index);
  return std::nullopt;
}

size_t JitMethodTable::bytes() const {
  return records_.capacity() * sizeof(Record) + bytes_.bytes() + name_starts_bytes_ +
         pieces_.capacity() * sizeof(Piece) + runs_.capacity() * sizeof(size_t) +
         slots_.capacity() * sizeof(Slot) + entries_.capacity() * sizeof(Entry);
}

}  // namespace arcprof
