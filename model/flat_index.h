// Open-addressing hash indexes with 32-bit values. FlatIndex maps 64-bit keys
// to values: the xarc report's (consumer, consumer) -> line lookups.
// FlatIdIndex holds only ids whose keys live elsewhere: the call tree's
// (parent, frame) -> node index (CallTree::Child), where the key is read back
// from the node, and the sample processor's frame keys (FindOrInsertHashed). std::unordered_map allocates a node per entry; with half a
// million nodes that allocation dominated building a report.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

namespace arcprof::model {

// splitmix64's finalizer: keys are small, structured ids.
inline uint64_t FlatHash(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  x ^= x >> 31;
  return x;
}

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

  static uint64_t Hash(uint64_t x) { return FlatHash(x); }

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

// A set of 32-bit ids found by a 64-bit key that the owner derives from the
// id (key_of(id)): a slot is the id alone, 4 bytes where FlatIndex's slot is
// 16, and a probe compares key_of(slot's id) with the key. At most half the
// slots are used, as in FlatIndex. The ids are the owner's (dense from 0 in
// CallTree); ~0u is never one.
class FlatIdIndex {
 public:
  static constexpr uint32_t kEmpty = ~0u;

  // Returns the id whose key is `key`, inserting `id_if_new` when none is;
  // `inserted` tells which happened. key_of(id_if_new) is not called here, so
  // the owner may store the new id's key after the call.
  template <typename KeyOf>
  uint32_t FindOrInsert(uint64_t key, uint32_t id_if_new, const KeyOf& key_of, bool& inserted) {
    return FindOrInsertHashed(
        FlatHash(key), id_if_new, [&](uint32_t id) { return key_of(id) == key; },
        [&](uint32_t id) { return FlatHash(key_of(id)); }, inserted);
  }

  // The same for keys that do not fit 64 bits (the sample processor's
  // frames: module, symbol, address, kind): the caller hashes its key
  // (`hash`), says whether id's key is it (`is_key(id)`) and hashes an id's
  // key again when the table grows (`hash_of(id)`).
  template <typename IsKey, typename HashOf>
  uint32_t FindOrInsertHashed(uint64_t hash, uint32_t id_if_new, const IsKey& is_key, const HashOf& hash_of,
                              bool& inserted) {
    if ((size_ + 1) * 2 > slots_.size()) GrowHashed(slots_.empty() ? 8 : slots_.size() * 2, hash_of);
    const size_t mask = slots_.size() - 1;
    for (size_t i = hash & mask;; i = (i + 1) & mask) {
      const uint32_t id = slots_[i];
      if (id == kEmpty) {
        slots_[i] = id_if_new;
        ++size_;
        inserted = true;
        return id_if_new;
      }
      if (is_key(id)) {
        inserted = false;
        return id;
      }
    }
  }

  // Empties the index and keeps its slots for the next ids.
  void Clear() {
    std::fill(slots_.begin(), slots_.end(), kEmpty);
    size_ = 0;
  }

  // The id whose key is `key`, or `absent`.
  template <typename KeyOf>
  uint32_t Find(uint64_t key, uint32_t absent, const KeyOf& key_of) const {
    if (slots_.empty()) return absent;
    const size_t mask = slots_.size() - 1;
    for (size_t i = FlatHash(key) & mask;; i = (i + 1) & mask) {
      const uint32_t id = slots_[i];
      if (id == kEmpty) return absent;
      if (key_of(id) == key) return id;
    }
  }

  size_t size() const { return size_; }
  // The bytes the slots take.
  size_t bytes() const { return slots_.capacity() * sizeof(uint32_t); }
  // Room for `entries` without growing again, in one rehash.
  template <typename KeyOf>
  void Reserve(size_t entries, const KeyOf& key_of) {
    size_t slots = slots_.empty() ? 8 : slots_.size();
    while (entries * 2 > slots) slots *= 2;
    if (slots > slots_.size()) Grow(slots, key_of);
  }

 private:
  template <typename KeyOf>
  void Grow(size_t slots, const KeyOf& key_of) {  // slots: a power of two above the ids held
    GrowHashed(slots, [&](uint32_t id) { return FlatHash(key_of(id)); });
  }
  template <typename HashOf>
  void GrowHashed(size_t slots, const HashOf& hash_of) {
    std::vector<uint32_t> old = std::move(slots_);
    slots_.assign(slots, kEmpty);
    const size_t mask = slots_.size() - 1;
    for (const uint32_t id : old) {
      if (id == kEmpty) continue;
      size_t i = hash_of(id) & mask;
      while (slots_[i] != kEmpty) i = (i + 1) & mask;
      slots_[i] = id;
    }
  }

  std::vector<uint32_t> slots_;
  size_t size_ = 0;
};

}  // namespace arcprof::model
