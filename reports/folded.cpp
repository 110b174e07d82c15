#include "reports/folded.h"

#include "model/fold_by_name.h"
#include "model/frame_name.h"

#include <algorithm>
#include <ostream>
#include <string_view>
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

namespace {

// A name of the fold as a folded element: sanitized, then the kind suffix.
std::string FoldedName(const std::string& display_name, NameKind kind) {
  std::string name = Sanitize(display_name);
  switch (kind) {
    case NameKind::kInlined: return name + "_[i]";
    case NameKind::kKernel: return name + "_[k]";
    case NameKind::kJit:
    case NameKind::kInterpreted: return name + "_[j]";
    default: break;
  }
  return name;
}

}  // namespace

std::string FoldedFrameName(const FrameTable& frames, uint32_t id, bool lines) {
  const FrameRecord& frame = frames.at(id);
  const std::string_view module = frames.module_of(frame);
  return FoldedName(lines ? FrameDisplayNameWithLine(frame, module) : FrameDisplayName(frame, module),
                    NameKindOf(frame));
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

// The fold by name (model/fold_by_name.h) with one level above the frames,
// "[host;][group;]process", so that threads of one process with the same stack
// share nodes, its names rewritten as folded elements (FoldedName: names that
// then read the same become one node) and cut at kMaxFoldedDepth. It is then
// walked depth first with one growing line: the work is the size of the
// output, never a walk to the root per stack, and nothing holds all lines at
// once.
class FoldedTree {
 public:
  FoldedTree(const Profile& profile, const ThreadFilter& filter, const Metric& metric, std::string_view group_by,
             bool lines) {
    FoldOptions options;
    options.lines = lines;
    options.levels = [group_by](const ThreadRecord& thread, std::vector<std::string>& levels) {
      std::string top = FoldedProcessName(thread);
      if (const std::string group = FoldedGroupName(thread, group_by); !group.empty()) top = group + ";" + top;
      if (!thread.host.empty()) top = FoldedHostName(thread) + ";" + top;
      levels.push_back(std::move(top));
    };
    NameFold fold = FoldByName(profile, filter, metric, options);
    tree_ = std::move(fold.tree);
    // Each name as a folded element, in id order: while no two names become
    // one element the ids stay the same and the tree needs no renumbering.
    std::vector<uint32_t> folded(fold.names.size());
    bool merged = false;
    for (uint32_t id = 0; id < folded.size(); ++id) {
      const NameKind kind = fold.names.kind(id);
      folded[id] = kind == NameKind::kGroup ? names_.Intern(fold.names.name(id), kind)
                                            : names_.Intern(FoldedName(fold.names.name(id), kind), NameKind::kFunction);
      merged = merged || folded[id] != id;
    }
    if (merged) tree_.RemapFrames(folded);
    // Frames deeper than kMaxFoldedDepth below the process (at depth 1) fold
    // into one "[deeper frames cut]" element: the output stays bounded.
    constexpr uint32_t kDeepest = kMaxFoldedDepth + 1;
    const std::vector<uint32_t> depth = tree_.Depths();
    if (std::any_of(depth.begin(), depth.end(), [](uint32_t d) { return d > kDeepest; })) {
      tree_ = tree_.Pruned([&](uint32_t node) { return depth[node] <= kDeepest; },
                           names_.Intern("[deeper frames cut]", NameKind::kFunction));
    }
  }

  // Calls emit(line, count) for every stack with samples, sorted by line text
  // within a process (children in name order), processes in name order.
  template <typename Emit>
  void Walk(Emit&& emit) {
    ChildLists children(tree_);
    const auto& nodes = tree_.nodes();
    children.Sort([&](uint32_t a, uint32_t b) { return names_.name(nodes[a].frame) < names_.name(nodes[b].frame); });
    std::string line;
    struct Frame {
      std::span<const uint32_t> children;
      size_t line_length;
      size_t next = 0;
    };
    std::vector<Frame> stack;
    for (const uint32_t process : children.of(0)) {
      line = names_.name(nodes[process].frame);
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
        line += names_.name(nodes[child].frame);
        if (const uint64_t count = tree_.value(child, kSamplesValue); count > 0) emit(std::string_view(line), count);
        stack.push_back({children.of(child), line.size()});
      }
    }
  }

 private:
  CallTree tree_;
  NamePool names_;  // the folded elements, each held once
};

}  // namespace

std::map<std::string, uint64_t> FoldStacks(const Profile& profile, const ThreadFilter& filter,
                                           const Metric& metric, std::string_view group_by, bool lines) {
  std::map<std::string, uint64_t> stacks;
  FoldedTree(profile, filter, metric, group_by, lines).Walk([&](std::string_view line, uint64_t count) {
    stacks[std::string(line)] += count;
  });
  return stacks;
}

void WriteFolded(const Profile& profile, const ThreadFilter& filter, std::ostream& out,
                 const Metric& metric, std::string_view group_by, bool lines) {
  FoldedTree(profile, filter, metric, group_by, lines).Walk([&](std::string_view line, uint64_t count) {
    out << line << ' ' << count << '\n';
  });
}

}  // namespace arcprof::reports
