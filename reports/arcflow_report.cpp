// The three arcflow reports: xtree (the call tree), xarc (one stanza per
// consumer with its parents and children) and xprof (flat), in text and JSON.
#include <algorithm>
#include <cmath>
#include <iterator>
#include <ostream>
#include <unordered_map>
#include <utility>

#include <fmt/format.h>

#include "reports/arcflow.h"
#include "model/flat_index.h"
#include "reports/export_text.h"
#include "reports/json_writer.h"

namespace arcprof::reports {
using namespace arcprof::model;
namespace {

constexpr uint32_t kNone = ArcflowProfile::kNone;

// Per node: whether no ancestor has the same consumer (only those outermost
// occurrences add their cum to the consumer's cum), and the cum that flows
// from the parent's consumer P into this node: the node's cum minus the
// subtrees below it that re-enter P, which P's stanza counts already.
struct RecursionInfo {
  std::vector<uint8_t> outermost;
  std::vector<uint64_t> edge_cum;
  std::vector<uint8_t> present;  // per consumer: has at least one node
  // Per consumer: the depth of its shallowest node. Orders consumers of equal
  // cum caller first (thread, main, ...), as a reader expects.
  std::vector<uint32_t> min_depth;
};

RecursionInfo AnalyzeRecursion(const ArcflowProfile& model, const std::vector<uint64_t>& cum) {
  const auto& nodes = model.tree.nodes();
  const size_t consumer_count = model.consumers.size();
  RecursionInfo info;
  info.outermost.assign(nodes.size(), 0);
  info.edge_cum = cum;
  info.present.assign(consumer_count, 0);
  info.min_depth.assign(consumer_count, kNone);

  const std::vector<uint32_t> depth = model.tree.Depths();
  const ChildLists children(model.tree);
  std::vector<uint32_t> nearest(consumer_count, kNone);  // innermost node of each consumer on the path
  std::vector<uint32_t> saved(nodes.size(), kNone);
  std::vector<uint32_t> path;
  std::vector<std::pair<uint32_t, bool>> stack{{ArcflowProfile::kRootNode, false}};
  while (!stack.empty()) {
    auto [v, leaving] = stack.back();
    stack.pop_back();
    const uint32_t consumer = nodes[v].frame;
    if (leaving) {
      if (v != ArcflowProfile::kRootNode) nearest[consumer] = saved[v];
      path.pop_back();
      continue;
    }
    path.push_back(v);
    if (v != ArcflowProfile::kRootNode) {
      info.present[consumer] = 1;
      info.min_depth[consumer] = std::min(info.min_depth[consumer], depth[v]);
      const uint32_t u = nearest[consumer];
      saved[v] = u;
      if (u == kNone) {
        info.outermost[v] = 1;
      } else {
        // v re-enters the consumer of u: the child of u on the path carried
        // v's cum into u's subtree, and u's stanza already counts it.
        info.edge_cum[path[depth[u] + 1]] -= cum[v];
      }
      nearest[consumer] = v;
    }
    stack.emplace_back(v, true);
    const auto below = children.of(v);
    for (size_t i = below.size(); i-- > 0;) stack.emplace_back(below[i], false);
  }
  return info;
}

void AddTo(ArcflowLine& line, uint64_t n, uint64_t base, uint64_t cum) {
  line.n += n;
  line.base += base;
  line.cum += cum;
}

uint64_t EdgeKey(uint32_t a, uint32_t b) { return static_cast<uint64_t>(a) << 32 | b; }

std::string_view KindName(ConsumerKind kind) {
  switch (kind) {
    case ConsumerKind::kRoot: return "root";
    case ConsumerKind::kThread: return "thread";
    case ConsumerKind::kFunction: return "function";
    case ConsumerKind::kPruned: return "pruned";
  }
  return "function";
}

}  // namespace

std::vector<XarcStanza> ComputeXarc(const ArcflowProfile& model) {
  const auto& nodes = model.tree.nodes();
  const std::vector<uint64_t> cum = model.tree.Cumulative();
  const RecursionInfo info = AnalyzeRecursion(model, cum);
  std::vector<XarcStanza> by_consumer(model.consumers.size());
  // Edges (consumer, other consumer) -> a line; the owner of a line is kept
  // beside it to hand the lines out to their stanzas afterwards.
  struct Edges {
    FlatIndex index;
    std::vector<ArcflowLine> lines;
    std::vector<uint32_t> owners;
    ArcflowLine& At(uint32_t owner, uint32_t other) {
      bool inserted = false;
      const uint32_t i = index.FindOrInsert(EdgeKey(owner, other), static_cast<uint32_t>(lines.size()), inserted);
      if (inserted) {
        lines.push_back(ArcflowLine{other, 0, 0, 0});
        owners.push_back(owner);
      }
      return lines[i];
    }
  };
  Edges parent_edges;
  Edges child_edges;
  parent_edges.index.Reserve(nodes.size());
  child_edges.index.Reserve(nodes.size());
  parent_edges.lines.reserve(nodes.size());
  child_edges.lines.reserve(nodes.size());
  for (uint32_t v = 1; v < nodes.size(); ++v) {
    const auto& node = nodes[v];
    const uint64_t base = model.tree.value(v, kSamplesValue);
    const uint64_t counted_cum = info.outermost[v] ? cum[v] : 0;
    AddTo(by_consumer[node.frame].self, node.n, base, counted_cum);
    const bool under_root = node.parent == ArcflowProfile::kRootNode;
    const uint32_t parent_consumer = under_root ? kNone : nodes[node.parent].frame;
    AddTo(parent_edges.At(node.frame, parent_consumer), node.n, base, counted_cum);
    if (!under_root) {
      AddTo(child_edges.At(parent_consumer, node.frame), node.n, base, info.edge_cum[v]);
    }
  }
  for (size_t i = 0; i < parent_edges.lines.size(); ++i)
    by_consumer[parent_edges.owners[i]].parents.push_back(parent_edges.lines[i]);
  for (size_t i = 0; i < child_edges.lines.size(); ++i)
    by_consumer[child_edges.owners[i]].children.push_back(child_edges.lines[i]);

  auto by_cum = [&](const ArcflowLine& a, const ArcflowLine& b) {
    if (a.cum != b.cum) return a.cum > b.cum;
    if (a.base != b.base) return a.base > b.base;
    if (a.n != b.n) return a.n > b.n;
    return model.name(a.consumer) < model.name(b.consumer);
  };
  std::vector<XarcStanza> stanzas;
  for (uint32_t c = 0; c < by_consumer.size(); ++c) {
    if (!info.present[c]) continue;
    XarcStanza& stanza = by_consumer[c];
    stanza.self.consumer = c;
    std::sort(stanza.parents.begin(), stanza.parents.end(), by_cum);
    std::sort(stanza.children.begin(), stanza.children.end(), by_cum);
    stanzas.push_back(std::move(stanza));
  }
  std::sort(stanzas.begin(), stanzas.end(), [&](const XarcStanza& a, const XarcStanza& b) {
    if (a.self.cum != b.self.cum) return a.self.cum > b.self.cum;
    const uint32_t da = info.min_depth[a.self.consumer], db = info.min_depth[b.self.consumer];
    if (da != db) return da < db;
    return by_cum(a.self, b.self);
  });
  return stanzas;
}

std::vector<ArcflowLine> ComputeXprof(const ArcflowProfile& model, ArcflowSort sort) {
  const auto& nodes = model.tree.nodes();
  const std::vector<uint64_t> cum = model.tree.Cumulative();
  const RecursionInfo info = AnalyzeRecursion(model, cum);
  std::vector<ArcflowLine> lines(model.consumers.size());
  for (uint32_t v = 1; v < nodes.size(); ++v) {
    AddTo(lines[nodes[v].frame], nodes[v].n, model.tree.value(v, kSamplesValue), info.outermost[v] ? cum[v] : 0);
  }
  std::vector<ArcflowLine> out;
  for (uint32_t c = 0; c < lines.size(); ++c) {
    if (!info.present[c]) continue;
    lines[c].consumer = c;
    out.push_back(lines[c]);
  }
  std::sort(out.begin(), out.end(), [&](const ArcflowLine& a, const ArcflowLine& b) {
    const uint64_t a1 = sort == ArcflowSort::kBase ? a.base : a.cum;
    const uint64_t b1 = sort == ArcflowSort::kBase ? b.base : b.cum;
    const uint64_t a2 = sort == ArcflowSort::kBase ? a.cum : a.base;
    const uint64_t b2 = sort == ArcflowSort::kBase ? b.cum : b.base;
    if (a1 != b1) return a1 > b1;
    if (a2 != b2) return a2 > b2;
    const uint32_t da = info.min_depth[a.consumer], db = info.min_depth[b.consumer];
    if (da != db) return da < db;
    if (a.n != b.n) return a.n > b.n;
    return model.name(a.consumer) < model.name(b.consumer);
  });
  return out;
}

Result<ArcflowView> ParseArcflowView(std::string_view text) {
  if (text == "xtree") return ArcflowView::kXtree;
  if (text == "xarc") return ArcflowView::kXarc;
  if (text == "xprof") return ArcflowView::kXprof;
  return MakeError(fmt::format("unknown arcflow view '{}'; use xtree, xarc or xprof", text));
}

Result<ArcflowSort> ParseArcflowSort(std::string_view text) {
  if (text == "base") return ArcflowSort::kBase;
  if (text == "cum") return ArcflowSort::kCum;
  return MakeError(fmt::format("unknown --sort '{}'; use base or cum", text));
}

Result<ArcflowUnits> ParseArcflowUnits(std::string_view text) {
  if (text == "samples") return ArcflowUnits::kSamples;
  if (text == "ms") return ArcflowUnits::kMs;
  if (text == "pct") return ArcflowUnits::kPct;
  return MakeError(fmt::format("unknown --units '{}'; use samples, ms or pct", text));
}

namespace {

// Milliseconds per unit of the resource, from the unit binding.
Result<double> MillisecondsPerUnit(const ArcflowProfile& model) {
  std::string_view unit = model.bindings.unit;
  if (unit == "samples") {
    if (model.frequency_hz == 0) {
      return MakeError("--units ms needs the sampling frequency, and this input has none; use "
                       "--units samples or pct");
    }
    return 1000.0 / static_cast<double>(model.frequency_hz);
  }
  // "cpu-ms", "wall-seconds": the prefix names the clock, the suffix the scale.
  if (const size_t dash = unit.rfind('-'); dash != std::string_view::npos) unit = unit.substr(dash + 1);
  if (unit == "ns" || unit == "nanoseconds") return 1e-6;
  if (unit == "us" || unit == "microseconds") return 1e-3;
  if (unit == "ms" || unit == "milliseconds") return 1.0;
  if (unit == "s" || unit == "sec" || unit == "seconds") return 1000.0;
  return MakeError(fmt::format("--units ms: the resource unit '{}' is neither samples nor a time; "
                               "use --units samples or pct",
                               model.bindings.unit));
}

// Formats values in the chosen units into a buffer that is flushed to the
// stream in large blocks: the reports can have millions of lines.
class ReportWriter {
 public:
  ReportWriter(std::ostream& out, const ArcflowProfile& model, ArcflowUnits units, double ms_per_unit)
      : out_(out), units_(units), ms_per_unit_(ms_per_unit), total_(model.total()) {}
  ~ReportWriter() { Flush(); }

  template <typename... Args>
  void Write(fmt::format_string<Args...> format, Args&&... args) {
    fmt::format_to(std::back_inserter(buffer_), format, std::forward<Args>(args)...);
    if (buffer_.size() > (1u << 16)) Flush();
  }
  void Flush() {
    out_.write(buffer_.data(), static_cast<std::streamsize>(buffer_.size()));
    buffer_.clear();
  }

  double Pct(uint64_t v) const {
    return total_ == 0 ? 0.0 : static_cast<double>(v) * 100.0 / static_cast<double>(total_);
  }

  // The text reports write up to millions of numbers; these append them
  // directly (fmt::format_int, no format-string parsing per field).
  void Text(std::string_view s) {
    buffer_.append(s.data(), s.data() + s.size());
    if (buffer_.size() > (1u << 16)) Flush();
  }
  void Spaces(size_t n) {
    static constexpr char kBlank[] = "                                                                ";
    for (; n > 0;) {
      const size_t chunk = std::min(n, sizeof(kBlank) - 1);
      buffer_.append(kBlank, kBlank + chunk);
      n -= chunk;
    }
  }
  void RightAligned(std::string_view s, size_t width) {
    if (s.size() < width) Spaces(width - s.size());
    Text(s);
  }
  void Int(uint64_t v, size_t width) {
    const fmt::format_int digits(v);
    RightAligned(std::string_view(digits.data(), digits.size()), width);
  }
  // `scaled` / 10^decimals with exactly `decimals` digits after the point.
  void Fixed(uint64_t scaled, int decimals, size_t width, std::string_view suffix) {
    uint64_t divisor = 1;
    for (int i = 0; i < decimals; ++i) divisor *= 10;
    char text[48];
    const fmt::format_int whole(scaled / divisor);
    size_t len = whole.size();
    std::copy(whole.data(), whole.data() + len, text);
    text[len++] = '.';
    uint64_t fraction = scaled % divisor;
    for (int i = decimals - 1; i >= 0; --i) {
      text[len + i] = static_cast<char>('0' + fraction % 10);
      fraction /= 10;
    }
    len += static_cast<size_t>(decimals);
    std::copy(suffix.begin(), suffix.end(), text + len);
    len += suffix.size();
    RightAligned(std::string_view(text, len), width);
  }
  // v as % of the total with two decimals, rounded half up on the exact ratio.
  void PctText(uint64_t v, size_t width) {
    const uint64_t hundredths =
        total_ == 0 ? 0
                    : static_cast<uint64_t>((static_cast<unsigned __int128>(v) * 20000 + total_) /
                                            (static_cast<unsigned __int128>(total_) * 2));
    Fixed(hundredths, 2, width, "%");
  }
  void MsText(uint64_t v, size_t width) {
    const double thousandths = std::round(static_cast<double>(v) * ms_per_unit_ * 1000.0);
    if (thousandths < 9e18) {
      Fixed(static_cast<uint64_t>(thousandths), 3, width, "");
    } else {
      Write("{:>{}.3f}", static_cast<double>(v) * ms_per_unit_, width);
    }
  }

  // One resource value in the chosen units, right-aligned in `width`.
  void Value(uint64_t v, size_t width) {
    switch (units_) {
      case ArcflowUnits::kSamples: Int(v, width); break;
      case ArcflowUnits::kMs: MsText(v, width); break;
      case ArcflowUnits::kPct: PctText(v, width); break;
    }
  }
  // "n base base% cum cum%" (the absolute columns are left out with --units pct).
  void Columns(uint64_t n, uint64_t base, uint64_t cum) {
    Int(n, 12);
    if (units_ != ArcflowUnits::kPct) Value(base, 14);
    PctText(base, 10);
    if (units_ != ArcflowUnits::kPct) Value(cum, 14);
    PctText(cum, 10);
  }
  void ColumnTitles() {
    Write("{:>12}", "n");
    if (units_ != ArcflowUnits::kPct) Write("{:>14}", "base");
    Write("{:>10}", "base%");
    if (units_ != ArcflowUnits::kPct) Write("{:>14}", "cum");
    Write("{:>10}", "cum%");
  }
  // Adds the JSON members of one line to `item`: raw integers, percentages
  // (4 decimals), and milliseconds (6 decimals) when asked for.
  void JsonValues(Json& item, uint64_t n, uint64_t base, uint64_t cum) const {
    auto rounded = [](double v, double scale) { return std::round(v * scale) / scale; };
    item["n"] = n;
    item["base"] = base;
    item["cum"] = cum;
    item["base_pct"] = rounded(Pct(base), 1e4);
    item["cum_pct"] = rounded(Pct(cum), 1e4);
    if (units_ == ArcflowUnits::kMs) {
      item["base_ms"] = rounded(static_cast<double>(base) * ms_per_unit_, 1e6);
      item["cum_ms"] = rounded(static_cast<double>(cum) * ms_per_unit_, 1e6);
    }
  }

 private:
  std::ostream& out_;
  ArcflowUnits units_;
  double ms_per_unit_;
  uint64_t total_;
  fmt::memory_buffer buffer_;
};

struct ReportContext {
  std::ostream& out;  // the JSON documents are streamed here, the text goes through ReportWriter
  const ArcflowProfile& model;
  const ArcflowOptions& options;
  uint64_t total_before_root;
  double ms_per_unit;
};

std::string_view ViewName(ArcflowView view) {
  switch (view) {
    case ArcflowView::kXtree: return "xtree";
    case ArcflowView::kXarc: return "xarc";
    case ArcflowView::kXprof: return "xprof";
  }
  return "xtree";
}

std::string_view UnitsName(ArcflowUnits units) {
  switch (units) {
    case ArcflowUnits::kSamples: return "samples";
    case ArcflowUnits::kMs: return "ms";
    case ArcflowUnits::kPct: return "pct";
  }
  return "samples";
}

void TextHeader(ReportWriter& w, const ReportContext& ctx) {
  const ArcflowProfile& m = ctx.model;
  w.Write("# arcflow {}: consumers={} unit={} occurrences={}\n", ViewName(ctx.options.view),
          m.bindings.consumers, m.bindings.unit, m.bindings.occurrences);
  w.Write("# total: {} {}", m.total(), m.bindings.unit);
  if (ctx.options.units == ArcflowUnits::kMs) w.Write(" = {:.3f} ms", static_cast<double>(m.total()) * ctx.ms_per_unit);
  w.Write("; shown in {}\n", ctx.options.units == ArcflowUnits::kSamples ? std::string_view(m.bindings.unit)
                                                                          : UnitsName(ctx.options.units));
  if (!ctx.options.root.empty()) {
    const double share = ctx.total_before_root == 0
                             ? 0.0
                             : static_cast<double>(m.total()) * 100.0 / static_cast<double>(ctx.total_before_root);
    w.Write("# root: {} ({} of {} {}, {:.2f}%); percentages are of the root's total\n", ctx.options.root,
            m.total(), ctx.total_before_root, m.bindings.unit, share);
  }
  if (ctx.options.min_pct > 0) {
    w.Write("# min: {}% of the total; what falls below is shown as [pruned]\n", ctx.options.min_pct);
  }
}

// Opens the document's object and writes the members every view shares.
void JsonHeader(JsonStream& json, const ReportContext& ctx) {
  const ArcflowProfile& m = ctx.model;
  Json head = {{"view", ViewName(ctx.options.view)},
               {"bindings",
                {{"consumers", m.bindings.consumers}, {"unit", m.bindings.unit}, {"occurrences", m.bindings.occurrences}}},
               {"units", UnitsName(ctx.options.units)},
               {"total", m.total()}};
  if (!ctx.options.root.empty()) {
    head["root"] = ctx.options.root;
    head["total_before_root"] = ctx.total_before_root;
  }
  if (ctx.options.min_pct > 0) head["min_pct"] = ctx.options.min_pct;
  json.BeginObject().Members(head);
}

void RenderXtree(ReportWriter& w, const ReportContext& ctx) {
  const ArcflowProfile& m = ctx.model;
  const bool json = ctx.options.format == ArcflowFormat::kJson;
  JsonStream stream(ctx.out);
  if (json) {
    JsonHeader(stream, ctx);
    stream.Key("nodes").BeginArray(/*one_per_line=*/true);
  } else {
    TextHeader(w, ctx);
    w.Write("{:>5}{:>12}", "level", "n");
    const bool pct = ctx.options.units == ArcflowUnits::kPct;
    w.Write("{:>14}{:>14}  name\n", pct ? "base%" : "base", pct ? "cum%" : "cum");
  }
  // (node, level, row index of the parent); rows are numbered in output order.
  struct Item {
    uint32_t node;
    uint32_t level;
    int64_t parent_row;
  };
  const auto& nodes = m.tree.nodes();
  const std::vector<uint64_t> cum = m.tree.Cumulative();
  // Every node's children by cum descending, then name: the order of the xtree.
  ChildLists order(m.tree);
  order.Sort([&](uint32_t a, uint32_t b) {
    if (cum[a] != cum[b]) return cum[a] > cum[b];
    return m.name(nodes[a].frame) < m.name(nodes[b].frame);
  });
  std::vector<Item> stack;
  const auto push_children = [&](uint32_t node, uint32_t level, int64_t parent_row) {
    const auto children = order.of(node);
    for (size_t i = children.size(); i-- > 0;) stack.push_back({children[i], level, parent_row});
  };
  push_children(ArcflowProfile::kRootNode, 0, -1);
  int64_t row = 0;
  // One line object, its members overwritten for each node: the xtree can
  // have millions of nodes, and the keys are then allocated once.
  Json line;
  while (!stack.empty()) {
    const Item item = stack.back();
    stack.pop_back();
    const auto& node = nodes[item.node];
    const uint64_t base = m.tree.value(item.node, kSamplesValue);
    if (json) {
      line["level"] = item.level;
      line["parent"] = item.parent_row < 0 ? Json(nullptr) : Json(item.parent_row);
      line["name"] = m.name(node.frame);
      line["kind"] = KindName(m.kind(node.frame));
      w.JsonValues(line, node.n, base, cum[item.node]);
      stream.Value(line);
    } else {
      w.Int(item.level, 5);
      w.Int(node.n, 12);
      w.Value(base, 14);
      w.Value(cum[item.node], 14);
      w.Spaces(2 + 2 * static_cast<size_t>(item.level));
      w.Text(m.name(node.frame));
      w.Text("\n");
    }
    push_children(item.node, item.level + 1, row);
    ++row;
  }
  if (json) {
    stream.End().End();
    ctx.out << '\n';
  }
}

void RenderXarc(ReportWriter& w, const ReportContext& ctx) {
  const ArcflowProfile& m = ctx.model;
  const auto stanzas = ComputeXarc(m);
  auto name_of = [&](uint32_t consumer) -> std::string_view {
    return std::string_view(m.name(consumer));
  };
  if (ctx.options.format == ArcflowFormat::kJson) {
    JsonStream stream(ctx.out);
    JsonHeader(stream, ctx);
    stream.Key("stanzas").BeginArray(/*one_per_line=*/true);
    auto json_line = [&](const ArcflowLine& line) {
      Json item = {{"name", name_of(line.consumer)}};
      w.JsonValues(item, line.n, line.base, line.cum);
      return item;
    };
    auto json_lines = [&](const std::vector<ArcflowLine>& lines) {
      Json array = Json::array();
      for (const ArcflowLine& line : lines) array.push_back(json_line(line));
      return array;
    };
    for (const XarcStanza& s : stanzas) {
      stream.Value({{"name", name_of(s.self.consumer)},
                    {"kind", KindName(m.kind(s.self.consumer))},
                    {"self", json_line(s.self)},
                    {"parents", json_lines(s.parents)},
                    {"children", json_lines(s.children)}});
    }
    stream.End().End();
    ctx.out << '\n';
    return;
  }
  TextHeader(w, ctx);
  w.Write("{:<7}", "role");
  w.ColumnTitles();
  w.Write("  name\n");
  const std::string separator(ctx.options.units == ArcflowUnits::kPct ? 45 : 73, '=');
  auto text_line = [&](std::string_view role, const ArcflowLine& line, std::string_view indent) {
    w.Text(role);
    w.Spaces(7 - role.size());
    w.Columns(line.n, line.base, line.cum);
    w.Text("  ");
    w.Text(indent);
    w.Text(name_of(line.consumer));
    w.Text("\n");
  };
  for (const XarcStanza& s : stanzas) {
    w.Write("{}\n", separator);
    for (const ArcflowLine& p : s.parents) text_line("parent", p, "    ");
    text_line("self", s.self, "");
    for (const ArcflowLine& c : s.children) text_line("child", c, "    ");
  }
}

void RenderXprof(ReportWriter& w, const ReportContext& ctx) {
  const ArcflowProfile& m = ctx.model;
  const auto lines = ComputeXprof(m, ctx.options.sort);
  if (ctx.options.format == ArcflowFormat::kJson) {
    JsonStream stream(ctx.out);
    JsonHeader(stream, ctx);
    stream.Key("sort").Value(ctx.options.sort == ArcflowSort::kBase ? "base" : "cum");
    stream.Key("rows").BeginArray(/*one_per_line=*/true);
    for (const ArcflowLine& line : lines) {
      Json item = {{"name", m.name(line.consumer)}, {"kind", KindName(m.kind(line.consumer))}};
      w.JsonValues(item, line.n, line.base, line.cum);
      stream.Value(item);
    }
    stream.End().End();
    ctx.out << '\n';
    return;
  }
  TextHeader(w, ctx);
  w.ColumnTitles();
  w.Write("  name\n");
  for (const ArcflowLine& line : lines) {
    w.Columns(line.n, line.base, line.cum);
    w.Text("  ");
    w.Text(m.name(line.consumer));
    w.Text("\n");
  }
}

}  // namespace

Result<void> RenderArcflowProfile(const ArcflowProfile& model, const ArcflowOptions& options,
                                std::ostream& out) {
  if (!(options.min_pct >= 0 && options.min_pct <= 100)) {
    return MakeError(fmt::format("--min {} is not a percentage; give a number from 0 to 100",
                                 options.min_pct));
  }
  double ms_per_unit = 0;
  if (options.units == ArcflowUnits::kMs) {
    Result<double> scale = MillisecondsPerUnit(model);
    if (!scale) return scale.error();
    ms_per_unit = *scale;
  }
  // Each transform makes a new model; keep only the ones asked for.
  const ArcflowProfile* current = &model;
  ArcflowProfile merged;
  ArcflowProfile rooted;
  ArcflowProfile pruned;
  if (options.merge_threads) {
    merged = MergeThreads(*current);
    current = &merged;
  }
  const uint64_t total_before_root = current->total();
  if (!options.root.empty()) {
    Result<ArcflowProfile> r = RestrictToRoot(*current, options.root);
    if (!r) return r.error();
    rooted = std::move(r).value();
    current = &rooted;
  }
  if (options.min_pct > 0) {
    pruned = Prune(*current, options.min_pct);
    current = &pruned;
  }
  {
    ReportWriter writer(out, *current, options.units, ms_per_unit);
    const ReportContext ctx{out, *current, options, total_before_root, ms_per_unit};
    switch (options.view) {
      case ArcflowView::kXtree: RenderXtree(writer, ctx); break;
      case ArcflowView::kXarc: RenderXarc(writer, ctx); break;
      case ArcflowView::kXprof: RenderXprof(writer, ctx); break;
    }
  }
  out.flush();
  if (!out) return MakeError("writing the arcflow report failed (disk full or closed pipe?)");
  return {};
}

Result<void> RenderArcflowView(const Profile& profile, const ArcflowOptions& options,
                               std::ostream& out) {
  // With per-thread time in the capture, milliseconds are measured CPU time,
  // not samples times the sampling interval.
  const bool ptt_ms = options.units == ArcflowUnits::kMs && profile.ptt.recorded && options.metric == "samples";
  auto metric = Metric::Select(profile, ptt_ms ? "cpu" : options.metric);
  if (!metric) return metric.error();
  ArcflowProfile model = ArcflowFromProfile(profile, options.filter, options.merge_threads,
                                          ptt_ms ? metric->WithUnit("ptt-cpu-us") : *metric);
  const auto& filter = options.filter;
  if (!filter.empty() && model.tree.size() == 1 && !profile.threads.empty()) {
    return MakeError("no thread of the capture matches the pid/tid/comm filter; list the threads "
                     "with the tprof report");
  }
  ArcflowOptions rest = options;
  rest.merge_threads = false;  // done while building: cheaper than a second copy
  return RenderArcflowProfile(model, rest, out);
}

}  // namespace arcprof::reports
