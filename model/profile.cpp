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

void CallTree::AddStack(std::span<const uint32_t> frames_root_first, uint64_t count,
                        uint64_t resource) {
  uint32_t node = 0;
  for (uint32_t frame : frames_root_first) node = Child(node, frame);
  nodes_[node].n += count;
  nodes_[node].base += resource;
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
    trees.emplace_back();
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
    trees.emplace_back();
  }
  return it->second;
}

uint64_t Profile::total_samples() const {
  uint64_t total = 0;
  for (const CallTree& t : trees) total += t.total_base();
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
  for (CallTree& tree : trees) {
    // Parents come before their children, so one pass rebuilds the tree.
    const std::vector<CallTree::Node>& old = tree.nodes();
    CallTree merged;
    std::vector<uint32_t> node_map(old.size(), 0);
    for (uint32_t i = 1; i < old.size(); ++i) {
      const uint32_t frame = old[i].frame == CallTree::kNoFrame ? CallTree::kNoFrame : remap[old[i].frame];
      const uint32_t parent = old[i].parent < i ? node_map[old[i].parent] : 0;
      node_map[i] = merged.Child(parent, frame);
      CallTree::Node& n = merged.mutable_nodes()[node_map[i]];
      n.n += old[i].n;
      n.base += old[i].base;
      n.offcpu += old[i].offcpu;
    }
    merged.mutable_nodes()[0].n += old[0].n;
    merged.mutable_nodes()[0].base += old[0].base;
    merged.mutable_nodes()[0].offcpu += old[0].offcpu;
    tree = std::move(merged);
  }
  return renamed;
}

}  // namespace arcprof::model
