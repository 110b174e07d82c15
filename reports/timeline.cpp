#include "reports/timeline.h"

#include <time.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include "reports/json_writer.h"
#include <numeric>
#include <unordered_map>

#include "reports/export_text.h"
#include "model/profile_merge.h"

namespace arcprof::reports {
using namespace arcprof::model;
namespace {

std::string UtcTime(uint64_t unix_ns, bool seconds = true) {
  const time_t secs = static_cast<time_t>(unix_ns / 1000000000ull);
  tm t{};
  gmtime_r(&secs, &t);
  char buf[32];
  strftime(buf, sizeof(buf), seconds ? "%Y-%m-%dT%H:%M:%SZ" : "%H:%M", &t);
  return buf;
}

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
      key = "swapper (idle)";
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
  if (other) out.series.push_back("other");
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

void WriteTimelineSvg(const Timeline& t, const std::string& title, std::ostream& out) {
  static const char* kColors[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
                                  "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};
  const double width = 1000, plot_h = 360, left = 60, top = 40, right = 20;
  const double legend_h = 18.0 * static_cast<double>(t.series.size()) + 10;
  const double height = top + plot_h + 40 + legend_h;
  double max_v = 1;
  for (const TimelineWindow& w : t.windows) {
    for (double v : w.cpu_percent) max_v = std::max(max_v, v);
  }
  max_v = std::ceil(max_v / 10.0) * 10.0;
  uint64_t t0 = t.windows.empty() ? 0 : t.windows.front().start_unix_ns;
  uint64_t t1 = t.windows.empty() ? 1 : t.windows.back().end_unix_ns;
  if (t1 <= t0) t1 = t0 + 1;
  const double plot_w = width - left - right;
  auto x = [&](uint64_t ns) { return left + plot_w * static_cast<double>(ns - t0) / static_cast<double>(t1 - t0); };
  auto y = [&](double v) { return top + plot_h - plot_h * v / max_v; };
  char buf[256];
  snprintf(buf, sizeof(buf),
           "<?xml version=\"1.0\" standalone=\"no\"?>\n<svg version=\"1.1\" width=\"%.0f\" height=\"%.0f\" "
           "viewBox=\"0 0 %.0f %.0f\" xmlns=\"http://www.w3.org/2000/svg\">\n",
           width, height, width, height);
  out << buf;
  out << "<style>text{font-family:Verdana,sans-serif;font-size:12px} .axis{stroke:#888;stroke-width:1}"
         " .grid{stroke:#ddd;stroke-width:1} polyline{fill:none;stroke-width:2}</style>\n";
  out << "<rect width=\"100%\" height=\"100%\" fill=\"#ffffff\"/>\n";
  snprintf(buf, sizeof(buf), "<text x=\"%.0f\" y=\"24\" text-anchor=\"middle\" font-size=\"16\">", width / 2);
  out << buf << XmlEscape(title) << "</text>\n";
  for (int i = 0; i <= 4; ++i) {
    const double v = max_v * i / 4;
    snprintf(buf, sizeof(buf),
             "<line class=\"grid\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>"
             "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%.0f%%</text>\n",
             left, y(v), width - right, y(v), left - 6, y(v) + 4, v);
    out << buf;
  }
  snprintf(buf, sizeof(buf), "<line class=\"axis\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>\n", left,
           top + plot_h, width - right, top + plot_h);
  out << buf;
  for (int i = 0; i <= 4 && !t.windows.empty(); ++i) {
    const uint64_t ns = t0 + (t1 - t0) / 4 * static_cast<uint64_t>(i);
    snprintf(buf, sizeof(buf), "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">", x(ns), top + plot_h + 18);
    out << buf << UtcTime(ns) << "</text>\n";
  }
  for (size_t s = 0; s < t.series.size(); ++s) {
    const char* color = kColors[s % std::size(kColors)];
    out << "<g class=\"series\"><title>" << XmlEscape(t.series[s]) << "</title>\n<polyline stroke=\"" << color
        << "\" points=\"";
    for (const TimelineWindow& w : t.windows) {
      const uint64_t mid = w.start_unix_ns + (w.end_unix_ns - w.start_unix_ns) / 2;
      snprintf(buf, sizeof(buf), "%.1f,%.1f ", x(mid), y(w.cpu_percent[s]));
      out << buf;
    }
    out << "\"/>\n";
    for (const TimelineWindow& w : t.windows) {
      const uint64_t mid = w.start_unix_ns + (w.end_unix_ns - w.start_unix_ns) / 2;
      snprintf(buf, sizeof(buf), "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3\" fill=\"%s\"><title>", x(mid),
               y(w.cpu_percent[s]), color);
      out << buf << XmlEscape(t.series[s]) << " " << UtcTime(w.start_unix_ns);
      snprintf(buf, sizeof(buf), ": %.1f%% CPU</title></circle>\n", w.cpu_percent[s]);
      out << buf;
    }
    out << "</g>\n";
    const double ly = top + plot_h + 40 + 18.0 * static_cast<double>(s);
    snprintf(buf, sizeof(buf),
             "<rect x=\"%.1f\" y=\"%.1f\" width=\"12\" height=\"12\" fill=\"%s\"/><text x=\"%.1f\" y=\"%.1f\">",
             left, ly, color, left + 18, ly + 11);
    out << buf << XmlEscape(t.series[s]) << "</text>\n";
  }
  out << "</svg>\n";
}

}  // namespace arcprof::reports
