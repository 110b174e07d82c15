#include "model/profile.h"

#include <algorithm>
#include <cstdio>
#include <functional>

namespace arcprof::model {

size_t FrameRecordHash::operator()(const FrameRecord& f) const {
  size_t h = std::hash<uint32_t>()(f.module);
  h = h * 1000003u ^ std::hash<std::string>()(f.symbol);
  h = h * 1000003u ^ std::hash<uint64_t>()(f.address);
  h = h * 1000003u ^ (static_cast<size_t>(f.kind) << 8 | static_cast<size_t>(f.reason) << 1 |
                      static_cast<size_t>(f.inlined));
  return h;
}

FrameTable::FrameTable() { modules_.emplace_back(); }

uint32_t FrameTable::InternModule(std::string_view path) {
  if (path.empty()) return 0;
  const size_t hash = std::hash<std::string_view>()(path);
  for (auto [it, end] = module_index_.equal_range(hash); it != end; ++it) {
    if (modules_[it->second] == path) return it->second;
  }
  const auto id = static_cast<uint32_t>(modules_.size());
  modules_.emplace_back(path);
  module_index_.emplace(hash, id);
  return id;
}

uint32_t FrameTable::Intern(const FrameRecord& frame) {
  auto it = index_.find(frame);
  if (it != index_.end()) return it->second;
  const auto id = static_cast<uint32_t>(frames_.size());
  frames_.push_back(frame);
  index_.emplace(frame, id);
  return id;
}

uint32_t FrameTable::Intern(std::string_view module, FrameRecord frame) {
  frame.module = InternModule(module);
  return Intern(frame);
}

std::vector<uint32_t> FrameTable::ImportModules(const FrameTable& other) {
  std::vector<uint32_t> map(other.module_count());
  for (uint32_t m = 0; m < map.size(); ++m) map[m] = InternModule(other.module(m));
  return map;
}

uint32_t FrameTable::Import(const FrameTable& other, uint32_t id, std::span<const uint32_t> module_map) {
  FrameRecord frame = other.at(id);
  frame.module = module_map[frame.module];
  return Intern(frame);
}

FrameTable FrameTable::ModulesOnly() const {
  FrameTable table;
  table.modules_ = modules_;
  table.module_index_ = module_index_;
  return table;
}

CallTree::CallTree() { nodes_.push_back(Node{}); }

std::vector<uint64_t>& CallTree::Column(size_t type) {
  // Every column is as long as nodes_ (Child grows them all together).
  while (values_.size() <= type) values_.emplace_back(nodes_.size(), 0);
  return values_[type];
}

uint32_t CallTree::Child(uint32_t parent, uint32_t frame) {
  const uint64_t key = static_cast<uint64_t>(parent) << 32 | frame;
  bool inserted = false;
  const uint32_t id = child_index_.FindOrInsert(key, static_cast<uint32_t>(nodes_.size()),
                                                [this](uint32_t n) { return KeyOf(n); }, inserted);
  if (inserted) {
    nodes_.push_back(Node{parent, frame, 0});
    for (std::vector<uint64_t>& column : values_) column.push_back(0);
  }
  return id;
}

uint32_t CallTree::FindChild(uint32_t parent, uint32_t frame) const {
  return child_index_.Find(static_cast<uint64_t>(parent) << 32 | frame, kNoNode,
                           [this](uint32_t n) { return KeyOf(n); });
}

void CallTree::Reserve(size_t nodes) {
  nodes_.reserve(nodes);
  for (std::vector<uint64_t>& column : values_) column.reserve(nodes);
  child_index_.Reserve(nodes, [this](uint32_t n) { return KeyOf(n); });
}

size_t CallTree::MemoryBytes() const {
  size_t bytes = nodes_.capacity() * sizeof(Node) + values_.capacity() * sizeof(values_[0]) +
                 child_index_.bytes();
  for (const std::vector<uint64_t>& column : values_) bytes += column.capacity() * sizeof(uint64_t);
  return bytes;
}

uint32_t CallTree::AddStack(std::span<const uint32_t> frames_root_first, uint64_t count,
                            uint64_t resource) {
  uint32_t node = 0;
  for (uint32_t frame : frames_root_first) node = Child(node, frame);
  Add(node, count, kSamplesValue, resource);
  return node;
}

void CallTree::Add(uint32_t node, uint64_t n, size_t type, uint64_t value) {
  nodes_[node].n += n;
  if (value != 0) Column(type)[node] += value;
}

void CallTree::Merge(const CallTree& other, std::span<const uint32_t> frame_map,
                     std::span<const size_t> type_map) {
  // Parents precede their children in both trees, so one pass maps every node.
  std::vector<uint32_t> mapped(other.nodes_.size(), 0);
  for (uint32_t i = 0; i < other.nodes_.size(); ++i) {
    const Node& src = other.nodes_[i];
    if (i != 0) {
      const uint32_t frame =
          frame_map.empty() || src.frame >= frame_map.size() ? src.frame : frame_map[src.frame];
      mapped[i] = Child(mapped[src.parent], frame);
    }
    nodes_[mapped[i]].n += src.n;
  }
  for (size_t type = 0; type < other.values_.size(); ++type) {
    const size_t into = type < type_map.size() ? type_map[type] : type;
    const std::vector<uint64_t>& from = other.values_[type];
    std::vector<uint64_t>& column = Column(into);
    for (size_t i = 0; i < from.size(); ++i) column[mapped[i]] += from[i];
  }
}

void CallTree::RemapFrames(std::span<const uint32_t> frame_map) {
  CallTree remapped;
  remapped.Merge(*this, frame_map);
  *this = std::move(remapped);
}

void CallTree::TransformValues(size_t type, const std::function<uint64_t(uint32_t, uint64_t)>& f) {
  std::vector<uint64_t>& column = Column(type);
  for (uint32_t i = 0; i < column.size(); ++i) column[i] = f(i, column[i]);
}

CallTree CallTree::Rerooted(const std::function<bool(uint32_t frame)>& is_root, bool under_top) const {
  constexpr uint32_t kDropped = 0xffffffffu;
  CallTree out;
  std::vector<uint32_t> mapped(nodes_.size(), kDropped);
  std::vector<uint32_t> top(under_top ? nodes_.size() : 0);  // each node's child of node 0
  // Node 0 is not "below" anything: the first match on a path starts a new top.
  for (uint32_t i = 1; i < nodes_.size(); ++i) {
    const Node& node = nodes_[i];
    if (under_top) {
      top[i] = node.parent == 0 ? i : top[node.parent];
      if (node.parent == 0) continue;  // copied only when something below matches
    }
    uint32_t parent = node.parent == 0 ? kDropped : mapped[node.parent];
    if (parent == kDropped) {
      if (!is_root(node.frame)) continue;
      parent = under_top ? out.Child(0, nodes_[top[i]].frame) : 0;
    }
    mapped[i] = out.Child(parent, node.frame);
    out.nodes_[mapped[i]].n += node.n;
  }
  for (size_t type = 0; type < values_.size(); ++type) {
    std::vector<uint64_t>& column = out.Column(type);
    for (size_t i = 1; i < nodes_.size(); ++i) {
      if (mapped[i] != kDropped) column[mapped[i]] += values_[type][i];
    }
  }
  return out;
}

CallTree CallTree::Pruned(const std::function<bool(uint32_t node)>& keep, uint32_t bucket_frame,
                          BucketN bucket_n) const {
  constexpr uint32_t kDropped = 0xffffffffu;
  // Whole-subtree sums, bottom-up (children follow parents).
  std::vector<uint64_t> sum_n(nodes_.size());
  for (size_t i = 0; i < nodes_.size(); ++i) sum_n[i] = nodes_[i].n;
  std::vector<std::vector<uint64_t>> sum = values_;
  for (size_t i = nodes_.size(); i-- > 1;) {
    sum_n[nodes_[i].parent] += sum_n[i];
    for (std::vector<uint64_t>& column : sum) column[nodes_[i].parent] += column[i];
  }
  CallTree out;
  // Node i of this tree goes to mapped[i] with its own values, or to a
  // bucket with its subtree's (whole[i]).
  std::vector<uint32_t> mapped(nodes_.size(), kDropped);
  std::vector<bool> whole(nodes_.size(), false);
  mapped[0] = 0;
  for (uint32_t i = 1; i < nodes_.size(); ++i) {
    const uint32_t parent = whole[nodes_[i].parent] ? kDropped : mapped[nodes_[i].parent];
    if (parent == kDropped) continue;  // inside a pruned subtree: already counted
    if (!keep(i)) {
      const uint64_t n = bucket_n == BucketN::kSubtree ? sum_n[i] : nodes_[i].n;
      const bool empty = n == 0 && std::all_of(sum.begin(), sum.end(),
                                                      [&](const auto& column) { return column[i] == 0; });
      if (empty) continue;  // nothing to keep: no bucket for it
      mapped[i] = out.Child(parent, bucket_frame);
      whole[i] = true;
      continue;
    }
    mapped[i] = out.Child(parent, nodes_[i].frame);
  }
  for (uint32_t i = 0; i < nodes_.size(); ++i) {
    if (mapped[i] == kDropped) continue;
    const bool subtree_n = whole[i] && bucket_n == BucketN::kSubtree;
    out.nodes_[mapped[i]].n += subtree_n ? sum_n[i] : nodes_[i].n;
    for (size_t type = 0; type < values_.size(); ++type) {
      out.Column(type)[mapped[i]] += whole[i] ? sum[type][i] : values_[type][i];
    }
  }
  return out;
}

void CallTree::Accumulate(std::vector<uint64_t>& values) const {
  for (size_t i = std::min(values.size(), nodes_.size()); i-- > 1;) values[nodes_[i].parent] += values[i];
}

std::vector<uint64_t> CallTree::Cumulative(size_t type) const {
  std::vector<uint64_t> cum = type < values_.size() ? values_[type] : std::vector<uint64_t>(nodes_.size(), 0);
  Accumulate(cum);
  return cum;
}

std::vector<uint32_t> CallTree::Depths() const {
  std::vector<uint32_t> depth(nodes_.size(), 0);
  for (size_t i = 1; i < nodes_.size(); ++i) depth[i] = depth[nodes_[i].parent] + 1;
  return depth;
}

ChildLists::ChildLists(const CallTree& tree) {
  const auto& nodes = tree.nodes();
  begin_.assign(nodes.size() + 1, 0);
  for (size_t v = 1; v < nodes.size(); ++v) ++begin_[nodes[v].parent + 1];
  for (size_t v = 0; v < nodes.size(); ++v) begin_[v + 1] += begin_[v];
  list_.resize(nodes.size() > 0 ? nodes.size() - 1 : 0);
  std::vector<uint32_t> fill(begin_.begin(), begin_.end() - 1);
  for (size_t v = 1; v < nodes.size(); ++v) list_[fill[nodes[v].parent]++] = static_cast<uint32_t>(v);
}

uint64_t CallTree::total(size_t type) const {
  uint64_t total = 0;
  if (type < values_.size()) {
    for (uint64_t v : values_[type]) total += v;
  }
  return total;
}

std::optional<size_t> Profile::ValueIndex(std::string_view name) const {
  for (size_t i = 0; i < value_types.size(); ++i) {
    if (value_types[i].name == name) return i;
  }
  return std::nullopt;
}

size_t Profile::DeclareValue(const ValueType& type) {
  if (auto i = ValueIndex(type.name)) return *i;
  value_types.push_back(type);
  return value_types.size() - 1;
}

uint32_t* Profile::LatestSlot(const std::string& host, uint32_t pid, uint32_t tid, bool* inserted) {
  if (host.empty()) {
    auto [it, added] = thread_index_.try_emplace(static_cast<uint64_t>(pid) << 32 | tid, kNoThread);
    *inserted = added;
    return &it->second;
  }
  auto [it, added] = host_thread_index_.try_emplace({host, pid, tid}, kNoThread);
  *inserted = added;
  return &it->second;
}

uint32_t Profile::AddThread(uint32_t* slot, const std::string& host, uint32_t pid, uint32_t tid,
                            uint64_t process_start_ns) {
  const uint32_t index = static_cast<uint32_t>(threads.size());
  ThreadRecord t;
  t.pid = pid;
  t.tid = tid;
  t.host = host;
  t.process_start_ns = process_start_ns;
  threads.push_back(std::move(t));
  earlier_.resize(threads.size(), kNoThread);
  earlier_[index] = *slot;
  *slot = index;
  return index;
}

uint32_t ExitedProcessesTid(std::string_view name) {
  uint32_t h = 2166136261u;
  for (const char c : name) {
    h ^= static_cast<unsigned char>(c);
    h *= 16777619u;
  }
  // 1 .. 0xfffffffe: 0 is "[other processes]", 0xffffffff a process's
  // "[exited threads]".
  return h % 0xfffffffeu + 1;
}

uint32_t NextExitedProcessesTid(uint32_t tid) { return tid >= 0xfffffffeu ? 1 : tid + 1; }

uint32_t Profile::ThreadIndex(const std::string& host, uint32_t pid, uint32_t tid, uint64_t process_start_ns) {
  bool inserted = false;
  uint32_t* slot = LatestSlot(host, pid, tid, &inserted);
  // The records of these ids, latest first: usually one. Each links to an
  // earlier (smaller) index, so the walk ends.
  for (uint32_t i = *slot; i < threads.size(); i = i < earlier_.size() && earlier_[i] < i ? earlier_[i] : kNoThread) {
    if (threads[i].process_start_ns == process_start_ns) return i;
  }
  return AddThread(slot, host, pid, tid, process_start_ns);
}

uint32_t Profile::ThreadIndex(uint32_t pid, uint32_t tid) {
  bool inserted = false;
  uint32_t* slot = LatestSlot("", pid, tid, &inserted);
  if (*slot < threads.size()) return *slot;
  return AddThread(slot, "", pid, tid, 0);
}

void Profile::Reindex() {
  thread_index_.clear();
  host_thread_index_.clear();
  earlier_.assign(threads.size(), kNoThread);
  for (uint32_t i = 0; i < threads.size(); ++i) {
    bool inserted = false;
    uint32_t* slot = LatestSlot(threads[i].host, threads[i].pid, threads[i].tid, &inserted);
    earlier_[i] = *slot;
    *slot = i;
  }
}

size_t Profile::FoldThreads(const std::function<std::optional<ThreadRecord>(const ThreadRecord&)>& group_of) {
  if (multi_host()) return 0;  // captures of one machine only: records by (pid, tid)
  std::vector<std::optional<ThreadRecord>> groups(threads.size());
  size_t folded = 0;
  for (size_t i = 0; i < threads.size(); ++i) {
    groups[i] = group_of(threads[i]);
    if (groups[i]) ++folded;
  }
  if (folded == 0) return 0;
  std::vector<ThreadRecord> kept;
  kept.reserve(threads.size() - folded);
  for (size_t i = 0; i < threads.size(); ++i) {
    if (!groups[i]) kept.push_back(std::move(threads[i]));
  }
  std::vector<ThreadRecord> from = std::move(threads);
  threads = std::move(kept);
  Reindex();
  // A group is found by its ids and process start (0 for the folded groups
  // of the recorder), made from the record group_of returned when new.
  for (size_t i = 0; i < from.size(); ++i) {
    if (!groups[i]) continue;
    ThreadRecord& g = *groups[i];
    const size_t before = threads.size();
    const uint32_t index = ThreadIndex(g.host, g.pid, g.tid, g.process_start_ns);
    if (threads.size() != before) {
      g.tree = CallTree();
      threads[index] = std::move(g);
    }
    threads[index].tree.Merge(from[i].tree);
  }
  return folded;
}

uint64_t Profile::total_samples() const {
  uint64_t total = 0;
  for (const ThreadRecord& t : threads) total += t.tree.total(kSamplesValue);
  return total;
}

size_t Profile::RenameFrames(
    const std::function<std::optional<FrameRecord>(const FrameRecord&)>& rename) {
  FrameTable renamed_table = frames.ModulesOnly();  // the records keep their module ids
  std::vector<uint32_t> remap(frames.size());
  size_t renamed = 0;
  for (uint32_t id = 0; id < frames.size(); ++id) {
    std::optional<FrameRecord> r = rename(frames.at(id));
    if (r) ++renamed;
    remap[id] = renamed_table.Intern(r ? *r : frames.at(id));
  }
  if (renamed == 0) return 0;
  frames = std::move(renamed_table);
  for (ThreadRecord& thread : threads) thread.tree.RemapFrames(remap);
  return renamed;
}

}  // namespace arcprof::model
