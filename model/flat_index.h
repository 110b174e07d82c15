// An open-addressing hash index from 64-bit keys to 32-bit values: the call
// tree's (parent, frame) -> node index (CallTree::Child) and the xarc report's
// (consumer, consumer) -> line lookups. std::unordered_map allocates a node
// per entry; with half a million nodes that allocation dominated building a
// report.
#pragma once

#include <cstdint>
#include <vector>

namespace arcprof::model {

class FlatIndex {
 public:
  static constexpr uint64_t kEmptyKey = ~0ull;  // never a real key: ids are below 2^32 - 1

  // Returns the value for `key`, inserting `value_if_new` when absent;
  // `inserted` tells which happened.
  uint32_t FindOrInsert(uint64_t key, uint32_t value_if_new, bool& inserted) {
    if ((size_ + 1) * 2 > slots_.size()) Grow();
    const size_t mask = slots_.size() - 1;
    for (size_t i = Hash(key) & mask;; i = (i + 1) & mask) {
      Slot& slot = slots_[i];
      if (slot.key == key) {
        inserted = false;
        return slot.value;
      }
      if (slot.key == kEmptyKey) {
        slot.key = key;
        slot.value = value_if_new;
        ++size_;
        inserted = true;
        return value_if_new;
      }
    }
  }

  // The value for `key`, or `absent`.
  uint32_t Find(uint64_t key, uint32_t absent) const {
    if (slots_.empty()) return absent;
    const size_t mask = slots_.size() - 1;
    for (size_t i = Hash(key) & mask;; i = (i + 1) & mask) {
      const Slot& slot = slots_[i];
      if (slot.key == key) return slot.value;
      if (slot.key == kEmptyKey) return absent;
    }
  }

  size_t size() const { return size_; }
  // Room for `entries` without growing again, in one rehash: growing step by
  // step would allocate and fill every smaller table on the way.
  void Reserve(size_t entries) {
    size_t slots = slots_.empty() ? 8 : slots_.size();
    while (entries * 2 > slots) slots *= 2;
    if (slots > slots_.size()) Grow(slots);
  }

 private:
  struct Slot {
    uint64_t key = kEmptyKey;
    uint32_t value = 0;
  };

  static uint64_t Hash(uint64_t x) {  // splitmix64 finalizer: keys are small, structured ids
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ull;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebull;
    x ^= x >> 31;
    return x;
  }

  void Grow() { Grow(slots_.empty() ? 8 : slots_.size() * 2); }
  void Grow(size_t slots) {  // slots: a power of two above the entries held
    std::vector<Slot> old = std::move(slots_);
    slots_.assign(slots, Slot{});
    const size_t mask = slots_.size() - 1;
    for (const Slot& slot : old) {
      if (slot.key == kEmptyKey) continue;
      size_t i = Hash(slot.key) & mask;
      while (slots_[i].key != kEmptyKey) i = (i + 1) & mask;
      slots_[i] = slot;
    }
  }

  std::vector<Slot> slots_;
  size_t size_ = 0;
};

}  // namespace arcprof::model
