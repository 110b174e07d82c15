#include "model/profile.h"

#include <cstdio>
#include <functional>

namespace arcprof::model {

size_t FrameRecordHash::operator()(const FrameRecord& f) const {
  size_t h = std::hash<std::string>()(f.module);
  h = h * 1000003u ^ std::hash<std::string>()(f.symbol);
  h = h * 1000003u ^ std::hash<uint64_t>()(f.address);
  h = h * 1000003u ^ (static_cast<size_t>(f.kind) << 8 | static_cast<size_t>(f.reason) << 1 |
                      static_cast<size_t>(f.inlined));
  return h;
}

uint32_t FrameTable::Intern(const FrameRecord& frame) {
  auto it = index_.find(frame);
  if (it != index_.end()) return it->second;
  const auto id = static_cast<uint32_t>(frames_.size());
  frames_.push_back(frame);
  index_.emplace(frame, id);
  return id;
}

CallTree::CallTree() { nodes_.push_back(Node{}); }

uint32_t CallTree::Child(uint32_t parent, uint32_t frame) {
  const uint64_t key = static_cast<uint64_t>(parent) << 32 | frame;
  auto [it, inserted] = child_index_.try_emplace(key, static_cast<uint32_t>(nodes_.size()));
  if (inserted) nodes_.push_back(Node{parent, frame, 0, 0});
  return it->second;
}

uint32_t CallTree::AddStack(std::span<const uint32_t> frames_root_first, uint64_t count,
                            uint64_t resource) {
  uint32_t node = 0;
  for (uint32_t frame : frames_root_first) node = Child(node, frame);
  Add(node, count, resource);
  return node;
}

void CallTree::Add(uint32_t node, uint64_t n, uint64_t base, uint64_t offcpu) {
  Node& d = nodes_[node];
  d.n += n;
  d.base += base;
  d.offcpu += offcpu;
}

void CallTree::Merge(const CallTree& other, std::span<const uint32_t> frame_map) {
  // Parents precede their children in both trees, so one pass maps every node.
  std::vector<uint32_t> mapped(other.nodes_.size(), 0);
  for (uint32_t i = 0; i < other.nodes_.size(); ++i) {
    const Node& src = other.nodes_[i];
    if (i != 0) {
      const uint32_t frame =
          frame_map.empty() || src.frame >= frame_map.size() ? src.frame : frame_map[src.frame];
      mapped[i] = Child(mapped[src.parent], frame);
    }
    Add(mapped[i], src.n, src.base, src.offcpu);
  }
}

void CallTree::RemapFrames(std::span<const uint32_t> frame_map) {
  CallTree remapped;
  remapped.Merge(*this, frame_map);
  *this = std::move(remapped);
}

void CallTree::TransformBase(const std::function<uint64_t(const Node&)>& f) {
  for (Node& node : nodes_) node.base = f(node);
}

CallTree CallTree::Rerooted(const std::function<bool(uint32_t frame)>& is_root) const {
  constexpr uint32_t kDropped = 0xffffffffu;
  CallTree out;
  std::vector<uint32_t> mapped(nodes_.size(), kDropped);
  // Node 0 is not "below" anything: the first match on a path starts a new top.
  for (uint32_t i = 1; i < nodes_.size(); ++i) {
    const Node& node = nodes_[i];
    uint32_t parent = node.parent == 0 ? kDropped : mapped[node.parent];
    if (parent == kDropped) {
      if (!is_root(node.frame)) continue;
      parent = 0;
    }
    mapped[i] = out.Child(parent, node.frame);
    out.Add(mapped[i], node.n, node.base, node.offcpu);
  }
  return out;
}

std::vector<uint64_t> CallTree::CumulativeBase() const {
  std::vector<uint64_t> cum(nodes_.size());
  for (size_t i = 0; i < nodes_.size(); ++i) cum[i] = nodes_[i].base;
  for (size_t i = nodes_.size(); i-- > 1;) cum[nodes_[i].parent] += cum[i];
  return cum;
}

CallTree CallTree::Pruned(const std::function<bool(uint32_t node)>& keep,
                          uint32_t bucket_frame) const {
  constexpr uint32_t kDropped = 0xffffffffu;
  // Whole-subtree sums, bottom-up (children follow parents).
  std::vector<Node> sum = nodes_;
  for (size_t i = nodes_.size(); i-- > 1;) {
    Node& p = sum[nodes_[i].parent];
    p.n += sum[i].n;
    p.base += sum[i].base;
    p.offcpu += sum[i].offcpu;
  }
  CallTree out;
  std::vector<uint32_t> mapped(nodes_.size(), kDropped);
  mapped[0] = 0;
  out.Add(0, nodes_[0].n, nodes_[0].base, nodes_[0].offcpu);
  for (uint32_t i = 1; i < nodes_.size(); ++i) {
    const uint32_t parent = mapped[nodes_[i].parent];
    if (parent == kDropped) continue;  // inside a pruned subtree: already counted
    if (!keep(i)) {
      out.Add(out.Child(parent, bucket_frame), sum[i].n, sum[i].base, sum[i].offcpu);
      continue;
    }
    mapped[i] = out.Child(parent, nodes_[i].frame);
    out.Add(mapped[i], nodes_[i].n, nodes_[i].base, nodes_[i].offcpu);
  }
  return out;
}

uint64_t CallTree::total_base() const {
  uint64_t total = 0;
  for (const Node& n : nodes_) total += n.base;
  return total;
}

uint32_t Profile::ThreadIndex(const std::string& host, uint32_t pid, uint32_t tid) {
  if (host.empty()) return ThreadIndex(pid, tid);
  auto [it, inserted] = host_thread_index_.try_emplace({host, pid, tid}, static_cast<uint32_t>(threads.size()));
  if (inserted) {
    ThreadRecord t;
    t.pid = pid;
    t.tid = tid;
    t.host = host;
    threads.push_back(std::move(t));
  }
  return it->second;
}

uint32_t Profile::ThreadIndex(uint32_t pid, uint32_t tid) {
  const uint64_t key = static_cast<uint64_t>(pid) << 32 | tid;
  auto [it, inserted] = thread_index_.try_emplace(key, static_cast<uint32_t>(threads.size()));
  if (inserted) {
    ThreadRecord t;
    t.pid = pid;
    t.tid = tid;
    threads.push_back(std::move(t));
  }
  return it->second;
}

uint64_t Profile::total_samples() const {
  uint64_t total = 0;
  for (const ThreadRecord& t : threads) total += t.tree.total_base();
  return total;
}

size_t Profile::RenameFrames(
    const std::function<std::optional<FrameRecord>(const FrameRecord&)>& rename) {
  FrameTable renamed_table;
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
