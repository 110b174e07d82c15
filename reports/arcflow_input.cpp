// Parsers for the two text inputs of the arcflow model: complete call trees and
// start/end event traces (formats in docs/arcflow.md). Both read outside
// input: every malformed line is an error naming its line number.
#include <algorithm>
#include <charconv>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "reports/arcflow.h"

namespace arcprof::reports {
using namespace arcprof::model;
namespace {

constexpr std::string_view kSpace = " \t\r\v\f";

std::string_view Trim(std::string_view s) {
  const size_t first = s.find_first_not_of(kSpace);
  if (first == std::string_view::npos) return {};
  const size_t last = s.find_last_not_of(kSpace);
  return s.substr(first, last - first + 1);
}

std::vector<std::string_view> Tokens(std::string_view s) {
  std::vector<std::string_view> tokens;
  size_t i = 0;
  while (true) {
    i = s.find_first_not_of(kSpace, i);
    if (i == std::string_view::npos) break;
    size_t end = s.find_first_of(kSpace, i);
    if (end == std::string_view::npos) end = s.size();
    tokens.push_back(s.substr(i, end - i));
    i = end;
  }
  return tokens;
}

bool ParseU64(std::string_view s, uint64_t& out) {
  if (s.empty() || s.front() < '0' || s.front() > '9') return false;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && ptr == s.data() + s.size();
}

bool ParseU32(std::string_view s, uint32_t& out) {
  uint64_t v = 0;
  if (!ParseU64(s, v) || v > 0xffffffffu) return false;
  out = static_cast<uint32_t>(v);
  return true;
}

// Calls `fn(line_number, line)` for every line; stops at the first error.
template <typename Fn>
Result<void> ForEachLine(std::string_view text, Fn&& fn) {
  size_t line_number = 0;
  while (!text.empty()) {
    ++line_number;
    size_t end = text.find('\n');
    std::string_view line = text.substr(0, end);
    text = end == std::string_view::npos ? std::string_view{} : text.substr(end + 1);
    Result<void> r = fn(line_number, line);
    if (!r) return r;
  }
  return {};
}

Error LineError(size_t line, std::string_view what) {
  return MakeError(fmt::format("line {}: {}", line, what));
}

std::string Excerpt(std::string_view s) {
  constexpr size_t kMax = 60;
  std::string out(s.substr(0, kMax));
  for (char& c : out) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '?';
  }
  if (s.size() > kMax) out += "...";
  return out;
}

// Threads and bindings shared by the two formats.
class InputBuilder {
 public:
  InputBuilder() {
    model_.bindings.unit = "resource";
    model_.bindings.occurrences = "calls";
  }

  // "#! unit X", "#! occurrences X", "#! consumers X" or "#! thread ID [NAME]".
  Result<void> Directive(size_t line, std::string_view body) {
    const auto tokens = Tokens(body);
    if (tokens.empty()) return LineError(line, "empty '#!' directive");
    const std::string_view key = tokens[0];
    if (key == "thread") {
      if (tokens.size() < 2) return LineError(line, "'#! thread' needs an id: '#! thread TID [NAME]'");
      // The name is the rest of the line and may hold spaces.
      const std::string_view after_key = Trim(Trim(body).substr(key.size()));
      const size_t id_end = std::min(after_key.find_first_of(kSpace), after_key.size());
      return SwitchThread(line, after_key.substr(0, id_end), Trim(after_key.substr(id_end)));
    }
    if (tokens.size() != 2) {
      return LineError(line, fmt::format("'#! {}' needs exactly one word", Excerpt(key)));
    }
    if (key == "unit") {
      model_.bindings.unit = std::string(tokens[1]);
    } else if (key == "occurrences") {
      model_.bindings.occurrences = std::string(tokens[1]);
    } else if (key == "consumers") {
      model_.bindings.consumers = std::string(tokens[1]);
    } else {
      return LineError(line, fmt::format("unknown directive '#! {}'; known: unit, occurrences, "
                                         "consumers, thread",
                                         Excerpt(key)));
    }
    return {};
  }

  // `id` is "TID" or "PID/TID".
  Result<void> SwitchThread(size_t line, std::string_view id, std::string_view name) {
    uint32_t pid = 0;
    uint32_t tid = 0;
    const size_t slash = id.find('/');
    const bool ok = slash == std::string_view::npos
                        ? ParseU32(id, tid)
                        : ParseU32(id.substr(0, slash), pid) && ParseU32(id.substr(slash + 1), tid);
    if (!ok) {
      return LineError(line, fmt::format("bad thread id '{}'; write TID or PID/TID (decimal)",
                                         Excerpt(id)));
    }
    current_ = ThreadSlot(pid, tid, name);
    return {};
  }

  // The state of the current thread, created on first use.
  struct Thread {
    uint32_t node = 0;
    std::vector<uint32_t> stack;  // open frames, outermost first (event traces)
  };
  Thread* CurrentIfAny() { return current_; }
  Thread& Current() {
    if (current_ == nullptr) current_ = ThreadSlot(0, 0, "");
    return *current_;
  }

  Result<void> Add(size_t line, uint32_t node, uint64_t n, uint64_t base) {
    if (__builtin_add_overflow(total_n_, n, &total_n_) ||
        __builtin_add_overflow(total_base_, base, &total_base_)) {
      return LineError(line, "the totals overflow 64 bits; use a coarser unit");
    }
    model_.tree.Add(node, n, kSamplesValue, base);
    return {};
  }

  ArcflowProfile& model() { return model_; }

 private:
  Thread* ThreadSlot(uint32_t pid, uint32_t tid, std::string_view name) {
    auto [it, inserted] = threads_.try_emplace({pid, tid});
    if (inserted) {
      const std::string consumer = fmt::format("{}_{}_{}", pid, tid, name.empty() ? "input" : name);
      it->second.node = model_.tree.Child(ArcflowProfile::kRootNode,
                                          model_.InternConsumer(consumer, ConsumerKind::kThread));
    }
    return &it->second;
  }

  ArcflowProfile model_;
  // std::map: node pointers into it stay valid as threads are added.
  std::map<std::pair<uint32_t, uint32_t>, Thread> threads_;
  Thread* current_ = nullptr;
  uint64_t total_n_ = 0;
  uint64_t total_base_ = 0;
};

bool IsDirective(std::string_view line) { return line.size() >= 2 && line.substr(0, 2) == "#!"; }

}  // namespace

Result<ArcflowProfile> ParseArcflowCallTree(std::string_view text) {
  InputBuilder builder;
  bool seen_record = false;
  bool seen_header = false;
  Result<void> r = ForEachLine(text, [&](size_t line_number, std::string_view raw) -> Result<void> {
    const std::string_view line = Trim(raw);
    if (line.empty()) return {};
    if (IsDirective(line)) return builder.Directive(line_number, line.substr(2));
    if (line.front() == '#') return {};
    const auto tokens = Tokens(line);
    uint64_t n = 0;
    uint64_t y = 0;
    const bool numbers = tokens.size() >= 2 && ParseU64(tokens[tokens.size() - 2], n) &&
                         ParseU64(tokens.back(), y);
    if (!numbers || tokens.size() < 3) {
      // One column-title line ("context n Y", no number in it) may precede the records.
      uint64_t ignored = 0;
      const bool has_number = std::any_of(tokens.begin(), tokens.end(),
                                          [&](std::string_view t) { return ParseU64(t, ignored); });
      if (!seen_record && !seen_header && !has_number) {
        seen_header = true;
        return {};
      }
      return LineError(line_number,
                       fmt::format("expected '<consumer>... <n> <Y>' (a path of at least one name, "
                                   "then two unsigned integers), got '{}'",
                                   Excerpt(line)));
    }
    seen_record = true;
    ArcflowProfile& model = builder.model();
    uint32_t node = builder.Current().node;
    for (size_t i = 0; i + 2 < tokens.size(); ++i) {
      node = model.tree.Child(node, model.InternConsumer(tokens[i], ConsumerKind::kFunction));
    }
    return builder.Add(line_number, node, n, y);
  });
  if (!r) return r.error();
  return std::move(builder.model());
}

Result<ArcflowProfile> ParseArcflowEventTrace(std::string_view text) {
  InputBuilder builder;
  bool have_metric = false;
  uint64_t last_metric = 0;
  Result<void> r = ForEachLine(text, [&](size_t line_number, std::string_view raw) -> Result<void> {
    const std::string_view line = Trim(raw);
    if (line.empty()) return {};
    if (IsDirective(line)) return builder.Directive(line_number, line.substr(2));
    if (line.front() == '#') return {};

    const size_t metric_end = line.find_first_of(kSpace);
    uint64_t metric = 0;
    if (metric_end == std::string_view::npos || !ParseU64(line.substr(0, metric_end), metric)) {
      return LineError(line_number,
                       fmt::format("expected '<metric> > name', '<metric> < name' or '<metric> "
                                   "thread <id> [name]' with an unsigned integer metric, got '{}'",
                                   Excerpt(line)));
    }
    if (have_metric && metric < last_metric) {
      return LineError(line_number, fmt::format("metric {} is smaller than the previous {}; the "
                                                "metric must never decrease",
                                                metric, last_metric));
    }
    // The resource elapsed since the previous record belongs to the frame on
    // top of the current thread's stack.
    const uint64_t elapsed = have_metric ? metric - last_metric : 0;
    have_metric = true;
    last_metric = metric;
    // A thread is made only when a record needs one, so a trace that starts
    // with a 'thread' record has no empty default thread.
    if (auto* previous = builder.CurrentIfAny(); previous != nullptr && elapsed != 0 &&
                                                 !previous->stack.empty()) {
      Result<void> added = builder.Add(line_number, previous->stack.back(), 0, elapsed);
      if (!added) return added;
    }

    const std::string_view rest = Trim(line.substr(metric_end));
    const size_t op_end = std::min(rest.find_first_of(kSpace), rest.size());
    const std::string_view op = rest.substr(0, op_end);
    const std::string_view name = Trim(rest.substr(op_end));
    if (op == "thread") {
      const size_t id_end = std::min(name.find_first_of(kSpace), name.size());
      if (id_end == 0) return LineError(line_number, "'thread' needs an id: '<metric> thread TID [name]'");
      return builder.SwitchThread(line_number, name.substr(0, id_end), Trim(name.substr(id_end)));
    }
    ArcflowProfile& model = builder.model();
    auto& thread = builder.Current();
    if (op == ">") {
      if (name.empty()) return LineError(line_number, "'>' needs a name: '<metric> > name'");
      const uint32_t parent = thread.stack.empty() ? thread.node : thread.stack.back();
      const uint32_t node = model.tree.Child(parent, model.InternConsumer(name, ConsumerKind::kFunction));
      thread.stack.push_back(node);
      return builder.Add(line_number, node, 1, 0);
    }
    if (op == "<") {
      if (thread.stack.empty()) {
        return LineError(line_number, fmt::format("'< {}' with no open frame on this thread",
                                                  Excerpt(name)));
      }
      const std::string& open = model.name(model.consumer_of(thread.stack.back()));
      if (!name.empty() && name != open) {
        return LineError(line_number, fmt::format("'< {}' does not match the open frame '{}'",
                                                  Excerpt(name), Excerpt(open)));
      }
      thread.stack.pop_back();
      return {};
    }
    return LineError(line_number, fmt::format("unknown record '{}'; expected '>', '<' or 'thread'",
                                              Excerpt(op)));
  });
  if (!r) return r.error();
  // Frames still open at the end were charged up to the last record: a trace
  // cut short is still a valid trace.
  return std::move(builder.model());
}

Result<ArcflowProfile> ParseArcflowText(std::string_view text) {
  bool is_trace = false;
  Result<void> r = ForEachLine(text, [&](size_t, std::string_view raw) -> Result<void> {
    const std::string_view line = Trim(raw);
    if (line.empty() || line.front() == '#') return {};
    const auto tokens = Tokens(line);
    uint64_t metric = 0;
    is_trace = tokens.size() >= 2 && ParseU64(tokens[0], metric) &&
               (tokens[1] == ">" || tokens[1] == "<" || tokens[1] == "thread");
    return MakeError("");  // decided on the first record line
  });
  (void)r;
  return is_trace ? ParseArcflowEventTrace(text) : ParseArcflowCallTree(text);
}

}  // namespace arcprof::reports
