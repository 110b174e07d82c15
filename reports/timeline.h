// The timeline view: CPU per process (or per thread) per window, so a user
// sees when a process got hot, then reads that range with --since/--until.
//   arcprof report --view timeline --store DIR [--since ..] [--by tid] [--format json]
//   arcprof export --format timeline-svg --store DIR [-o timeline.svg]
// CPU is in percent of one CPU: samples / frequency / window seconds.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "model/profile.h"
#include "model/thread_filter.h"

namespace arcprof::reports {

struct TimelineWindow {
  uint64_t start_unix_ns = 0;
  uint64_t end_unix_ns = 0;
  std::vector<double> cpu_percent;  // parallel to Timeline::series
  double total_percent = 0;         // every series, "other" included
};

struct Timeline {
  std::vector<std::string> series;  // the top consumers, then "other" when there are more
  std::vector<TimelineWindow> windows;
};

class TimelineBuilder {
 public:
  // by_tid: one series per thread instead of per process; top: series kept.
  TimelineBuilder(bool by_tid, size_t top, model::ThreadFilter filter)
      : by_tid_(by_tid), top_(top), filter_(std::move(filter)) {}
  // Adds one window (windows are added in time order).
  void Add(const model::Profile& window);
  Timeline Build() const;

 private:
  bool by_tid_;
  size_t top_;
  model::ThreadFilter filter_;
  std::vector<std::string> keys_;               // every key seen
  std::vector<std::vector<std::pair<size_t, double>>> rows_;  // per window: (key, cpu %)
  std::vector<std::pair<uint64_t, uint64_t>> times_;
  std::vector<double> key_totals_;
};

void WriteTimelineText(const Timeline& timeline, std::ostream& out);
void WriteTimelineJson(const Timeline& timeline, std::ostream& out);
// A self-contained SVG: the series stacked over time (one rectangle per
// series and window, the processes by CPU time from the bottom, then "other",
// then the idle task), round y ticks, a legend and a tooltip per rectangle.
// The idle task and "other" have colours of their own. It scales down to a
// narrower window.
void WriteTimelineSvg(const Timeline& timeline, const std::string& title, std::ostream& out);

}  // namespace arcprof::reports
