#include "reports/folded.h"

#include <ostream>
#include <vector>

namespace arcprof {
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

std::string BaseName(const std::string& path) {
  const auto slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

}  // namespace

std::string FoldedFrameName(const FrameRecord& frame) {
  std::string name;
  if (!frame.symbol.empty()) {
    name = frame.symbol;
  } else if (frame.reason == UnknownReason::kTruncated) {
    name = "[truncated]";
  } else {
    const std::string base = BaseName(frame.module);
    if (base.empty()) {
      name = "[unknown]";
    } else if (base.front() == '[' && base.back() == ']') {
      name = base;  // already a pseudo name such as [vdso]
    } else {
      name = "[" + base + "]";
    }
  }
  name = Sanitize(std::move(name));
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

std::map<std::string, uint64_t> FoldStacks(const Profile& profile, const ThreadFilter& filter) {
  std::map<std::string, uint64_t> stacks;
  std::vector<std::string> names(profile.frames.size());  // folded names, computed once
  std::vector<uint32_t> path;
  for (size_t t = 0; t < profile.threads.size() && t < profile.trees.size(); ++t) {
    const ThreadRecord& thread = profile.threads[t];
    if (!filter.Matches(thread)) continue;
    const std::string process = FoldedProcessName(thread);
    const auto& nodes = profile.trees[t].nodes();
    for (size_t i = 0; i < nodes.size(); ++i) {
      if (nodes[i].base == 0) continue;
      path.clear();
      for (size_t n = i; n != 0; n = nodes[n].parent) path.push_back(nodes[n].frame);
      std::string line = process;
      for (auto it = path.rbegin(); it != path.rend(); ++it) {
        std::string& name = names[*it];
        if (name.empty()) name = FoldedFrameName(profile.frames.at(*it));
        line += ';';
        line += name;
      }
      stacks[line] += nodes[i].base;
    }
  }
  return stacks;
}

void WriteFolded(const Profile& profile, const ThreadFilter& filter, std::ostream& out) {
  for (const auto& [stack, count] : FoldStacks(profile, filter)) out << stack << ' ' << count << '\n';
}

}  // namespace arcprof
