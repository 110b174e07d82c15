#include "model/signature.h"

#include <optional>

namespace arcprof::model {

std::string WithoutParams(std::string_view name) {
  // Trailing " [clone .xyz]" parts (gcc's specialized copies) are kept.
  std::string_view rest = name;
  std::string_view suffix;
  while (rest.size() > 1 && rest.back() == ']') {
    const size_t open = rest.rfind(" [clone ");
    if (open == std::string_view::npos) break;
    suffix = name.substr(open);
    rest = name.substr(0, open);
  }
  // Qualifiers of the function itself, after its parameter list.
  for (bool again = true; again;) {
    again = false;
    for (std::string_view q : {" const", " volatile", " &&", " &", " noexcept"}) {
      if (rest.size() > q.size() && rest.substr(rest.size() - q.size()) == q) {
        rest.remove_suffix(q.size());
        again = true;
      }
    }
  }
  if (rest.empty() || rest.back() != ')') return std::string(name);
  // The '(' that opens the last top-level parenthesis group.
  int depth = 0;
  size_t i = rest.size();
  while (i-- > 0) {
    if (rest[i] == ')') ++depth;
    if (rest[i] == '(' && --depth == 0) break;
  }
  if (depth != 0 || i == 0 || i == std::string_view::npos) return std::string(name);
  return std::string(rest.substr(0, i)) + std::string(suffix);
}

void DropParams(Profile& profile) {
  profile.RenameFrames([](const FrameRecord& f) -> std::optional<FrameRecord> {
    if (f.kind != FrameKind::kNative || f.symbol.empty()) return std::nullopt;
    std::string shorter = WithoutParams(f.symbol);
    if (shorter == f.symbol) return std::nullopt;
    FrameRecord r = f;
    r.symbol = std::move(shorter);
    return r;
  });
}

}  // namespace arcprof::model
