#include "reports/folded.h"

#include "model/frame_name.h"

#include <algorithm>
#include <ostream>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace arcprof::reports {
using namespace arcprof::model;
namespace {

// Makes a name safe inside a folded line: ';' separates frames, a newline
// separates lines, and a name ending in " <digits>" would be read as the count
// (flamegraph.pl splits at the last whitespace run), so that space becomes '_'.
std::string Sanitize(std::string name) {
  for (char& c : name) {
    if (c == ';') {
      c = ':';
    } else if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
      c = '?';
    }
  }
  size_t digits_start = name.size();
  while (digits_start > 0 && name[digits_start - 1] >= '0' && name[digits_start - 1] <= '9') {
    --digits_start;
  }
  if (digits_start < name.size() && digits_start > 0 && name[digits_start - 1] == ' ') {
    name[digits_start - 1] = '_';
  }
  if (name.empty()) name = "[unknown]";
  return name;
}

}  // namespace

std::string FoldedFrameName(const FrameTable& frames, uint32_t id) {
  const FrameRecord& frame = frames.at(id);
  std::string name = Sanitize(FrameDisplayName(frame, frames.module_of(frame)));
  if (frame.inlined) return name + "_[i]";
  switch (frame.kind) {
    case FrameKind::kKernel: return name + "_[k]";
    case FrameKind::kJit:
    case FrameKind::kInterpreted: return name + "_[j]";
    case FrameKind::kNative:
    case FrameKind::kUnknown: break;
  }
  return name;
}

std::string FoldedProcessName(const ThreadRecord& thread) {
  std::string name = Sanitize(ProcessName(thread));
  for (char& c : name) {
    if (c == ' ') c = '_';
  }
  return name;
}

std::string FoldedHostName(const ThreadRecord& thread) {
  std::string name = Sanitize(thread.host);
  for (char& c : name) {
    if (c == ' ') c = '_';
  }
  return name;
}

std::string FoldedGroupName(const ThreadRecord& thread, std::string_view group_by) {
  const ProcessIdentity& id = thread.identity;
  std::string name;
  if (group_by == "service") {
    name = id.service_name.empty() ? ProcessName(thread) : id.service_name;
  } else if (group_by == "container") {
    name = id.container_id.empty() ? "[no container]" : ShortContainerId(id.container_id);
  } else if (group_by == "pod") {
    name = id.pod_uid.empty() ? "[no pod]" : id.pod_uid;
  } else {
    return {};
  }
  name = Sanitize(name);
  for (char& c : name) {
    if (c == ' ') c = '_';
  }
  return name;
}

namespace {

// Every selected thread's tree merged into one call tree (model::CallTree)
// whose frame ids are folded names: node 0's children are the processes, below
// them the frames, so threads of one process with the same stack share nodes.
// It is then walked depth first with one growing line: the work is the size of
// the output, never a walk to the root per stack, and nothing holds all lines
// at once.
class FoldedTree {
 public:
  FoldedTree(const Profile& profile, const ThreadFilter& filter, const Metric& metric, std::string_view group_by) {
    std::vector<int32_t> name_of_frame(profile.frames.size(), -1);
    for (size_t t = 0; t < profile.threads.size(); ++t) {
      const ThreadRecord& thread = profile.threads[t];
      if (!filter.Matches(thread)) continue;
      std::string top = FoldedProcessName(thread);
      if (const std::string group = FoldedGroupName(thread, group_by); !group.empty()) top = group + ";" + top;
      if (!thread.host.empty()) top = FoldedHostName(thread) + ";" + top;
      const uint32_t process_name = Intern(top);
      const uint32_t root = tree_.Child(0, process_name);
      const auto& nodes = profile.threads[t].tree.nodes();
      const std::vector<uint64_t> values = metric.Values(thread);
      mapped_.assign(nodes.size(), root);
      depth_.assign(nodes.size(), 0);
      for (size_t i = 1; i < nodes.size(); ++i) {
        const uint32_t parent = nodes[i].parent;
        depth_[i] = depth_[parent] + 1;
        if (depth_[i] <= kMaxFoldedDepth) {
          int32_t& name = name_of_frame[nodes[i].frame];
          if (name < 0) name = static_cast<int32_t>(Intern(FoldedFrameName(profile.frames, nodes[i].frame)));
          mapped_[i] = tree_.Child(mapped_[parent], static_cast<uint32_t>(name));
        } else if (depth_[i] == kMaxFoldedDepth + 1) {
          mapped_[i] = tree_.Child(mapped_[parent], Intern("[deeper frames cut]"));
        } else {
          mapped_[i] = mapped_[parent];  // everything deeper counts on the cut marker
        }
        tree_.Add(mapped_[i], 0, kSamplesValue, values[i]);
      }
    }
  }

  // Calls emit(line, count) for every stack with samples, sorted by line text
  // within a process (children in name order), processes in name order.
  template <typename Emit>
  void Walk(Emit&& emit) {
    ChildLists children(tree_);
    const auto& nodes = tree_.nodes();
    children.Sort([&](uint32_t a, uint32_t b) { return names_.at(nodes[a].frame).symbol < names_.at(nodes[b].frame).symbol; });
    std::string line;
    struct Frame {
      std::span<const uint32_t> children;
      size_t line_length;
      size_t next = 0;
    };
    std::vector<Frame> stack;
    for (const uint32_t process : children.of(0)) {
      line = names_.at(nodes[process].frame).symbol;
      stack.push_back({children.of(process), line.size()});
      while (!stack.empty()) {
        Frame& top = stack.back();
        if (top.next == top.children.size()) {
          stack.pop_back();
          continue;
        }
        const uint32_t child = top.children[top.next++];
        line.resize(top.line_length);
        line += ';';
        line += names_.at(nodes[child].frame).symbol;
        if (const uint64_t count = tree_.value(child, kSamplesValue); count > 0) emit(std::string_view(line), count);
        stack.push_back({children.of(child), line.size()});
      }
    }
  }

 private:
  // The folded names, each held once: a frame table whose records are names only.
  uint32_t Intern(const std::string& name) { return InternName(names_, name); }

  CallTree tree_;
  FrameTable names_;
  std::vector<uint32_t> mapped_;
  std::vector<uint32_t> depth_;
};

}  // namespace

std::map<std::string, uint64_t> FoldStacks(const Profile& profile, const ThreadFilter& filter,
                                           const Metric& metric, std::string_view group_by) {
  std::map<std::string, uint64_t> stacks;
  FoldedTree(profile, filter, metric, group_by).Walk([&](std::string_view line, uint64_t count) {
    stacks[std::string(line)] += count;
  });
  return stacks;
}

void WriteFolded(const Profile& profile, const ThreadFilter& filter, std::ostream& out,
                 const Metric& metric, std::string_view group_by) {
  FoldedTree(profile, filter, metric, group_by).Walk([&](std::string_view line, uint64_t count) {
    out << line << ' ' << count << '\n';
  });
}

}  // namespace arcprof::reports
