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

}  // namespace

void JitMethodTable::Add(const jitdump::MethodBlock& block) {
  // The file is the JVM's user's: past kMaxMethods (a JVM names tens of
  // thousands) later names are dropped, and entry numbers fit 32 bits.
  if (block.count == 0 || block.count > kMaxMethods - added_) return;
  added_ += block.count;
  records_.push_back({block.t_ns, block.count, bytes_.Store(block.bytes), {}});
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
        uint64_t ahead = 0;
        std::memcpy(&ahead, record.bytes.data() + size_t{i + kAhead} * 8, 8);
        __builtin_prefetch(&slots_[MethodHash(ahead) & mask]);
      }
      uint64_t method = 0;
      std::memcpy(&method, record.bytes.data() + size_t{i} * 8, 8);
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
  IndexNew();
  if (slots_.empty()) return std::nullopt;
  const size_t mask = slots_.size() - 1;
  size_t at = MethodHash(method) & mask;
  while (slots_[at].head != 0 && slots_[at].method != method) at = (at + 1) & mask;
  if (slots_[at].head == 0) return std::nullopt;
  // Entries are numbered in the order they were read: (time, number) orders
  // the versions as they were written.
  uint32_t latest = 0, earliest = 0;  // entry + 1
  uint64_t latest_t = 0, earliest_t = 0;
  for (uint32_t e = slots_[at].head; e != 0; e = entries_[e - 1].next) {
    const uint64_t t = records_[entries_[e - 1].record].t_ns;
    if (t <= t_ns && (latest == 0 || t > latest_t || (t == latest_t && e > latest))) {
      latest = e;
      latest_t = t;
    }
    if (earliest == 0 || t < earliest_t || (t == earliest_t && e < earliest)) {
      earliest = e;
      earliest_t = t;
    }
  }
  const Entry& chosen = entries_[(latest != 0 ? latest : earliest) - 1];
  return NameAt(records_[chosen.record], chosen.index);
}

size_t JitMethodTable::bytes() const {
  return records_.capacity() * sizeof(Record) + bytes_.bytes() + name_starts_bytes_ +
         slots_.capacity() * sizeof(Slot) + entries_.capacity() * sizeof(Entry);
}

}  // namespace arcprof
