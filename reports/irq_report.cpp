#include "reports/irq_report.h"

#include "common/text.h"

#include <algorithm>
#include <charconv>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <cstdio>
#include <map>
#include "reports/json_writer.h"
#include <ostream>

namespace arcprof::reports {
using namespace arcprof::model;
namespace {

double Round(double value, double scale) { return std::round(value * scale) / scale; }

void Add(IrqCpuRow& into, const PttCpuInterval& c, uint64_t wall) {
  into.wall_ns += wall;
  into.busy_ns += c.busy_ns;
  into.idle_ns += c.idle_ns;
  into.hardirq_ns += c.hardirq_ns;
  into.softirq_ns += c.softirq_ns;
  into.hardirqs += c.hardirqs;
  into.softirqs += c.softirqs;
}

void AddRow(IrqCpuRow& into, const IrqCpuRow& row) {
  into.wall_ns += row.wall_ns;
  into.busy_ns += row.busy_ns;
  into.idle_ns += row.idle_ns;
  into.hardirq_ns += row.hardirq_ns;
  into.softirq_ns += row.softirq_ns;
  into.hardirqs += row.hardirqs;
  into.softirqs += row.softirqs;
}

const char* KindName(IrqKind kind) {
  switch (kind) {
    case IrqKind::kHardIrq: return "hardirq";
    case IrqKind::kSoftIrq: return "softirq";
    case IrqKind::kSysVec: return "sysvec";
  }
  return "?";
}

}  // namespace

Result<uint64_t> ParseInterval(std::string_view text) {
  auto bad = [&] {
    return MakeError("invalid --interval '" + std::string(text) +
                         "'; use a duration such as 1s, 250ms or 500us (at least 1ms)");
  };
  size_t unit_at = 0;
  while (unit_at < text.size() &&
         (std::isdigit(static_cast<unsigned char>(text[unit_at])) || text[unit_at] == '.')) {
    ++unit_at;
  }
  const std::string number(text.substr(0, unit_at));
  const std::string_view unit = text.substr(unit_at);
  if (number.empty() || number.find_first_not_of("0123456789.") != std::string::npos ||
      std::count(number.begin(), number.end(), '.') > 1 || number == ".") {
    return bad();
  }
  double scale = 0;
  if (unit == "s" || unit.empty()) {
    scale = 1e9;
  } else if (unit == "ms") {
    scale = 1e6;
  } else if (unit == "us") {
    scale = 1e3;
  } else {
    return bad();
  }
  const double ns = std::strtod(number.c_str(), nullptr) * scale;
  if (!(ns >= 1e6) || ns > 1e15) return bad();
  return static_cast<uint64_t>(std::llround(ns));
}

Result<IrqReport> BuildIrqReport(const Profile& profile, uint64_t interval_ns) {
  const PttData& ptt = profile.ptt;
  if (!ptt.recorded) {
    return MakeError(
        "this capture has no interrupt/idle accounting; record it with `arcprof record --ptt`");
  }
  IrqReport report;
  report.interval_ns = interval_ns;
  if (profile.meta.end_monotonic_ns > profile.meta.start_monotonic_ns) {
    report.duration_s =
        static_cast<double>(profile.meta.end_monotonic_ns - profile.meta.start_monotonic_ns) / 1e9;
  }
  uint64_t origin = UINT64_MAX;
  for (const PttCpuInterval& c : ptt.intervals) origin = std::min(origin, c.start_ns);

  // Stored rows are short (the recorder's poll period); each lands in the
  // report interval that holds its midpoint.
  std::map<std::pair<uint64_t, uint32_t>, IrqCpuRow> by_interval;
  std::map<uint32_t, IrqCpuRow> by_cpu;
  for (const PttCpuInterval& c : ptt.intervals) {
    const uint64_t wall = c.end_ns - c.start_ns;
    const uint64_t mid = c.start_ns - origin + wall / 2;
    const uint64_t index = interval_ns ? mid / interval_ns : 0;
    IrqCpuRow& row = by_interval[{index, c.cpu}];
    row.interval_index = index;
    row.cpu = c.cpu;
    Add(row, c, wall);
    IrqCpuRow& cpu = by_cpu[c.cpu];
    cpu.cpu = c.cpu;
    Add(cpu, c, wall);
  }
  IrqCpuRow all_interval;
  bool open = false;
  for (const auto& [key, row] : by_interval) {
    if (open && all_interval.interval_index != key.first) {
      report.intervals.push_back(all_interval);
      open = false;
    }
    if (!open) {
      all_interval = IrqCpuRow{};
      all_interval.interval_index = key.first;
      open = true;
    }
    report.intervals.push_back(row);
    AddRow(all_interval, row);
  }
  if (open) report.intervals.push_back(all_interval);
  IrqCpuRow all;
  for (const auto& [cpu, row] : by_cpu) {
    report.per_cpu.push_back(row);
    AddRow(all, row);
  }
  if (!by_cpu.empty()) report.per_cpu.push_back(all);

  std::map<std::pair<uint8_t, uint32_t>, IrqSourceRow> sources;
  for (const PttIrqVector& v : ptt.irq_vectors) {
    IrqSourceRow& s = sources[{static_cast<uint8_t>(v.kind), v.vector}];
    s.kind = v.kind;
    s.vector = v.vector;
    if (s.name.empty()) s.name = v.name;
    s.count += v.count;
    s.ns += v.ns;
    s.ns_by_cpu.emplace_back(v.cpu, v.ns);
  }
  for (auto& [key, s] : sources) {
    std::sort(s.ns_by_cpu.begin(), s.ns_by_cpu.end());
    report.sources.push_back(std::move(s));
  }
  std::stable_sort(report.sources.begin(), report.sources.end(),
                   [](const IrqSourceRow& a, const IrqSourceRow& b) { return a.ns > b.ns; });
  return report;
}

void WriteIrqText(const IrqReport& report, std::ostream& out) {
  char line[256];
  out << "AboveIdle: CPU time per interval (interrupts factored out of busy and idle)\n";
  std::snprintf(line, sizeof line, "Recording: %.3f s, interval %.3f s\n", report.duration_s,
                static_cast<double>(report.interval_ns) / 1e9);
  out << line << "\n";
  const char* header = "%9s %4s %8s %8s %9s %9s %10s %10s\n";
  auto print = [&](const IrqCpuRow& r, const std::string& time) {
    const std::string cpu = r.cpu < 0 ? std::string("all") : std::to_string(r.cpu);
    std::snprintf(line, sizeof line, "%9s %4s %8.2f %8.2f %9.2f %9.2f %10llu %10llu\n",
                  time.c_str(), cpu.c_str(), r.Percent(r.busy_ns), r.Percent(r.idle_ns),
                  r.Percent(r.hardirq_ns), r.Percent(r.softirq_ns),
                  static_cast<unsigned long long>(r.hardirqs),
                  static_cast<unsigned long long>(r.softirqs));
    out << line;
  };
  {
    char h[256];
    std::snprintf(h, sizeof h, header, "TIME_s", "CPU", "BUSY%", "IDLE%", "HARDIRQ%", "SOFTIRQ%",
                  "HARDIRQS", "SOFTIRQS");
    out << h;
  }
  for (const IrqCpuRow& r : report.intervals) {
    char t[32];
    std::snprintf(t, sizeof t, "%.3f",
                  static_cast<double>(r.interval_index * report.interval_ns) / 1e9);
    print(r, t);
  }
  out << "\nWhole recording per CPU\n";
  {
    char h[256];
    std::snprintf(h, sizeof h, header, "", "CPU", "BUSY%", "IDLE%", "HARDIRQ%", "SOFTIRQ%",
                  "HARDIRQS", "SOFTIRQS");
    out << h;
  }
  for (const IrqCpuRow& r : report.per_cpu) print(r, "");

  out << "\nInterrupt sources (all CPUs)\n";
  std::snprintf(line, sizeof line, "%-8s %-28s %12s %12s %10s\n", "KIND", "SOURCE", "COUNT",
                "TOTAL_ms", "AVG_us");
  out << line;
  for (const IrqSourceRow& s : report.sources) {
    const double avg_us = s.count ? static_cast<double>(s.ns) / 1e3 / static_cast<double>(s.count) : 0;
    std::snprintf(line, sizeof line, "%-8s %-28s %12llu %12.3f %10.3f\n", KindName(s.kind),
                  s.name.c_str(), static_cast<unsigned long long>(s.count),
                  static_cast<double>(s.ns) / 1e6, avg_us);
    out << line;
  }
}

namespace {

Json CpuRowJson(const IrqCpuRow& r) {
  Json row;
  row["cpu"] = r.cpu < 0 ? Json("all") : Json(r.cpu);
  row["wall_ms"] = Round(static_cast<double>(r.wall_ns) / 1e6, 1e6);
  row["busy_pct"] = Round(r.Percent(r.busy_ns), 1e4);
  row["idle_pct"] = Round(r.Percent(r.idle_ns), 1e4);
  row["hardirq_pct"] = Round(r.Percent(r.hardirq_ns), 1e4);
  row["softirq_pct"] = Round(r.Percent(r.softirq_ns), 1e4);
  row["busy_ns"] = r.busy_ns;
  row["idle_ns"] = r.idle_ns;
  row["hardirq_ns"] = r.hardirq_ns;
  row["softirq_ns"] = r.softirq_ns;
  row["hardirqs"] = r.hardirqs;
  row["softirqs"] = r.softirqs;
  return row;
}

}  // namespace

void WriteIrqJson(const IrqReport& report, std::ostream& out) {
  Json doc;
  doc["view"] = "irq";
  doc["duration_s"] = Round(report.duration_s, 1e6);
  doc["interval_s"] = Round(static_cast<double>(report.interval_ns) / 1e9, 1e6);
  Json intervals = Json::array();
  for (const IrqCpuRow& r : report.intervals) {
    Json row = CpuRowJson(r);
    row["start_s"] = Round(static_cast<double>(r.interval_index * report.interval_ns) / 1e9, 1e6);
    intervals.push_back(std::move(row));
  }
  doc["intervals"] = std::move(intervals);
  Json per_cpu = Json::array();
  for (const IrqCpuRow& r : report.per_cpu) per_cpu.push_back(CpuRowJson(r));
  doc["per_cpu"] = std::move(per_cpu);
  Json sources = Json::array();
  for (const IrqSourceRow& s : report.sources) {
    Json row;
    row["kind"] = KindName(s.kind);
    row["vector"] = s.vector;
    row["name"] = s.name;
    row["count"] = s.count;
    row["total_ms"] = Round(static_cast<double>(s.ns) / 1e6, 1e6);
    row["avg_us"] =
        s.count ? Round(static_cast<double>(s.ns) / 1e3 / static_cast<double>(s.count), 1e3) : 0.0;
    Json by_cpu = Json::object();
    for (const auto& [cpu, ns] : s.ns_by_cpu) by_cpu[std::to_string(cpu)] = ns;
    row["ns_by_cpu"] = std::move(by_cpu);
    sources.push_back(std::move(row));
  }
  doc["sources"] = std::move(sources);
  out << DumpJson(doc, 2) << "\n";
}

int RunIrqView(const Profile& profile, const ReportRequest& request, std::ostream& out,
               std::ostream& err) {
  auto interval = ParseInterval(request.interval);
  if (!interval) {
    err << ErrorLine("report", interval.error().message);
    return 1;
  }
  auto report = BuildIrqReport(profile, *interval);
  if (!report) {
    err << ErrorLine("report", report.error().message);
    return 1;
  }
  if (request.format == "json") {
    WriteIrqJson(*report, out);
  } else {
    WriteIrqText(*report, out);
  }
  return 0;
}

}  // namespace arcprof::reports
