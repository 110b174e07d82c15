#include "reports/tprof.h"

#include "model/frame_name.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include "reports/json_writer.h"
#include <ostream>
#include <unordered_map>

namespace arcprof::reports {
using namespace arcprof::model;
namespace {

constexpr TprofLevel kAllLevels[] = {TprofLevel::kPid,  TprofLevel::kTid,       TprofLevel::kModule,
                                     TprofLevel::kSymbol, TprofLevel::kHost, TprofLevel::kContainer,
                                     TprofLevel::kService, TprofLevel::kPod};

std::string Printf(const char* format, double value) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, format, value);
  return buffer;
}

double Percent(uint64_t part, uint64_t whole) {
  return whole == 0 ? 0.0 : 100.0 * static_cast<double>(part) / static_cast<double>(whole);
}

double Round(double value, double scale) { return std::round(value * scale) / scale; }

std::string BaseName(const std::string& path) {
  const auto slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

struct Leaf {
  const ThreadRecord* thread;
  const FrameRecord* frame;  // nullptr for ticks on the thread itself (an empty stack)
  const std::string* module;  // the frame's module path; nullptr with frame
  uint64_t ticks;
};

// A runtime's frames (python, js) show their kind as their module, as Java's
// compiled code shows JITCODE; their source file goes with the function.
std::string ModuleDisplay(const Leaf& leaf) {
  if (leaf.frame && IsRuntimeKind(leaf.frame->kind)) return std::string(FrameKindName(leaf.frame->kind));
  if (leaf.module == nullptr || leaf.module->empty()) return "[unknown]";
  return *leaf.module;
}

// The module as a row key: its id (0, "", for no frame), not a copy of its
// path; a runtime's kind for its frames.
std::string ModuleKey(const Leaf& leaf) {
  if (leaf.frame && IsRuntimeKind(leaf.frame->kind)) return std::string(FrameKindName(leaf.frame->kind));
  return std::to_string(leaf.frame ? leaf.frame->module : 0);
}

std::string SymbolDisplay(const Leaf& leaf) {
  if (leaf.frame == nullptr) return "[no frames]";
  return FrameDisplayName(*leaf.frame, *leaf.module);
}

// A row while it is being built: children keyed by identity, not by display.
struct BuildRow {
  TprofRow row;
  std::map<std::string, std::unique_ptr<BuildRow>> children;
};

void FillRow(TprofRow& row, TprofLevel level, const Leaf& leaf, bool module_above) {
  row.level = level;
  switch (level) {
    case TprofLevel::kHost:
      row.host = leaf.thread->host;
      row.name = row.host.empty() ? "[no host]" : row.host;
      break;
    case TprofLevel::kPid:
      row.pid = leaf.thread->pid;
      row.name = ProcessName(*leaf.thread) + "_" + std::to_string(leaf.thread->pid);
      // A process in its own pid namespace (a container) shows both pids.
      if (const uint32_t ns = leaf.thread->identity.ns_pid; ns != 0 && ns != leaf.thread->pid) {
        row.ns_pid = ns;
        row.name += " (pid " + std::to_string(ns) + " in its namespace)";
      }
      break;
    case TprofLevel::kTid:
      row.pid = leaf.thread->pid;
      row.tid = leaf.thread->tid;
      row.name = "tid " + (leaf.thread->comm.empty() ? std::string("[unknown]") : leaf.thread->comm) +
                 "_" + std::to_string(leaf.thread->tid);
      break;
    case TprofLevel::kContainer: {
      const ProcessIdentity& id = leaf.thread->identity;
      row.container_id = id.container_id;
      row.container_runtime = id.container_runtime;
      row.name = id.container_id.empty() ? "[no container]" : ShortContainerId(id.container_id);
      if (!id.container_runtime.empty()) row.name += " (" + id.container_runtime + ")";
      break;
    }
    case TprofLevel::kService:
      row.service = leaf.thread->identity.service_name;
      row.name = row.service.empty() ? ProcessName(*leaf.thread) : row.service;
      break;
    case TprofLevel::kPod:
      row.pod_uid = leaf.thread->identity.pod_uid;
      row.qos_class = leaf.thread->identity.qos_class;
      row.name = row.pod_uid.empty() ? "[no pod]" : row.pod_uid + " (" + row.qos_class + ")";
      break;
    case TprofLevel::kModule:
      row.module = ModuleDisplay(leaf);
      row.name = row.module;
      break;
    case TprofLevel::kSymbol:
      row.module = ModuleDisplay(leaf);
      row.symbol = leaf.frame ? leaf.frame->symbol : "";
      row.name = SymbolDisplay(leaf);
      // Without a MOD level above, "main" of two programs must stay apart and
      // say where it comes from.
      if (leaf.frame && IsRuntimeKind(leaf.frame->kind)) {
        row.name += " (" + BaseName(*leaf.module) + ")";  // its source file
      } else if (!module_above) {
        row.name += " (" + BaseName(row.module) + ")";
      }
      break;
  }
}

std::string RowKey(TprofLevel level, const Leaf& leaf) {
  switch (level) {
    case TprofLevel::kHost:
      return leaf.thread->host;
    // A process is its pid and start: two processes that held one pid (in
    // two windows of a store) are two rows.
    case TprofLevel::kPid:
      return leaf.thread->host + '\0' + std::to_string(leaf.thread->pid) + "@" +
             std::to_string(leaf.thread->process_start_ns);
    case TprofLevel::kTid:
      return leaf.thread->host + '\0' + std::to_string(leaf.thread->pid) + "@" +
             std::to_string(leaf.thread->process_start_ns) + "/" + std::to_string(leaf.thread->tid);
    case TprofLevel::kModule:
      return ModuleKey(leaf);
    case TprofLevel::kSymbol:  // by file: two files' "main" stay apart
      return std::to_string(leaf.frame ? leaf.frame->module : 0) + '\0' + SymbolDisplay(leaf);
    case TprofLevel::kContainer:
      return leaf.thread->host + '\0' + leaf.thread->identity.container_id;
    case TprofLevel::kService:
      // A capture without identities (schema < 6) groups by process name.
      return leaf.thread->host + '\0' +
             (leaf.thread->identity.service_name.empty() ? ProcessName(*leaf.thread)
                                                         : leaf.thread->identity.service_name);
    case TprofLevel::kPod:
      return leaf.thread->host + '\0' + leaf.thread->identity.pod_uid;
  }
  return {};
}

// Converts the build tree to sorted rows, dropping rows below the threshold.
std::vector<TprofRow> Finish(std::map<std::string, std::unique_ptr<BuildRow>>& children,
                             uint64_t total, double min_percent) {
  std::vector<TprofRow> rows;
  for (auto& [key, child] : children) {
    TprofRow row = std::move(child->row);
    row.percent = Percent(row.ticks, total);
    if (row.percent < min_percent) continue;
    row.children = Finish(child->children, total, min_percent);
    rows.push_back(std::move(row));
  }
  std::stable_sort(rows.begin(), rows.end(), [](const TprofRow& a, const TprofRow& b) {
    if (a.ticks != b.ticks) return a.ticks > b.ticks;
    return a.name < b.name;
  });
  return rows;
}

void CountUnknown(UnknownShare& share, const FrameRecord* frame, uint64_t weight) {
  share.total += weight;
  if (frame != nullptr && IsUnknownFrame(*frame)) {
    share.unknown += weight;
    share.by_reason[UnknownFrameReason(*frame)] += weight;
  }
}

int Digits(uint64_t v) { return static_cast<int>(std::to_string(v).size()); }

void MaxTicks(const std::vector<TprofRow>& rows, uint64_t& max) {
  for (const TprofRow& row : rows) {
    max = std::max(max, row.ticks);
    MaxTicks(row.children, max);
  }
}

void WriteRows(const std::vector<TprofRow>& rows, int depth, size_t label_ticks_width,
               std::ostream& out) {
  for (const TprofRow& row : rows) {
    const std::string prefix = std::string(static_cast<size_t>(depth), ' ') +
                               std::string(TprofLevelLabel(row.level));
    const std::string ticks = std::to_string(row.ticks);
    const size_t pad = label_ticks_width > prefix.size() + ticks.size()
                           ? label_ticks_width - prefix.size() - ticks.size()
                           : 1;
    out << prefix << std::string(pad, ' ') << ticks << Printf("%7.2f", row.percent) << "    "
        << std::string(static_cast<size_t>(depth), ' ') << row.name << '\n';
    WriteRows(row.children, depth + 1, label_ticks_width, out);
  }
}

// "3.12% of <what> (stripped 2.00%, unmapped 1.12%)"
std::string DescribeShare(const UnknownShare& share, const std::string& what) {
  std::string text = Printf("%.2f%%", Percent(share.unknown, share.total)) + " of " + what;
  if (share.by_reason.empty()) return text;
  std::vector<std::pair<std::string, uint64_t>> reasons(share.by_reason.begin(), share.by_reason.end());
  std::stable_sort(reasons.begin(), reasons.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  text += " (";
  for (size_t i = 0; i < reasons.size(); ++i) {
    if (i > 0) text += ", ";
    text += reasons[i].first + " " + Printf("%.2f%%", Percent(reasons[i].second, share.total));
  }
  return text + ")";
}

std::string LevelList(const std::vector<TprofLevel>& levels) {
  std::string text;
  for (TprofLevel level : levels) {
    if (!text.empty()) text += ',';
    text += TprofLevelName(level);
  }
  return text;
}

Json ShareJson(const UnknownShare& share) {
  Json reasons = Json::object();
  for (const auto& [name, count] : share.by_reason) {
    reasons[name] = {{"count", count}, {"percent", Round(Percent(count, share.total), 100)}};
  }
  return {{"count", share.unknown},
          {"total", share.total},
          {"percent", Round(Percent(share.unknown, share.total), 100)},
          {"reasons", reasons}};
}

Json RowsJson(const std::vector<TprofRow>& rows) {
  Json array = Json::array();
  for (const TprofRow& row : rows) {
    Json item;
    item["level"] = TprofLevelName(row.level);
    item["name"] = row.name;
    item["ticks"] = row.ticks;
    item["percent"] = Round(row.percent, 100);
    switch (row.level) {
      case TprofLevel::kHost:
        item["host"] = row.host;
        break;
      case TprofLevel::kPid:
        item["pid"] = row.pid;
        if (row.ns_pid != 0) item["ns_pid"] = row.ns_pid;
        break;
      case TprofLevel::kTid:
        item["pid"] = row.pid;
        item["tid"] = row.tid;
        break;
      case TprofLevel::kModule:
        item["module"] = row.module;
        break;
      case TprofLevel::kSymbol:
        item["module"] = row.module;
        item["symbol"] = row.symbol;
        break;
      case TprofLevel::kContainer:
        item["container_id"] = row.container_id;
        item["container_runtime"] = row.container_runtime;
        break;
      case TprofLevel::kService:
        item["service"] = row.service;
        break;
      case TprofLevel::kPod:
        item["pod_uid"] = row.pod_uid;
        item["qos_class"] = row.qos_class;
        break;
    }
    item["children"] = RowsJson(row.children);
    array.push_back(std::move(item));
  }
  return array;
}

}  // namespace

std::string_view TprofLevelName(TprofLevel level) {
  switch (level) {
    case TprofLevel::kPid: return "pid";
    case TprofLevel::kTid: return "tid";
    case TprofLevel::kModule: return "mod";
    case TprofLevel::kSymbol: return "sym";
    case TprofLevel::kHost: return "host";
    case TprofLevel::kContainer: return "container";
    case TprofLevel::kService: return "service";
    case TprofLevel::kPod: return "pod";
  }
  return "?";
}

std::string_view TprofLevelLabel(TprofLevel level) {
  switch (level) {
    case TprofLevel::kPid: return "PID";
    case TprofLevel::kTid: return "TID";
    case TprofLevel::kModule: return "MOD";
    case TprofLevel::kSymbol: return "SYM";
    case TprofLevel::kHost: return "HST";
    case TprofLevel::kContainer: return "CTR";
    case TprofLevel::kService: return "SVC";
    case TprofLevel::kPod: return "POD";
  }
  return "???";
}

Result<std::vector<TprofLevel>> ParseTprofLevels(std::string_view spec) {
  std::vector<TprofLevel> levels;
  size_t start = 0;
  while (start <= spec.size()) {
    const size_t comma = std::min(spec.find(',', start), spec.size());
    const std::string_view word = spec.substr(start, comma - start);
    const TprofLevel* match = nullptr;
    for (const TprofLevel& level : kAllLevels) {
      if (TprofLevelName(level) == word) match = &level;
    }
    if (match == nullptr) {
      return MakeError("--by: unknown level '" + std::string(word) +
                       "'; use a comma-separated list of host, container, pod, service, pid, tid, mod, sym "
                       "(e.g. pid,tid,mod,sym)");
    }
    if (std::find(levels.begin(), levels.end(), *match) != levels.end()) {
      return MakeError("--by: level '" + std::string(word) + "' is given twice; name each level once");
    }
    levels.push_back(*match);
    start = comma + 1;
  }
  return levels;
}

Result<std::string> PerfSortToTprofLevels(std::string_view keys) {
  // perf's sort keys that are a tprof level; anything else has no clean mapping.
  static constexpr std::pair<std::string_view, std::string_view> kPerfKeys[] = {
      {"pid", "pid"}, {"tid", "tid"}, {"dso", "mod"}, {"mod", "mod"},
      {"sym", "sym"}, {"symbol", "sym"}, {"host", "host"}};
  std::string by;
  size_t start = 0;
  while (start <= keys.size()) {
    const size_t comma = std::min(keys.find(',', start), keys.size());
    const std::string_view key = keys.substr(start, comma - start);
    std::string_view level;
    for (const auto& [perf, ours] : kPerfKeys) {
      if (perf == key) level = ours;
    }
    if (level.empty()) {
      return MakeError("--sort: '" + std::string(key) +
                       "' does not map onto a tprof level; the tprof view takes perf's pid, tid, "
                       "dso and sym (= --by pid,tid,mod,sym)");
    }
    if (!by.empty()) by += ',';
    by += level;
    start = comma + 1;
  }
  return by;
}

std::string UnknownFrameReason(const FrameRecord& frame) {
  if (frame.reason == UnknownReason::kTruncated && frame.symbol == kElidedFramesName) return "frames elided";
  if (frame.reason != UnknownReason::kNone) return std::string(UnknownReasonName(frame.reason));
  return "unnamed";
}

TprofReport BuildTprof(const Profile& profile, const TprofOptions& options) {
  TprofReport report;
  report.event = profile.meta.event;
  report.frequency_hz = profile.meta.frequency_hz;
  if (profile.meta.end_monotonic_ns > profile.meta.start_monotonic_ns) {
    report.duration_s =
        static_cast<double>(profile.meta.end_monotonic_ns - profile.meta.start_monotonic_ns) / 1e9;
  }
  for (const ThreadRecord& thread : profile.threads) report.total_samples += options.metric.Total(thread);
  report.filtered = !options.filter.empty();
  if (auto it = profile.counters.find("lost_samples"); it != profile.counters.end()) {
    report.lost_samples = it->second;
  }
  // JVMs whose Java stacks could not be walked: without PreserveFramePointer
  // and without frame sizes from the agent (older captures: without PFP).
  if (auto it = profile.counters.find("java.jvms_unwalkable"); it != profile.counters.end()) {
    report.jvms_without_frame_pointers = it->second;
  } else if (auto old = profile.counters.find("java.jvms_without_preserve_frame_pointer"); old != profile.counters.end()) {
    report.jvms_without_frame_pointers = old->second;
  }
  report.levels = options.levels;
  if (profile.multi_host() &&
      std::find(report.levels.begin(), report.levels.end(), TprofLevel::kHost) == report.levels.end()) {
    report.levels.insert(report.levels.begin(), TprofLevel::kHost);
  }
  report.min_percent = options.min_percent;

  BuildRow root;
  const auto& frames = profile.frames;
  for (size_t t = 0; t < profile.threads.size(); ++t) {
    const ThreadRecord& thread = profile.threads[t];
    if (!options.filter.Matches(thread)) continue;
    const auto& nodes = profile.threads[t].tree.nodes();
    const std::vector<uint64_t> ticks_of = options.metric.Values(thread);

    // Cumulative ticks per node: children always follow their parent.
    std::vector<uint64_t> cumulative = ticks_of;
    thread.tree.Accumulate(cumulative);
    for (size_t i = 1; i < nodes.size(); ++i) {
      if (cumulative[i] > 0) CountUnknown(report.unknown_frames, &frames.at(nodes[i].frame), cumulative[i]);
    }

    std::unordered_map<uint32_t, uint64_t> ticks_by_leaf;
    for (uint32_t i = 0; i < nodes.size(); ++i) {
      if (ticks_of[i] > 0) ticks_by_leaf[nodes[i].frame] += ticks_of[i];
    }
    for (const auto& [frame_id, ticks] : ticks_by_leaf) {
      const FrameRecord* frame = frame_id == CallTree::kNoFrame ? nullptr : &frames.at(frame_id);
      const Leaf leaf{&thread, frame, frame ? &frames.module_of(*frame) : nullptr, ticks};
      report.selected_samples += ticks;
      CountUnknown(report.unknown_leaf_ticks, frame, ticks);

      BuildRow* parent = &root;
      bool module_above = false;
      for (TprofLevel level : report.levels) {
        auto& slot = parent->children[RowKey(level, leaf)];
        if (!slot) {
          slot = std::make_unique<BuildRow>();
          FillRow(slot->row, level, leaf, module_above);
        }
        slot->row.ticks += ticks;
        parent = slot.get();
        module_above = module_above || level == TprofLevel::kModule;
      }
    }
  }
  report.rows = Finish(root.children, report.total_samples, options.min_percent);
  return report;
}

void WriteTprofText(const TprofReport& report, std::ostream& out) {
  out << "arcprof report: tprof\n";
  out << "Event:              " << report.event << ", " << report.frequency_hz << " Hz\n";
  out << "Duration:           " << Printf("%.3f", report.duration_s) << " s\n";
  out << "Total samples:      " << report.total_samples << '\n';
  if (report.filtered) {
    out << "Selected samples:   " << report.selected_samples << " ("
        << Printf("%.2f%%", Percent(report.selected_samples, report.total_samples)) << ")\n";
  }
  out << "Lost samples:       " << report.lost_samples << '\n';
  if (report.jvms_without_frame_pointers > 0) {
    out << "Warning:            " << report.jvms_without_frame_pointers
        << " JVM(s) ran without -XX:+PreserveFramePointer and without the agent's frame sizes: their Java stacks "
           "end at the first JIT frame\n";
  }
  out << "Unknown frames:     " << DescribeShare(report.unknown_frames, "frames in sampled stacks") << '\n';
  out << "Unknown leaf ticks: " << DescribeShare(report.unknown_leaf_ticks, "ticks") << '\n';
  out << "Levels:             " << LevelList(report.levels) << '\n';
  if (report.min_percent > 0) {
    out << "Hidden:             rows below " << Printf("%.2f%%", report.min_percent) << " of total\n";
  }
  out << '\n';

  // The layout is PI's: the ticks column ends at column 11 and names start at
  // column 23, each level indented by one; wider tick counts widen the column.
  uint64_t max_ticks = 0;
  MaxTicks(report.rows, max_ticks);
  const size_t deepest_label = report.levels.empty() ? 3 : report.levels.size() + 2;
  const size_t width = std::max<size_t>(12, deepest_label + 1 + static_cast<size_t>(Digits(max_ticks)));
  out << "LAB" << std::string(width - 6, ' ') << "TKS   %%%     NAMES\n";
  WriteRows(report.rows, 0, width, out);
}

void WriteTprofJson(const TprofReport& report, std::ostream& out) {
  Json header;
  header["event"] = report.event;
  header["frequency_hz"] = report.frequency_hz;
  header["duration_s"] = Round(report.duration_s, 1000);
  header["total_samples"] = report.total_samples;
  header["selected_samples"] = report.selected_samples;
  header["lost_samples"] = report.lost_samples;
  if (report.jvms_without_frame_pointers > 0) {
    header["jvms_without_preserve_frame_pointer"] = report.jvms_without_frame_pointers;
  }
  header["unknown_frames"] = ShareJson(report.unknown_frames);
  header["unknown_leaf_ticks"] = ShareJson(report.unknown_leaf_ticks);
  Json levels = Json::array();
  for (TprofLevel level : report.levels) levels.push_back(TprofLevelName(level));
  header["levels"] = levels;
  header["min_percent"] = report.min_percent;
  Json doc;
  doc["view"] = "tprof";
  doc["header"] = std::move(header);
  doc["rows"] = RowsJson(report.rows);
  out << DumpJson(doc, 2) << '\n';
}

}  // namespace arcprof::reports
