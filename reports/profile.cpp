#include "reports/profile.h"

#include <functional>

namespace arcprof {

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

}  // namespace arcprof
