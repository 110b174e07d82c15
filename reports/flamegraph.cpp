#include "reports/flamegraph.h"


#include <algorithm>
#include <charconv>
#include <cmath>
#include <ostream>

#include "reports/export_text.h"
#include "reports/folded.h"

namespace arcprof::reports {
using namespace arcprof::model;
namespace {

// flamegraph.pl's geometry: font 12 px Verdana, glyphs ~0.59 em, 16 px rows
// with a 1 px gap, 10 px side padding, title above, details line below.
constexpr double kFontSize = 12;
constexpr double kFontWidth = 0.59;
constexpr int kFrameHeight = 16;
constexpr int kPadSide = 10;
constexpr int kPadTop = 3 * 12;
constexpr int kSubtitleExtra = 2 * 12;
constexpr int kPadBottom = 2 * 12 + 10 + 18;  // details line + the legend row

FlameKind FlameKindOf(NameKind kind) {
  switch (kind) {
    case NameKind::kRoot: return FlameKind::kRoot;
    case NameKind::kGroup: return FlameKind::kProcess;
    case NameKind::kKernel: return FlameKind::kKernel;
    case NameKind::kNative:
    case NameKind::kFunction: return FlameKind::kNative;
    case NameKind::kJit: return FlameKind::kJit;
    case NameKind::kInterpreted: return FlameKind::kInterpreted;
    case NameKind::kInlined: return FlameKind::kInlined;
    case NameKind::kUnknown:
    case NameKind::kPruned: break;
  }
  return FlameKind::kUnknown;
}

NameKind NameKindOf(FlameKind kind) {
  switch (kind) {
    case FlameKind::kRoot: return NameKind::kRoot;
    case FlameKind::kProcess: return NameKind::kGroup;
    case FlameKind::kKernel: return NameKind::kKernel;
    case FlameKind::kNative: return NameKind::kNative;
    case FlameKind::kJit: return NameKind::kJit;
    case FlameKind::kInterpreted: return NameKind::kInterpreted;
    case FlameKind::kInlined: return NameKind::kInlined;
    case FlameKind::kUnknown: break;
  }
  return NameKind::kUnknown;
}

// A name's colour jitter, stable across graphs (flamegraph.pl seeds its PRNG
// from the name for the same reason: a function keeps its colour).
double NameJitter(std::string_view name) {
  uint32_t h = 2166136261u;
  for (unsigned char c : name) h = (h ^ c) * 16777619u;
  return static_cast<double>(h % 1000) / 1000.0;
}

struct Rgb {
  int r, g, b;
};

Rgb KindColour(FlameKind kind, double v) {
  auto c = [](double x) { return static_cast<int>(std::lround(x)); };
  switch (kind) {
    case FlameKind::kRoot: return {c(200 + 20 * v), c(200 + 20 * v), c(200 + 20 * v)};
    case FlameKind::kProcess: return {c(190 + 65 * v), c(80 + 60 * v), c(190 + 65 * v)};   // purple
    case FlameKind::kKernel: return {c(190 + 65 * v), c(90 + 65 * v), 0};                  // orange
    case FlameKind::kNative: return {c(200 + 55 * v), c(50 + 80 * v), c(50 + 80 * v)};     // red
    case FlameKind::kJit: return {c(50 + 60 * v), c(200 + 55 * v), c(50 + 60 * v)};        // green
    case FlameKind::kInterpreted: return {c(175 + 55 * v), c(175 + 55 * v), c(50 + 20 * v)};  // yellow
    case FlameKind::kInlined: return {c(50 + 60 * v), c(165 + 55 * v), c(165 + 55 * v)};   // aqua
    case FlameKind::kUnknown: return {c(150 + 40 * v), c(150 + 40 * v), c(150 + 40 * v)};  // grey
  }
  return {200, 200, 200};
}

// Differential: white at no change, red for a grown share, blue for a shrunk
// one, saturated at the largest change in the graph (flamegraph.pl's scheme).
Rgb DeltaColour(double delta, double max_abs) {
  if (max_abs <= 0) return {255, 255, 255};
  const double t = std::min(1.0, std::fabs(delta) / max_abs);
  const int fade = static_cast<int>(std::lround(255 * (1 - t)));
  return delta > 0 ? Rgb{255, fade, fade} : Rgb{fade, fade, 255};
}

std::string Hex(Rgb c) {
  static const char* kDigits = "0123456789abcdef";
  std::string s = "#";
  for (int x : {c.r, c.g, c.b}) {
    x = std::clamp(x, 0, 255);
    s += kDigits[x >> 4];
    s += kDigits[x & 15];
  }
  return s;
}

// Fixed point with 2 decimals, trailing zeros dropped: geometry is the bulk
// of a large SVG.
std::string Coord(double v) {
  std::string s = Fixed(v, 2);
  if (s.find('.') != std::string::npos) {
    while (s.back() == '0') s.pop_back();
    if (s.back() == '.') s.pop_back();
  }
  return s;
}

struct Box {
  uint32_t node;
  uint32_t depth;
  uint64_t start;  // in samples from the left edge
};

double MinWidth(const FlameGraphOptions& options) {
  // Zoom tells frames apart by geometry rounded to 0.01 px: keep boxes wider than that.
  return std::max(options.min_width_px, 0.05);
}

std::vector<Box> Layout(const FlameTree& tree, const FlameGraphOptions& options) {
  std::vector<Box> boxes;
  if (tree.total() == 0) return boxes;
  const double scale = (options.width_px - 2.0 * kPadSide) / static_cast<double>(tree.total());
  const double min_width = MinWidth(options);
  std::vector<Box> stack = {{FlameTree::kRoot, 0, 0}};
  while (!stack.empty()) {
    const Box box = stack.back();
    stack.pop_back();
    boxes.push_back(box);
    const auto children = tree.children(box.node);
    uint64_t x = box.start;
    std::vector<Box> kept;
    for (uint32_t child : children) {
      const uint64_t value = tree.node(child).value;
      if (static_cast<double>(value) * scale >= min_width) kept.push_back({child, box.depth + 1, x});
      x += value;
    }
    // Reverse so that boxes come out left to right (stable, readable output).
    stack.insert(stack.end(), kept.rbegin(), kept.rend());
  }
  return boxes;
}

std::string_view FlameScript();

}  // namespace

std::string_view FlameKindName(FlameKind kind) {
  switch (kind) {
    case FlameKind::kRoot: return "root";
    case FlameKind::kProcess: return "process";
    case FlameKind::kKernel: return "kernel";
    case FlameKind::kNative: return "native";
    case FlameKind::kJit: return "JIT";
    case FlameKind::kInterpreted: return "interpreted";
    case FlameKind::kInlined: return "inlined";
    case FlameKind::kUnknown: return "unknown";
  }
  return "unknown";
}

FlameTree::FlameTree() : FlameTree(NameFold{}) {}

FlameTree::FlameTree(NameFold fold) : fold_(std::move(fold)) {
  root_name_ = fold_.names.Intern("all", NameKind::kRoot);
  const auto& nodes = fold_.tree.nodes();
  const NamePool& names = fold_.names;
  value_ = fold_.tree.Cumulative(model::kSamplesValue);
  children_ = model::ChildLists(fold_.tree);
  children_.Sort([&](uint32_t a, uint32_t b) {
    const uint32_t na = nodes[a].frame, nb = nodes[b].frame;
    if (names.name(na) != names.name(nb)) return names.name(na) < names.name(nb);
    return names.kind(na) < names.kind(nb);
  });
}

uint32_t FlameTree::FindChild(uint32_t parent, std::string_view name, FlameKind kind) const {
  const uint32_t id = fold_.names.Find(name, NameKindOf(kind));
  if (id == NamePool::kNoName) return kNone;
  const uint32_t child = fold_.tree.FindChild(parent, id);
  return child == model::CallTree::kNoNode ? kNone : child;
}

FlameTree::Node FlameTree::node(uint32_t id) const {
  Node n;
  n.parent = fold_.tree.nodes()[id].parent;
  n.name = name_id(id);
  n.kind = FlameKindOf(fold_.names.kind(n.name));
  n.self = fold_.tree.value(id, model::kSamplesValue);
  n.value = value_[id];
  return n;
}

FlameTree FlameTreeFromProfile(const Profile& profile, const ThreadFilter& filter, const Metric& metric,
                               std::string_view group_by) {
  FoldOptions fold;
  fold.levels = [group_by](const ThreadRecord& thread, std::vector<std::string>& levels) {
    if (!thread.host.empty()) levels.push_back(FoldedHostName(thread));
    if (std::string group = FoldedGroupName(thread, group_by); !group.empty()) levels.push_back(std::move(group));
    levels.push_back(FoldedProcessName(thread));
  };
  return FlameTree(FoldByName(profile, filter, metric, fold));
}

Result<FlameTree> ParseFoldedStacks(std::string_view text) {
  NameFold fold;
  size_t line_number = 0;
  bool any = false;
  uint64_t sum = 0;
  auto bad = [&](const std::string& why) {
    return MakeError("folded stacks line " + std::to_string(line_number) + ": " + why +
                     "; expected 'frame;frame;...;leaf COUNT'");
  };
  while (!text.empty()) {
    ++line_number;
    const size_t eol = text.find('\n');
    std::string_view line = text.substr(0, eol);
    text.remove_prefix(eol == std::string_view::npos ? text.size() : eol + 1);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.find_first_not_of(" \t") == std::string_view::npos) continue;
    const size_t space = line.find_last_of(" \t");
    if (space == std::string_view::npos) return bad("no count");
    const std::string_view count_text = line.substr(space + 1);
    uint64_t count = 0;
    const auto [end, ec] = std::from_chars(count_text.data(), count_text.data() + count_text.size(), count);
    if (count_text.empty() || ec == std::errc::result_out_of_range) {
      return bad(count_text.empty() ? "no count" : "count out of range");
    }
    if (ec != std::errc() || end != count_text.data() + count_text.size()) {
      return bad("the count '" + ValidUtf8(count_text.substr(0, 32)) + "' is not a whole number");
    }
    std::string_view stack = line.substr(0, space);
    while (!stack.empty() && (stack.back() == ' ' || stack.back() == '\t')) stack.remove_suffix(1);
    if (stack.empty()) return bad("no frames");
    {
      // "a;b 3 5" is flamegraph.pl's differential input; we draw one count.
      const size_t last = stack.find_last_of(" \t");
      const std::string_view tail = last == std::string_view::npos ? stack : stack.substr(last + 1);
      if (last != std::string_view::npos && !tail.empty() &&
          tail.find_first_not_of("0123456789") == std::string_view::npos &&
          stack.find(';', last) == std::string_view::npos) {
        return bad("two counts (differential input is not supported; use arcprof diff)");
      }
    }
    if (sum > UINT64_MAX - count) return bad("the counts add up past 2^64");
    sum += count;
    uint32_t node = FlameTree::kRoot;
    uint32_t depth = 0;
    while (true) {
      const size_t semi = stack.find(';');
      const std::string_view raw = stack.substr(0, semi);
      FlameKind kind = FlameKind::kNative;
      std::string_view name = StripFoldedSuffix(raw);
      if (name.size() != raw.size()) {
        switch (raw[raw.size() - 2]) {
          case 'k': kind = FlameKind::kKernel; break;
          case 'j': kind = FlameKind::kJit; break;
          case 'i': kind = FlameKind::kInlined; break;
          default: kind = FlameKind::kNative;
        }
      } else if (depth == 0) {
        kind = FlameKind::kProcess;
      } else if (name.size() >= 2 && name.front() == '[' && name.back() == ']') {
        kind = FlameKind::kUnknown;
      }
      node = fold.tree.Child(node, fold.names.Intern(name, NameKindOf(kind)));
      ++depth;
      if (semi == std::string_view::npos) break;
      stack.remove_prefix(semi + 1);
    }
    fold.tree.Add(node, 0, kSamplesValue, count);
    any = true;
  }
  if (!any) return MakeError("folded stacks: no stack found; expected 'frame;frame;...;leaf COUNT' lines");
  return FlameTree(std::move(fold));
}

FlameLayoutStats FlameLayout(const FlameTree& tree, const FlameGraphOptions& options) {
  FlameLayoutStats stats;
  for (const Box& box : Layout(tree, options)) {
    ++stats.boxes;
    stats.max_depth = std::max(stats.max_depth, box.depth);
  }
  return stats;
}

void WriteFlameGraphSvg(const FlameTree& tree, const FlameGraphOptions& options, std::ostream& out) {
  const std::vector<Box> boxes = Layout(tree, options);
  uint32_t max_depth = 0;
  for (const Box& box : boxes) max_depth = std::max(max_depth, box.depth);
  const int width = options.width_px;
  const int pad_top = kPadTop + (options.subtitle.empty() ? 0 : kSubtitleExtra);
  const int height = static_cast<int>(max_depth + 1) * kFrameHeight + pad_top + kPadBottom;
  const double total = static_cast<double>(tree.total());
  const double scale = total > 0 ? (width - 2.0 * kPadSide) / total : 0;
  const bool differential = tree.delta_points.size() == tree.size();
  double max_abs_delta = 0;
  if (differential) {
    for (double d : tree.delta_points) max_abs_delta = std::max(max_abs_delta, std::fabs(d));
  }

  if (options.standalone) {
    out << "<?xml version=\"1.0\" standalone=\"no\"?>\n";
  }
  out << "<svg version=\"1.1\" width=\"" << width << "\" height=\"" << height
      << "\" viewBox=\"0 0 " << width << ' ' << height
      << "\" xmlns=\"http://www.w3.org/2000/svg\" xmlns:xlink=\"http://www.w3.org/1999/xlink\""
      << " class=\"arcprof-flamegraph\" data-pad=\"" << kPadSide << "\" data-width=\"" << width
      << "\" data-total=\"" << tree.total() << "\" data-icicle=\"" << (options.icicle ? 1 : 0)
      << "\" data-count-name=\"" << XmlEscape(options.count_name) << '"'
      << (options.standalone ? "" : " data-fluid=\"1\"") << ">\n";
  out << "<!-- Generated by arcprof. Click a frame to zoom, Reset Zoom to undo; type a regex in the "
         "search box (Ctrl-F) to highlight matching frames and see their share. -->\n";
  out << "<defs><linearGradient id=\"arcprof-bg\" y1=\"0\" y2=\"1\" x1=\"0\" x2=\"0\">"
         "<stop stop-color=\"#eeeeee\" offset=\"5%\"/><stop stop-color=\""
      << (differential ? "#eeeeee" : "#eeeeb0") << "\" offset=\"95%\"/></linearGradient></defs>\n";
  out << "<style type=\"text/css\"><![CDATA[\n"
         ".arcprof-flamegraph text { font-family: Verdana, sans-serif; font-size: 12px; fill: #000; }\n"
         ".arcprof-flamegraph .title { font-size: 17px; text-anchor: middle; }\n"
         ".arcprof-flamegraph .subtitle { text-anchor: middle; fill: #606060; }\n"
         ".arcprof-flamegraph .frames g { cursor: pointer; }\n"
         ".arcprof-flamegraph .frames text { pointer-events: none; }\n"
         ".arcprof-flamegraph .frames rect { rx: 2px; ry: 2px; }\n"
         ".arcprof-flamegraph .frames g:hover rect { stroke: #000; stroke-width: 0.5; }\n"
         ".arcprof-flamegraph .unzoom { cursor: pointer; }\n"
         ".arcprof-flamegraph .hide { display: none; }\n"
         ".arcprof-flamegraph .parent { opacity: 0.5; }\n"
         ".arcprof-flamegraph .matched, .arcprof-flamegraph .legend text { fill: #303030; }\n"
         ".arcprof-flamegraph input.search { font: 12px Verdana, sans-serif; width: 188px; }\n"
         "]]></style>\n";
  out << "<rect x=\"0\" y=\"0\" width=\"" << width << "\" height=\"" << height
      << "\" fill=\"url(#arcprof-bg)\"/>\n";
  out << "<text class=\"title\" x=\"" << width / 2 << "\" y=\"24\">" << XmlEscape(options.title)
      << "</text>\n";
  if (!options.subtitle.empty()) {
    out << "<text class=\"subtitle\" x=\"" << width / 2 << "\" y=\"48\">"
        << XmlEscape(options.subtitle) << "</text>\n";
  }
  out << "<text class=\"unzoom hide\" x=\"" << kPadSide << "\" y=\"24\">Reset Zoom</text>\n";
  out << "<foreignObject x=\"" << width - kPadSide - 200 << "\" y=\"8\" width=\"200\" height=\"24\">"
         "<input xmlns=\"http://www.w3.org/1999/xhtml\" class=\"search\" type=\"search\" "
         "placeholder=\"Search (regex), Ctrl-F\" title=\"JavaScript regular expression\"/>"
         "</foreignObject>\n";
  const int details_y = height - kPadBottom + 2 * static_cast<int>(kFontSize) - 2;
  out << "<text class=\"details\" x=\"" << kPadSide << "\" y=\"" << details_y << "\"> </text>\n";
  out << "<text class=\"matched\" x=\"" << width - kPadSide << "\" y=\"" << details_y
      << "\" text-anchor=\"end\"> </text>\n";

  // The legend: what the colours mean.
  {
    const int legend_y = height - 8;
    out << "<g class=\"legend\">";
    if (differential) {
      out << "<rect x=\"" << kPadSide << "\" y=\"" << legend_y - 10 << "\" width=\"10\" height=\"10\" fill=\"#ff6060\"/>"
          << "<text x=\"" << kPadSide + 14 << "\" y=\"" << legend_y << "\">share grew</text>"
          << "<rect x=\"" << kPadSide + 100 << "\" y=\"" << legend_y - 10 << "\" width=\"10\" height=\"10\" fill=\"#6060ff\"/>"
          << "<text x=\"" << kPadSide + 114 << "\" y=\"" << legend_y
          << "\">share shrank (widths: the second profile; colour saturates at "
          << Fixed(max_abs_delta, 2) << " points)</text>";
    } else {
      int x = kPadSide;
      for (FlameKind kind : {FlameKind::kNative, FlameKind::kKernel, FlameKind::kJit, FlameKind::kInterpreted,
                             FlameKind::kInlined, FlameKind::kUnknown, FlameKind::kProcess}) {
        const std::string_view label = FlameKindName(kind);
        out << "<rect x=\"" << x << "\" y=\"" << legend_y - 10 << "\" width=\"10\" height=\"10\" fill=\""
            << Hex(KindColour(kind, 0.5)) << "\"/><text x=\"" << x + 14 << "\" y=\"" << legend_y << "\">"
            << label << "</text>";
        x += 14 + static_cast<int>(label.size() * kFontSize * kFontWidth) + 16;
      }
    }
    out << "</g>\n";
  }

  out << "<g class=\"frames\">\n";
  const double char_width = kFontSize * kFontWidth;
  for (const Box& box : boxes) {
    const FlameTree::Node node = tree.node(box.node);
    const std::string& raw_name = tree.name(box.node);
    const double x = kPadSide + static_cast<double>(box.start) * scale;
    const double w = static_cast<double>(node.value) * scale;
    const int y = options.icicle ? pad_top + static_cast<int>(box.depth) * kFrameHeight
                                 : height - kPadBottom - static_cast<int>(box.depth + 1) * kFrameHeight + 1;
    const std::string name = XmlEscape(raw_name);
    out << "<g><title>" << name << " (" << WithThousands(node.value) << ' ' << XmlEscape(options.count_name)
        << ", " << (box.node == FlameTree::kRoot ? std::string("100") : Fixed(100.0 * node.value / total, 2))
        << '%';
    if (differential) {
      const double d = tree.delta_points[box.node];
      out << "; " << (d > 0 ? "+" : "") << Fixed(d, 2) << " points";
    }
    const Rgb colour = differential ? DeltaColour(tree.delta_points[box.node], max_abs_delta)
                                    : KindColour(node.kind, NameJitter(raw_name));
    out << ")</title><rect x=\"" << Coord(x) << "\" y=\"" << y << "\" width=\"" << Coord(w)
        << "\" height=\"" << kFrameHeight - 1 << "\" fill=\"" << Hex(colour) << "\"/>";
    // A label only where at least 3 characters fit; the script relabels on zoom.
    const size_t chars = static_cast<size_t>(w / char_width);
    if (chars >= 3) {
      // Truncate on the raw name (by code points would be nicer; bytes keep it simple
      // and ValidUtf8 repairs a cut sequence).
      std::string label = raw_name.size() <= chars ? raw_name : raw_name.substr(0, chars - 2) + "..";
      out << "<text x=\"" << Coord(x + 3) << "\" y=\"" << y + 11 << "\">" << XmlEscape(label) << "</text>";
    }
    out << "</g>\n";
  }
  out << "</g>\n";
  out << "<script type=\"text/ecmascript\"><![CDATA[\n" << FlameScript() << "]]></script>\n";
  out << "</svg>\n";
}

namespace {

// The interaction, scoped to the enclosing <svg> so the same markup works as a
// standalone file and inline in the HTML export. Geometry is read from the
// rects; samples from the <title> text ("name (1,234 samples, 5.67%...)").
std::string_view FlameScript() {
  return R"JS((function () {
  "use strict";
  var script = document.currentScript;
  var svg = script ? script.closest("svg") : document.documentElement;
  var NS = "http://www.w3.org/2000/svg";
  var frames = svg.querySelector(".frames");
  var details = svg.querySelector(".details");
  var matched = svg.querySelector(".matched");
  var unzoomButton = svg.querySelector(".unzoom");
  var searchBox = svg.querySelector("input.search");
  var pad = +svg.getAttribute("data-pad");
  var width = +svg.getAttribute("data-width");
  var total = +svg.getAttribute("data-total");
  var icicle = svg.getAttribute("data-icicle") === "1";
  // Inline in a page (the HTML export) the graph takes the width of its
  // container and follows it; boxes keep their layout, scaled.
  var fluid = svg.getAttribute("data-fluid") === "1";
  var laidOutWidth = width;  // the width the boxes' x and width were written for
  var scale = 1;
  var zoomed = null;
  var charWidth = 12 * 0.59;
  var tolerance = 0.03;  // geometry is written with 2 decimals

  function boxes() { return frames.children; }
  function rectOf(g) { return g.querySelector("rect"); }
  function titleOf(g) { return g.querySelector("title").textContent; }
  function nameOf(g) {
    var t = titleOf(g), i = t.lastIndexOf(" (");
    return i < 0 ? t : t.substring(0, i);
  }
  function samplesOf(g) {
    var t = titleOf(g), m = /^ \(([\d,]+) /.exec(t.substring(t.lastIndexOf(" (")));
    return m ? +m[1].replace(/,/g, "") : 0;
  }
  function original(g) {
    var r = rectOf(g);
    if (!r.hasAttribute("data-x")) {
      r.setAttribute("data-x", r.getAttribute("x"));
      r.setAttribute("data-w", r.getAttribute("width"));
    }
    return { x: pad + (+r.getAttribute("data-x") - pad) * scale, w: +r.getAttribute("data-w") * scale,
             y: +r.getAttribute("y") };
  }
  function place(g, x, w) {
    var r = rectOf(g);
    r.setAttribute("x", x.toFixed(2));
    r.setAttribute("width", w.toFixed(2));
    var chars = Math.floor(w / charWidth), name = nameOf(g);
    var label = chars < 3 ? "" : (name.length <= chars ? name : name.substring(0, chars - 2) + "..");
    var t = g.querySelector("text");
    if (!t) {
      if (!label) return;
      t = document.createElementNS(NS, "text");
      t.setAttribute("y", +r.getAttribute("y") + 11);
      g.appendChild(t);
    }
    t.setAttribute("x", (x + 3).toFixed(2));
    t.textContent = label;
  }

  function zoom(target) {
    var z = original(target);
    if (z.w >= width - 2 * pad - tolerance) { unzoom(); return; }
    zoomed = target;
    var ratio = (width - 2 * pad) / z.w;
    var all = boxes();
    for (var i = 0; i < all.length; i++) {
      var g = all[i], o = original(g);
      var deeper = icicle ? o.y > z.y : o.y < z.y;
      var shallower = icicle ? o.y < z.y : o.y > z.y;
      g.classList.remove("hide", "parent");
      if (shallower && o.x <= z.x + tolerance && o.x + o.w >= z.x + z.w - tolerance) {
        g.classList.add("parent");
        place(g, pad, width - 2 * pad);
      } else if ((g === target || deeper) && o.x >= z.x - tolerance &&
                 o.x + o.w <= z.x + z.w + tolerance) {
        place(g, pad + (o.x - z.x) * ratio, o.w * ratio);
      } else {
        g.classList.add("hide");
      }
    }
    unzoomButton.classList.remove("hide");
  }
  function unzoom() {
    zoomed = null;
    var all = boxes();
    for (var i = 0; i < all.length; i++) {
      var g = all[i], o = original(all[i]);
      g.classList.remove("hide", "parent");
      place(g, o.x, o.w);
    }
    unzoomButton.classList.add("hide");
  }

  var searchFills = [];
  function resetSearch() {
    for (var i = 0; i < searchFills.length; i++) {
      searchFills[i][0].setAttribute("fill", searchFills[i][1]);
    }
    searchFills = [];
    matched.textContent = " ";
  }
  function search(term) {
    resetSearch();
    if (!term) return;
    var re;
    try { re = new RegExp(term); } catch (e) { matched.textContent = "Invalid regex"; return; }
    var all = boxes(), hits = [];
    for (var i = 0; i < all.length; i++) {
      var g = all[i];
      if (!re.test(nameOf(g))) continue;
      var r = rectOf(g);
      searchFills.push([r, r.getAttribute("fill")]);
      r.setAttribute("fill", "rgb(230,0,230)");
      var o = original(g);
      hits.push({ x: o.x, w: o.w, samples: samplesOf(g) });
    }
    // Frames on one path nest; count only the outermost match of each path.
    hits.sort(function (a, b) { return a.x - b.x || b.w - a.w; });
    var sum = 0, end = -Infinity;
    for (var j = 0; j < hits.length; j++) {
      if (hits[j].x >= end - tolerance) {
        sum += hits[j].samples;
        end = hits[j].x + hits[j].w;
      }
    }
    matched.textContent = "Matched: " + (total > 0 ? (100 * sum / total).toFixed(2) : "0.00") + "%";
  }

  function fit() {
    var w = Math.floor(svg.parentNode.clientWidth);
    if (!(w >= 2 * pad + 200) || w === width) return;
    width = w;
    scale = (width - 2 * pad) / (laidOutWidth - 2 * pad);
    var height = svg.getAttribute("height");
    svg.setAttribute("width", width);
    svg.setAttribute("data-width", width);
    svg.setAttribute("viewBox", "0 0 " + width + " " + height);
    svg.querySelector(":scope > rect").setAttribute("width", width);
    var centred = svg.querySelectorAll(":scope > .title, :scope > .subtitle");
    for (var i = 0; i < centred.length; i++) centred[i].setAttribute("x", width / 2);
    var box = svg.querySelector(":scope > foreignObject");
    if (box) box.setAttribute("x", width - pad - 200);
    matched.setAttribute("x", width - pad);
    if (zoomed) zoom(zoomed); else unzoom();
  }

  frames.addEventListener("mouseover", function (e) {
    var g = e.target.closest("g");
    if (g && g.parentNode === frames) details.textContent = "Function: " + titleOf(g);
  });
  frames.addEventListener("mouseout", function () { details.textContent = " "; });
  frames.addEventListener("click", function (e) {
    var g = e.target.closest("g");
    if (g && g.parentNode === frames) zoom(g);
  });
  unzoomButton.addEventListener("click", unzoom);
  if (searchBox) {
    searchBox.addEventListener("input", function () { search(searchBox.value); });
  }
  (svg.ownerDocument || document).addEventListener("keydown", function (e) {
    if (searchBox && (e.keyCode === 114 || (e.ctrlKey && e.keyCode === 70))) {
      e.preventDefault();
      searchBox.focus();
    } else if (e.key === "Escape") {
      unzoom();
      if (searchBox) { searchBox.value = ""; resetSearch(); }
    }
  });
  if (fluid) {
    var all = boxes();
    for (var i = 0; i < all.length; i++) original(all[i]);  // the boxes as laid out
    fit();
    window.addEventListener("resize", fit);
  }
  svg.arcprofFlameGraph = { zoom: zoom, unzoom: unzoom, search: search, fit: fit };
})();
)JS";
}

}  // namespace

}  // namespace arcprof::reports
