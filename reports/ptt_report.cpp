#include "reports/ptt_report.h"

#include "common/text.h"

#include <algorithm>
#include <cctype>
#include <functional>
#include <cmath>
#include <cstdio>
#include <map>
#include "reports/json_writer.h"
#include <ostream>
#include <set>

namespace arcprof::reports {
using namespace arcprof::model;
namespace {

double Ms(uint64_t ns) { return static_cast<double>(ns) / 1e6; }
double Round(double value, double scale) { return std::round(value * scale) / scale; }

std::string Format(const char* format, double value) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, format, value);
  return buffer;
}

std::optional<size_t> EventSlot(const std::vector<PttEvent>& events, const std::string& name) {
  for (size_t i = 0; i < events.size(); ++i) {
    if (events[i].name == name) return i;
  }
  return std::nullopt;
}

std::optional<double> Cpi(const std::vector<PttEvent>& events,
                          const std::vector<std::optional<uint64_t>>& values) {
  auto instructions = EventSlot(events, "instructions");
  auto cycles = EventSlot(events, "cycles");
  if (!instructions || !cycles || !values[*instructions] || !values[*cycles] ||
      *values[*instructions] == 0) {
    return std::nullopt;
  }
  return static_cast<double>(*values[*cycles]) / static_cast<double>(*values[*instructions]);
}

// Sort keys: a number (descending) or a name (ascending); ties by tid.
using SortValue = std::pair<double, std::string>;

Result<std::function<SortValue(const PttReportRow&)>> SortKey(const std::string& key,
                                                               const std::vector<PttEvent>& events) {
  using Row = PttReportRow;
  if (key == "cpu") return std::function([](const Row& r) { return SortValue{-r.cpu_ms, ""}; });
  if (key == "irq") return std::function([](const Row& r) { return SortValue{-r.interrupt_ms, ""}; });
  if (key == "dispatches") {
    return std::function([](const Row& r) { return SortValue{-static_cast<double>(r.dispatches), ""}; });
  }
  if (key == "interrupts") {
    return std::function([](const Row& r) { return SortValue{-static_cast<double>(r.interrupts), ""}; });
  }
  if (key == "pid") return std::function([](const Row& r) { return SortValue{r.pid, ""}; });
  if (key == "tid") return std::function([](const Row& r) { return SortValue{r.tid, ""}; });
  if (key == "name") return std::function([](const Row& r) { return SortValue{0, r.comm}; });
  if (key == "cpi") {
    return std::function([](const Row& r) { return SortValue{r.cpi ? -*r.cpi : 0.0, ""}; });
  }
  if (auto slot = EventSlot(events, key)) {
    const size_t i = *slot;
    return std::function([i](const Row& r) {
      return SortValue{r.events[i] ? -static_cast<double>(*r.events[i]) : 0.0, ""};
    });
  }
  std::string known = "cpu, irq, dispatches, interrupts, pid, tid, name, cpi";
  for (const PttEvent& e : events) known += ", " + e.name;
  return MakeError("unknown --sort key '" + key + "' for the ptt view; use one of " + known);
}

// A process: its pid and start (a pid another process held is another).
using ProcessKey = std::pair<uint32_t, uint64_t>;

// The process name of each process: the comm of its thread-group leader.
std::map<ProcessKey, std::string> ProcessNames(const Profile& profile) {
  std::map<ProcessKey, std::string> names;
  for (const ThreadRecord& t : profile.threads) {
    if (!t.process_comm.empty()) names.emplace(ProcessKey{t.pid, t.process_start_ns}, t.process_comm);
  }
  for (const PttThread& t : profile.ptt.threads) {
    if (t.pid == t.tid) names[{t.pid, t.process_start_ns}] = t.comm;
  }
  return names;
}

}  // namespace

Result<PttReport> BuildPttReport(const Profile& profile, const PttReportOptions& options) {
  const PttData& ptt = profile.ptt;
  if (!ptt.recorded) {
    return MakeError(
        "this capture has no per-thread time; record it with `arcprof record --ptt`");
  }
  PttReport report;
  report.events = ptt.events;
  report.sort = options.sort;
  if (profile.meta.end_monotonic_ns > profile.meta.start_monotonic_ns) {
    report.duration_s =
        static_cast<double>(profile.meta.end_monotonic_ns - profile.meta.start_monotonic_ns) / 1e9;
  }
  std::set<uint32_t> cpus;
  for (const PttCpuInterval& c : ptt.intervals) cpus.insert(c.cpu);
  report.cpus = cpus.size();

  auto key = SortKey(options.sort, ptt.events);
  if (!key) return key.error();

  const auto process_names = ProcessNames(profile);
  // The identity of each sampled process, for --container/--service/--cgroup.
  std::map<ProcessKey, const model::ProcessIdentity*> identities;
  for (const ThreadRecord& t : profile.threads) {
    if (!t.identity.empty()) identities.emplace(ProcessKey{t.pid, t.process_start_ns}, &t.identity);
  }
  report.total.comm = "TOTAL";
  report.total.events.assign(ptt.events.size(), std::nullopt);
  uint64_t total_cpu = 0, total_hard = 0, total_soft = 0;
  std::vector<uint64_t> total_events(ptt.events.size(), 0);
  for (const PttThread& t : ptt.threads) {
    ThreadRecord record;
    record.pid = t.pid;
    record.tid = t.tid;
    record.comm = t.comm;
    record.process_start_ns = t.process_start_ns;
    // A row without a start (captures before schema 9) is its pid's process.
    auto find = [&](const auto& by_process) {
      if (t.process_start_ns != 0) return by_process.find(ProcessKey{t.pid, t.process_start_ns});
      auto it = by_process.lower_bound(ProcessKey{t.pid, 0});
      return it != by_process.end() && it->first.first == t.pid ? it : by_process.end();
    };
    if (auto it = find(process_names); it != process_names.end()) record.process_comm = it->second;
    if (auto it = find(identities); it != identities.end()) record.identity = *it->second;
    if (!options.filter.Matches(record)) continue;
    PttReportRow row;
    row.pid = t.pid;
    row.tid = t.tid;
    row.comm = t.comm;
    row.process_comm = record.process_comm;
    row.cpu_ms = Ms(t.cpu_ns);
    row.hardirq_ms = Ms(t.hardirq_ns);
    row.softirq_ms = Ms(t.softirq_ns);
    row.interrupt_ms = Ms(t.interrupt_ns());
    row.dispatches = t.dispatches;
    row.interrupts = t.interrupts;
    for (size_t i = 0; i < ptt.events.size(); ++i) {
      if (ptt.events[i].available && i < t.events.size()) {
        row.events.push_back(t.events[i]);
        total_events[i] += t.events[i];
      } else {
        row.events.push_back(std::nullopt);
      }
    }
    row.cpi = Cpi(ptt.events, row.events);
    total_cpu += t.cpu_ns;
    total_hard += t.hardirq_ns;
    total_soft += t.softirq_ns;
    report.total.dispatches += t.dispatches;
    report.total.interrupts += t.interrupts;
    report.rows.push_back(std::move(row));
  }
  report.total.cpu_ms = Ms(total_cpu);
  report.total.hardirq_ms = Ms(total_hard);
  report.total.softirq_ms = Ms(total_soft);
  report.total.interrupt_ms = Ms(total_hard + total_soft);
  for (size_t i = 0; i < ptt.events.size(); ++i) {
    if (ptt.events[i].available) report.total.events[i] = total_events[i];
  }
  report.total.cpi = Cpi(ptt.events, report.total.events);

  std::stable_sort(report.rows.begin(), report.rows.end(),
                   [&](const PttReportRow& a, const PttReportRow& b) {
                     const SortValue ka = (*key)(a), kb = (*key)(b);
                     if (ka != kb) return ka < kb;
                     return std::pair(a.pid, a.tid) < std::pair(b.pid, b.tid);
                   });
  return report;
}

void WritePttText(const PttReport& report, std::ostream& out) {
  out << "PTT: per-thread time, interrupts factored out\n";
  out << "Recording: " << Format("%.3f", report.duration_s) << " s on " << report.cpus
      << " CPUs, " << report.rows.size() << " threads, sorted by " << report.sort << "\n";
  for (const PttEvent& e : report.events) {
    if (!e.available) {
      out << e.name << ": "
          << (e.unavailable_reason.empty() ? std::string("not available") : e.unavailable_reason)
          << "\n";
    }
  }
  const bool has_cpi = EventSlot(report.events, "instructions") &&
                       EventSlot(report.events, "cycles") &&
                       report.events[*EventSlot(report.events, "instructions")].available &&
                       report.events[*EventSlot(report.events, "cycles")].available;
  out << "\n";
  char line[512];
  std::snprintf(line, sizeof line, "%8s %8s %-16s %12s %10s %10s %10s", "PID", "TID", "COMM",
                "CPU_ms", "IRQ_ms", "DISPATCH", "INTR");
  out << line;
  for (const PttEvent& e : report.events) {
    if (!e.available) continue;
    std::string upper = e.name;
    for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    std::snprintf(line, sizeof line, " %14s", upper.c_str());
    out << line;
  }
  if (has_cpi) out << "      CPI";
  out << "\n";

  auto print_row = [&](const PttReportRow& r, bool is_total) {
    if (is_total) {
      std::snprintf(line, sizeof line, "%8s %8s %-16s", "", "", "TOTAL");
    } else {
      std::snprintf(line, sizeof line, "%8u %8u %-16s", r.pid, r.tid,
                    r.comm.empty() ? "[unknown]" : r.comm.c_str());
    }
    out << line;
    std::snprintf(line, sizeof line, " %12.3f %10.3f %10llu %10llu", r.cpu_ms, r.interrupt_ms,
                  static_cast<unsigned long long>(r.dispatches),
                  static_cast<unsigned long long>(r.interrupts));
    out << line;
    for (size_t i = 0; i < report.events.size(); ++i) {
      if (!report.events[i].available) continue;
      std::snprintf(line, sizeof line, " %14llu",
                    static_cast<unsigned long long>(r.events[i].value_or(0)));
      out << line;
    }
    if (has_cpi) {
      if (r.cpi) {
        std::snprintf(line, sizeof line, " %8.3f", *r.cpi);
      } else {
        std::snprintf(line, sizeof line, " %8s", "-");
      }
      out << line;
    }
    out << "\n";
  };
  for (const PttReportRow& r : report.rows) print_row(r, false);
  print_row(report.total, true);
}

namespace {

Json RowJson(const PttReport& report, const PttReportRow& r) {
  Json row;
  row["pid"] = r.pid;
  row["tid"] = r.tid;
  row["comm"] = r.comm;
  row["process"] = r.process_comm;
  row["cpu_ms"] = Round(r.cpu_ms, 1e6);
  row["interrupt_ms"] = Round(r.interrupt_ms, 1e6);
  row["hardirq_ms"] = Round(r.hardirq_ms, 1e6);
  row["softirq_ms"] = Round(r.softirq_ms, 1e6);
  row["dispatches"] = r.dispatches;
  row["interrupts"] = r.interrupts;
  Json events = Json::object();
  for (size_t i = 0; i < report.events.size(); ++i) {
    events[report.events[i].name] =
        r.events[i] ? Json(*r.events[i]) : Json(nullptr);
  }
  row["events"] = std::move(events);
  row["cpi"] = r.cpi ? Json(Round(*r.cpi, 1e6)) : Json(nullptr);
  return row;
}

}  // namespace

void WritePttJson(const PttReport& report, std::ostream& out) {
  Json doc;
  doc["view"] = "ptt";
  doc["duration_s"] = Round(report.duration_s, 1e6);
  doc["cpus"] = report.cpus;
  doc["sort"] = report.sort;
  Json events = Json::array();
  for (const PttEvent& e : report.events) {
    Json item;
    item["name"] = e.name;
    item["available"] = e.available;
    if (!e.available) item["reason"] = e.unavailable_reason;
    events.push_back(std::move(item));
  }
  doc["events"] = std::move(events);
  Json rows = Json::array();
  for (const PttReportRow& r : report.rows) rows.push_back(RowJson(report, r));
  doc["threads"] = std::move(rows);
  doc["total"] = RowJson(report, report.total);
  out << DumpJson(doc, 2) << "\n";
}

int RunPttView(const Profile& profile, const ReportRequest& request, std::ostream& out,
               std::ostream& err) {
  PttReportOptions options;
  // "base" is the shared --sort default (an arcflow key): the ptt default is cpu.
  if (!request.sort.empty() && request.sort != "base") options.sort = request.sort;
  options.filter = request.filter;
  auto report = BuildPttReport(profile, options);
  if (!report) {
    err << ErrorLine("report", report.error().message);
    return 1;
  }
  if (request.format == "json") {
    WritePttJson(*report, out);
  } else {
    WritePttText(*report, out);
  }
  return 0;
}

}  // namespace arcprof::reports
