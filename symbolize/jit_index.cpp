#include "symbolize/jit_index.h"

#include <algorithm>

#include "symbolize/jitdump.h"

namespace arcprof {
namespace {

constexpr unsigned kPageShift = 12;
// Larger code (interpreters, big stub blobs) is kept in a short list scanned
// on every lookup instead of being registered on every page it spans.
constexpr uint64_t kLargeCode = 64 * 1024;
constexpr size_t kCacheBits = 12;

size_t CacheSlot(uint64_t addr) { return (addr * 0x9e3779b97f4a7c15ull) >> (64 - kCacheBits); }

}  // namespace

JitCodeIndex::JitCodeIndex() { cache_.resize(size_t{1} << kCacheBits); }

size_t JitCodeIndex::bytes() const {
  // Hash nodes cost about two pointers besides their value.
  constexpr size_t kNode = 2 * sizeof(void*);
  size_t n = versions_.capacity() * sizeof(Version) + large_.capacity() * sizeof(uint32_t) +
             cache_.capacity() * sizeof(CacheEntry);
  for (const auto& [page, ids] : pages_) n += kNode + sizeof(page) + sizeof(ids) + ids.capacity() * sizeof(uint32_t);
  n += by_code_index_.size() * (kNode + 16) + pending_unload_.size() * (kNode + 16) +
       pending_frame_.size() * (kNode + 16);
  n += inline_tables_.capacity() * sizeof(InlineTable) + record_bytes_.bytes();
  for (const InlineTable& table : inline_tables_) {
    n += table.ranges.capacity() * sizeof(JitInlineRange);
    for (const JitInlineRange& r : table.ranges) n += r.chain.capacity() * sizeof(std::string_view);
  }
  n += pending_inline_.size() * (kNode + 16);
  n += names_.size() * (kNode + sizeof(std::string_view)) + names_.bucket_count() * sizeof(void*) + name_bytes_.bytes();
  return n;
}

std::string_view JitCodeIndex::Intern(std::string_view name) {
  // Looked up by view first: inlining chains repeat the same few names
  // thousands of times, and emplace builds a node (and a string) each call.
  if (auto it = names_.find(name); it != names_.end()) return *it;
  return *names_.insert(name_bytes_.Store(name)).first;
}

uint32_t JitCodeIndex::AddVersion(Version v) {
  if (v.end <= v.start) v.end = v.start + 1;  // size 0: the start address only
  const auto id = static_cast<uint32_t>(versions_.size());
  versions_.push_back(v);
  if (v.end - v.start > kLargeCode) {
    large_.push_back(id);
  } else {
    for (uint64_t page = v.start >> kPageShift; page <= (v.end - 1) >> kPageShift; ++page) {
      pages_[page].push_back(id);
    }
  }
  ++stats_.versions;
  ++generation_;  // a new version may change any cached answer's window
  return id;
}

void JitCodeIndex::AddCode(uint64_t t_ns, uint64_t addr, uint64_t size, std::string_view name, uint64_t code_index,
                           FrameKind kind) {
  if (addr + size < addr) return;
  Version v;
  v.start = addr;
  v.end = addr + size;
  v.t_load = t_ns;
  v.name = Intern(name);
  v.kind = kind;
  const uint32_t id = AddVersion(v);
  if (code_index == 0) return;
  by_code_index_[code_index] = id;
  if (auto it = pending_inline_.find(code_index); it != pending_inline_.end()) {
    versions_[id].inline_table = it->second;
    pending_inline_.erase(it);
    ++stats_.inline_tables;
  }
  if (auto it = pending_frame_.find(code_index); it != pending_frame_.end()) {
    versions_[id].frame_size = it->second.first;
    versions_[id].frame_complete = it->second.second;
    pending_frame_.erase(it);
  }
  if (auto it = pending_unload_.find(code_index); it != pending_unload_.end()) {
    const uint64_t t_unload = it->second;
    pending_unload_.erase(it);
    AddUnload(t_unload, addr, code_index);
  }
}

void JitCodeIndex::AddMove(uint64_t t_ns, uint64_t new_addr, uint64_t size, uint64_t code_index) {
  auto it = by_code_index_.find(code_index);
  if (it == by_code_index_.end() || new_addr + size < new_addr) return;
  Version v = versions_[it->second];
  v.start = new_addr;
  v.end = new_addr + size;
  v.t_load = t_ns;
  v.t_unload = kNever;
  it->second = AddVersion(v);
}

void JitCodeIndex::AddUnload(uint64_t t_ns, uint64_t addr, uint64_t code_index) {
  ++stats_.unloads;
  uint32_t id = kNone;
  if (code_index != 0) {
    auto it = by_code_index_.find(code_index);
    if (it == by_code_index_.end()) {
      pending_unload_[code_index] = t_ns;  // its load has not been read yet
      return;
    }
    id = it->second;
  } else {
    // The latest load at exactly addr that was live at t_ns.
    uint64_t best_t = 0;
    auto page = pages_.find(addr >> kPageShift);
    auto consider = [&](uint32_t v) {
      const Version& ver = versions_[v];
      if (ver.start == addr && ver.t_load <= t_ns && ver.t_unload == kNever && (id == kNone || ver.t_load >= best_t)) {
        id = v;
        best_t = ver.t_load;
      }
    };
    if (page != pages_.end()) for (uint32_t v : page->second) consider(v);
    for (uint32_t v : large_) consider(v);
  }
  if (id == kNone) {
    ++stats_.unmatched_unloads;
    return;
  }
  versions_[id].t_unload = std::min(versions_[id].t_unload, t_ns);
  ++generation_;
}

void JitCodeIndex::AddInline(uint64_t code_index, std::vector<JitInlineRange> ranges) {
  std::stable_sort(ranges.begin(), ranges.end(),
                   [](const JitInlineRange& a, const JitInlineRange& b) { return a.pc_offset < b.pc_offset; });
  for (JitInlineRange& r : ranges) {
    for (std::string_view& name : r.chain) name = Intern(name);
  }
  AttachInline(code_index, InlineTable{std::move(ranges), {}});
}

void JitCodeIndex::AddInlineRecord(uint64_t code_index, std::string_view record) {
  if (record.empty()) return;
  AttachInline(code_index, InlineTable{{}, record_bytes_.Store(record)});
}

void JitCodeIndex::AttachInline(uint64_t code_index, InlineTable table) {
  const auto id = static_cast<uint32_t>(inline_tables_.size());
  inline_tables_.push_back(std::move(table));
  auto it = by_code_index_.find(code_index);
  if (it == by_code_index_.end()) {
    // Its load has not been read yet; a second record for it replaces the first.
    pending_inline_[code_index] = id;
    return;
  }
  versions_[it->second].inline_table = id;
  ++stats_.inline_tables;
  ++generation_;
}

const std::vector<JitInlineRange>& JitCodeIndex::Ranges(uint32_t id) {
  InlineTable& table = inline_tables_[id];
  if (table.record.empty()) return table.ranges;
  jitdump::InlineInfo info;
  if (jitdump::DecodeInline(table.record, &info)) {
    // The names are views into the record's kept bytes: they live as long as the index.
    const std::vector<std::string_view>& names = info.names;
    table.ranges.reserve(info.entries.size());
    for (const jitdump::InlineEntry& e : info.entries) {
      JitInlineRange r;
      r.pc_offset = e.pc_offset;
      // The chain is innermost first and ends with the compiled method itself.
      for (size_t i = e.chain.size(); i-- > 1;) r.chain.push_back(names[e.chain[i - 1]]);
      table.ranges.push_back(std::move(r));
    }
    std::stable_sort(table.ranges.begin(), table.ranges.end(),
                     [](const JitInlineRange& a, const JitInlineRange& b) { return a.pc_offset < b.pc_offset; });
  }
  table.record = {};
  return table.ranges;
}

void JitCodeIndex::AddFrame(uint64_t code_index, int32_t frame_size, int32_t frame_complete) {
  auto it = by_code_index_.find(code_index);
  if (it == by_code_index_.end()) {
    pending_frame_[code_index] = {frame_size, frame_complete};
    return;
  }
  versions_[it->second].frame_size = frame_size;
  versions_[it->second].frame_complete = frame_complete;
  ++generation_;
}

JitSymbol JitCodeIndex::Answer(uint32_t id, uint64_t addr) {
  const Version& v = versions_[id];
  JitSymbol s;
  s.name = v.name;
  s.start = v.start;
  s.kind = v.kind;
  s.frame_size = v.frame_size;
  s.frame_complete = v.frame_complete;
  if (v.inline_table != kNone) {
    const std::vector<JitInlineRange>& table = Ranges(v.inline_table);
    const uint64_t offset = addr - v.start;
    auto it = std::lower_bound(table.begin(), table.end(), offset,
                               [](const JitInlineRange& r, uint64_t off) { return r.pc_offset < off; });
    if (it != table.end() && !it->chain.empty()) s.inlined = &it->chain;
  }
  return s;
}

std::optional<JitSymbol> JitCodeIndex::Find(uint64_t addr, uint64_t t_ns) {
  ++stats_.lookups;
  CacheEntry& slot = cache_[CacheSlot(addr)];
  if (slot.until != 0 && slot.generation == generation_ && slot.addr == addr && t_ns >= slot.from &&
      t_ns < slot.until) {
    ++stats_.cache_hits;
    return Answer(slot.version, addr);
  }
  uint32_t best = kNone, later = kNone;
  uint64_t next_change = kNever;  // the next load after t_ns covering addr
  uint64_t last_change = 0;       // the last load or unload at or before t_ns covering addr
  auto consider = [&](uint32_t id) {
    const Version& v = versions_[id];
    if (addr < v.start || addr >= v.end) return;
    if (v.t_load > t_ns) {
      next_change = std::min(next_change, v.t_load);
      if (later == kNone || v.t_load < versions_[later].t_load) later = id;
      return;
    }
    last_change = std::max(last_change, v.t_load);
    if (v.t_unload <= t_ns) {
      last_change = std::max(last_change, v.t_unload);
      return;
    }
    // Ties in time: the later record wins (ids grow with arrival).
    if (best == kNone || v.t_load > versions_[best].t_load || (v.t_load == versions_[best].t_load && id > best)) {
      best = id;
    }
  };
  if (auto page = pages_.find(addr >> kPageShift); page != pages_.end()) {
    for (uint32_t id : page->second) consider(id);
  }
  for (uint32_t id : large_) consider(id);
  if (best != kNone) {
    slot.addr = addr;
    slot.from = last_change;
    slot.until = std::min(next_change, versions_[best].t_unload);
    slot.version = best;
    slot.generation = generation_;
    return Answer(best, addr);
  }
  if (later != kNone) {
    ++stats_.fallback_later;
    return Answer(later, addr);
  }
  return std::nullopt;
}

std::vector<JitCodeIndex::VersionView> JitCodeIndex::Versions() const {
  std::vector<VersionView> out;
  out.reserve(versions_.size());
  for (const Version& v : versions_) out.push_back({v.start, v.end, v.t_load, v.t_unload, v.name});
  return out;
}

}  // namespace arcprof
