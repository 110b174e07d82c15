#include "reports/timeline.h"

#include <time.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include "reports/json_writer.h"
#include <numeric>
#include <optional>
#include <unordered_map>

#include "reports/export_text.h"
#include "model/profile_merge.h"

namespace arcprof::reports {
using namespace arcprof::model;
namespace {

constexpr const char* kIdleSeries = "swapper (idle)";  // pid 0's threads
constexpr const char* kOtherSeries = "other";           // what is past the top series

std::string UtcFormat(uint64_t unix_ns, const char* format) {
  const time_t secs = static_cast<time_t>(unix_ns / 1000000000ull);
  tm t{};
  gmtime_r(&secs, &t);
  char buf[32];
  strftime(buf, sizeof(buf), format, &t);
  return buf;
}
std::string UtcTime(uint64_t unix_ns) { return UtcFormat(unix_ns, "%Y-%m-%dT%H:%M:%SZ"); }

constexpr uint64_t kNsPerDay = 86400ull * 1000000000ull;

std::string UtcClock(uint64_t unix_ns) { return UtcFormat(unix_ns, "%H:%M:%S"); }
std::string UtcDate(uint64_t unix_ns) { return UtcFormat(unix_ns, "%Y-%m-%d"); }

// Control characters from thread names never reach a terminal or the SVG.
std::string Printable(std::string s) {
  for (char& c : s) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '?';
  }
  return s;
}

}  // namespace

void TimelineBuilder::Add(const Profile& window) {
  const uint64_t start = window.meta.start_unix_ns;
  const uint64_t end = EndUnixNs(window.meta);
  const double seconds = end > start ? static_cast<double>(end - start) / 1e9 : 0;
  const double hz = window.meta.frequency_hz ? static_cast<double>(window.meta.frequency_hz) : 1;
  std::map<size_t, double> row;
  std::unordered_map<std::string, size_t> index;
  for (size_t i = 0; i < keys_.size(); ++i) index.emplace(keys_[i], i);
  for (size_t t = 0; t < window.threads.size(); ++t) {
    const ThreadRecord& thread = window.threads[t];
    if (!filter_.empty() && !filter_.Matches(thread)) continue;
    const uint64_t samples = window.threads[t].tree.total(kSamplesValue);
    if (samples == 0) continue;
    std::string key;
    if (thread.pid == 0) {
      key = kIdleSeries;
    } else if (by_tid_) {
      key = Printable(thread.comm.empty() ? thread.process_comm : thread.comm) + " (" +
            std::to_string(thread.pid) + "/" + std::to_string(thread.tid) + ")";
    } else {
      key = Printable(thread.process_comm.empty() ? thread.comm : thread.process_comm) + " (" +
            std::to_string(thread.pid) + ")";
    }
    auto [it, added] = index.try_emplace(key, keys_.size());
    if (added) {
      keys_.push_back(key);
      key_totals_.push_back(0);
    }
    const double cpu = seconds > 0 ? static_cast<double>(samples) / hz / seconds * 100.0 : 0;
    row[it->second] += cpu;
    key_totals_[it->second] += cpu * seconds;
  }
  rows_.emplace_back(row.begin(), row.end());
  times_.emplace_back(start, end);
}

Timeline TimelineBuilder::Build() const {
  Timeline out;
  std::vector<size_t> order(keys_.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if (key_totals_[a] != key_totals_[b]) return key_totals_[a] > key_totals_[b];
    return keys_[a] < keys_[b];
  });
  const bool other = order.size() > top_;
  if (other) order.resize(top_);
  std::vector<int> series_of(keys_.size(), other ? static_cast<int>(order.size()) : -1);
  for (size_t s = 0; s < order.size(); ++s) {
    series_of[order[s]] = static_cast<int>(s);
    out.series.push_back(keys_[order[s]]);
  }
  if (other) out.series.push_back(kOtherSeries);
  for (size_t w = 0; w < rows_.size(); ++w) {
    TimelineWindow tw;
    tw.start_unix_ns = times_[w].first;
    tw.end_unix_ns = times_[w].second;
    tw.cpu_percent.assign(out.series.size(), 0);
    for (const auto& [key, cpu] : rows_[w]) {
      tw.cpu_percent[static_cast<size_t>(series_of[key])] += cpu;
      tw.total_percent += cpu;
    }
    out.windows.push_back(std::move(tw));
  }
  return out;
}

void WriteTimelineText(const Timeline& t, std::ostream& out) {
  out << "arcprof report: timeline (CPU % of one CPU per window)\n";
  out << "Windows: " << t.windows.size() << "\n\n";
  if (t.windows.empty()) return;
  // One row per window; columns are the series (numbered, legend below).
  char buf[64];
  out << "START                   TOTAL";
  for (size_t s = 0; s < t.series.size(); ++s) {
    snprintf(buf, sizeof(buf), " %7s", ("#" + std::to_string(s + 1)).c_str());
    out << buf;
  }
  out << "\n";
  for (const TimelineWindow& w : t.windows) {
    snprintf(buf, sizeof(buf), "%-20s  %7.1f", UtcTime(w.start_unix_ns).c_str(), w.total_percent);
    out << buf;
    for (double v : w.cpu_percent) {
      snprintf(buf, sizeof(buf), " %7.1f", v);
      out << buf;
    }
    out << "\n";
  }
  out << "\n";
  for (size_t s = 0; s < t.series.size(); ++s) out << "#" << s + 1 << "  " << t.series[s] << "\n";
}

void WriteTimelineJson(const Timeline& t, std::ostream& out) {
  Json j;
  j["unit"] = "cpu_percent_of_one_cpu";
  j["series"] = t.series;
  j["windows"] = Json::array();
  for (const TimelineWindow& w : t.windows) {
    j["windows"].push_back({{"start", UtcTime(w.start_unix_ns)},
                            {"end", UtcTime(w.end_unix_ns)},
                            {"start_unix_ns", w.start_unix_ns},
                            {"end_unix_ns", w.end_unix_ns},
                            {"total", w.total_percent},
                            {"cpu", w.cpu_percent}});
  }
  out << DumpJson(j, 2) << "\n";
}

namespace {

// Ticks of the y axis: a step of 1, 2, 2.5 or 5 times a power of ten giving
// at most six intervals up to the first tick at or above `max_v`.
std::pair<double, int> RoundTicks(double max_v) {
  const double raw = std::max(max_v, 1e-9) / 6;
  const double power = std::pow(10.0, std::floor(std::log10(raw)));
  double step = 10 * power;
  for (double m : {1.0, 2.0, 2.5, 5.0}) {
    if (m * power >= raw * (1 - 1e-9)) {
      step = m * power;
      break;
    }
  }
  const int intervals = std::max(1, static_cast<int>(std::ceil(max_v / step - 1e-9)));
  return {step, intervals};
}

// "25", "2.5", "0.25": a tick value without trailing zeros.
std::string TickLabel(double v) {
  char buf[32];
  snprintf(buf, sizeof(buf), "%.2f", v);
  std::string text = buf;
  while (!text.empty() && text.back() == '0') text.pop_back();
  if (!text.empty() && text.back() == '.') text.pop_back();
  return text;
}

}  // namespace

void WriteTimelineSvg(const Timeline& t, const std::string& title, std::ostream& out) {
  // Named series cycle through these; the idle task and "other" have their
  // own greys, so neither is taken for a process.
  static const char* kColors[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
                                  "#8c564b", "#e377c2", "#bcbd22", "#17becf", "#98df8a"};
  constexpr const char* kIdleColor = "#dddddd";
  constexpr const char* kOtherColor = "#8c8c8c";
  const double width = 1000, plot_h = 360, left = 60, top = 40, right = 20;
  const double legend_top = top + plot_h + 56;  // below the time labels and their caption
  const double legend_h = 18.0 * static_cast<double>(t.series.size()) + 10;
  const double height = legend_top + legend_h;

  // Stacked from the bottom: the processes in the order of their CPU time,
  // then "other", then the idle task on top.
  std::vector<size_t> stack;
  std::optional<size_t> idle, other;
  for (size_t s = 0; s < t.series.size(); ++s) {
    if (t.series[s] == kIdleSeries) {
      idle = s;
    } else if (t.series[s] == kOtherSeries && s + 1 == t.series.size()) {
      other = s;
    } else {
      stack.push_back(s);
    }
  }
  std::vector<const char*> color_of(t.series.size(), kOtherColor);
  for (size_t i = 0; i < stack.size(); ++i) color_of[stack[i]] = kColors[i % std::size(kColors)];
  if (other) stack.push_back(*other);
  if (idle) {
    stack.push_back(*idle);
    color_of[*idle] = kIdleColor;
  }

  double max_total = 0;
  for (const TimelineWindow& w : t.windows) {
    double sum = 0;
    for (double v : w.cpu_percent) sum += v;
    max_total = std::max(max_total, sum);
  }
  const auto [step, intervals] = RoundTicks(std::max(max_total, 1.0));
  const double max_v = step * intervals;
  uint64_t t0 = t.windows.empty() ? 0 : t.windows.front().start_unix_ns;
  uint64_t t1 = t.windows.empty() ? 1 : t.windows.back().end_unix_ns;
  if (t1 <= t0) t1 = t0 + 1;
  const double plot_w = width - left - right;
  auto x = [&](uint64_t ns) {
    ns = std::clamp(ns, t0, t1);
    return left + plot_w * static_cast<double>(ns - t0) / static_cast<double>(t1 - t0);
  };
  auto y = [&](double v) { return top + plot_h - plot_h * std::min(v, max_v) / max_v; };
  char buf[320];
  // The picture scales down with a narrower window (viewBox, max-width).
  snprintf(buf, sizeof(buf),
           "<?xml version=\"1.0\" standalone=\"no\"?>\n<svg version=\"1.1\" width=\"%.0f\" height=\"%.0f\" "
           "viewBox=\"0 0 %.0f %.0f\" style=\"max-width:100%%;height:auto\" "
           "xmlns=\"http://www.w3.org/2000/svg\" class=\"arcprof-timeline\">\n",
           width, height, width, height);
  out << buf;
  out << "<style>text{font-family:Verdana,sans-serif;font-size:12px} .axis{stroke:#888;stroke-width:1}"
         " .grid{stroke:#ddd;stroke-width:1} .series rect{stroke:none;shape-rendering:crispEdges}</style>\n";
  out << "<rect width=\"100%\" height=\"100%\" fill=\"#ffffff\"/>\n";
  snprintf(buf, sizeof(buf), "<text class=\"title\" x=\"%.0f\" y=\"24\" text-anchor=\"middle\" font-size=\"16\">",
           width / 2);
  out << buf << XmlEscape(title) << "</text>\n";

  // Grid lines behind the areas.
  out << "<g class=\"grid\">";
  for (int i = 0; i <= intervals; ++i) {
    snprintf(buf, sizeof(buf), "<line class=\"grid\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>", left,
             y(step * i), width - right, y(step * i));
    out << buf;
  }
  out << "</g>\n";

  // One rectangle per series and window, stacked: the areas read as the
  // machine's CPU split by process over time; each has its value as tooltip.
  std::vector<double> base(t.windows.size(), 0);
  for (size_t s : stack) {
    out << "<g class=\"series\" fill=\"" << color_of[s] << "\"><title>" << XmlEscape(t.series[s]) << "</title>\n";
    for (size_t i = 0; i < t.windows.size(); ++i) {
      const TimelineWindow& w = t.windows[i];
      const double v = w.cpu_percent[s];
      if (v <= 0) continue;
      const double x0 = x(w.start_unix_ns), x1 = x(w.end_unix_ns);
      const double y_top = y(base[i] + v), y_bottom = y(base[i]);
      base[i] += v;
      snprintf(buf, sizeof(buf), "<rect x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\"><title>", x0, y_top,
               x1 - x0, y_bottom - y_top);
      out << buf << XmlEscape(t.series[s]) << " " << UtcTime(w.start_unix_ns);
      snprintf(buf, sizeof(buf), ": %.1f%% CPU</title></rect>\n", v);
      out << buf;
    }
    out << "</g>\n";
  }

  // Axes over the areas: round ticks, time labels inside the picture.
  out << "<g class=\"y-axis\">\n";
  for (int i = 0; i <= intervals; ++i) {
    const double v = step * i;
    snprintf(buf, sizeof(buf), "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">", left - 6, y(v) + 4);
    out << buf << TickLabel(v) << "%</text>\n";
  }
  out << "</g>\n";
  snprintf(buf, sizeof(buf), "<line class=\"axis\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>\n", left,
           top + plot_h, width - right, top + plot_h);
  out << buf;
  // Within one UTC day the labels are times and the caption the date; the
  // first label starts at the axis' left end and the last ends at its right.
  const bool one_day = t0 / kNsPerDay == (t1 - 1) / kNsPerDay;
  out << "<g class=\"x-axis\">\n";
  for (int i = 0; i <= 4 && !t.windows.empty(); ++i) {
    const uint64_t ns = i == 4 ? t1 : t0 + (t1 - t0) / 4 * static_cast<uint64_t>(i);
    const char* anchor = i == 0 ? "start" : i == 4 ? "end" : "middle";
    snprintf(buf, sizeof(buf), "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"%s\">", x(ns), top + plot_h + 18, anchor);
    out << buf << (one_day ? UtcClock(ns) : UtcTime(ns)) << "</text>\n";
  }
  if (!t.windows.empty()) {
    snprintf(buf, sizeof(buf), "<text class=\"caption\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">",
             left + plot_w / 2, top + plot_h + 36);
    out << buf << (one_day ? "UTC, " + UtcDate(t0) : std::string("UTC")) << "</text>\n";
  }
  out << "</g>\n";

  // The legend, top of the stack first.
  out << "<g class=\"legend\">\n";
  for (size_t i = 0; i < stack.size(); ++i) {
    const size_t s = stack[stack.size() - 1 - i];
    const double ly = legend_top + 18.0 * static_cast<double>(i);
    snprintf(buf, sizeof(buf),
             "<rect x=\"%.1f\" y=\"%.1f\" width=\"12\" height=\"12\" fill=\"%s\"/><text x=\"%.1f\" y=\"%.1f\">",
             left, ly, color_of[s], left + 18, ly + 11);
    out << buf << XmlEscape(t.series[s]) << "</text>\n";
  }
  out << "</g>\n</svg>\n";
}

}  // namespace arcprof::reports
