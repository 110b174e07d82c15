#include "reports/store_info.h"

#include <time.h>

#include <cstdio>
#include "reports/json_writer.h"
#include <set>

#include "store/capture_store.h"
#include "store/window_store.h"

namespace arcprof::reports {
using namespace arcprof::model;
using namespace arcprof::store;
namespace {

std::string Bytes(uint64_t b) {
  char buf[32];
  if (b >= (1ull << 30)) snprintf(buf, sizeof(buf), "%.2f GiB", b / double(1ull << 30));
  else if (b >= (1ull << 20)) snprintf(buf, sizeof(buf), "%.1f MiB", b / double(1ull << 20));
  else if (b >= 1024) snprintf(buf, sizeof(buf), "%.1f KiB", b / 1024.0);
  else snprintf(buf, sizeof(buf), "%llu B", static_cast<unsigned long long>(b));
  return buf;
}

struct WindowSummary {
  StoredWindow window;
  bool readable = false;
  std::string error;
  int64_t samples = 0;
  int64_t lost = 0;
  size_t processes = 0;
};

}  // namespace

int PrintStoreInfo(const WindowStore& store, const std::string& format, std::ostream& out,
                   std::ostream& err) {
  if (format != "text" && format != "json") {
    err << "arcprof: --format must be text or json\n";
    return 1;
  }
  std::vector<WindowSummary> rows;
  size_t unsent = 0;
  for (StoredWindow& w : store.List()) {
    WindowSummary s;
    s.window = std::move(w);
    if (!s.window.unreadable.empty()) {  // not a window: not read, not counted as unsent
      s.error = s.window.unreadable;
      rows.push_back(std::move(s));
      continue;
    }
    auto profile = ReadCapture(s.window.path);
    if (profile) {
      s.readable = true;
      s.samples = static_cast<int64_t>(profile->total_samples());
      if (auto it = profile->counters.find("lost_samples"); it != profile->counters.end()) s.lost = it->second;
      std::set<uint32_t> pids;
      for (const ThreadRecord& t : profile->threads) pids.insert(t.pid);
      s.processes = pids.size();
    } else {
      s.error = profile.error().message;
    }
    if (!s.window.sent) ++unsent;
    rows.push_back(std::move(s));
  }
  const StoreConfig config = store.ReadConfig();
  const uint64_t size = store.SizeOnDisk();

  if (format == "json") {
    Json j;
    j["store"] = store.dir();
    j["host"] = config.host;
    j["size_bytes"] = size;
    j["window_s"] = config.window_s;
    j["retention"] = {{"retain_s", config.retain_s}, {"max_bytes", config.max_bytes}};
    j["unsent_windows"] = unsent;
    j["windows"] = Json::array();
    for (const WindowSummary& s : rows) {
      Json w = {{"id", s.window.id},
                          {"start", UtcTime(s.window.start_unix_ns)},
                          {"end", UtcTime(s.window.end_unix_ns)},
                          {"start_unix_ns", s.window.start_unix_ns},
                          {"end_unix_ns", s.window.end_unix_ns},
                          {"bytes", s.window.bytes},
                          {"sent", s.window.sent},
                          {"readable", s.readable}};
      if (s.readable) {
        w["samples"] = s.samples;
        w["lost_samples"] = s.lost;
        w["processes"] = s.processes;
      } else {
        w["error"] = s.error;
      }
      j["windows"].push_back(std::move(w));
    }
    out << DumpJson(j, 2) << "\n";
    return 0;
  }

  out << "Store:      " << store.dir() << "\n";
  if (!config.host.empty()) out << "Host:       " << config.host << "\n";
  out << "Windows:    " << rows.size();
  if (!rows.empty()) {
    out << " from " << UtcTime(rows.front().window.start_unix_ns) << " to "
        << UtcTime(rows.back().window.end_unix_ns);
  }
  out << "\n";
  out << "Size:       " << Bytes(size) << " on disk\n";
  out << "Retention:  " << (config.retain_s ? std::to_string(config.retain_s / 3600) + " h" : "forever")
      << ", " << (config.max_bytes ? Bytes(config.max_bytes) : "no size limit")
      << (config.window_s ? ", " + std::to_string(config.window_s) + " s windows" : "") << "\n";
  out << "Unsent:     " << unsent << " window(s)\n\n";
  char line[256];
  snprintf(line, sizeof(line), "%-20s  %-20s  %9s  %6s  %9s  %10s  %s\n", "START", "END", "SAMPLES",
           "LOST", "PROCESSES", "SIZE", "SENT");
  out << line;
  for (const WindowSummary& s : rows) {
    if (!s.readable) {
      snprintf(line, sizeof(line), "%-20s  %-20s  unreadable: ", UtcTime(s.window.start_unix_ns).c_str(),
               UtcTime(s.window.end_unix_ns).c_str());
      out << line << s.error << "\n";
      continue;
    }
    snprintf(line, sizeof(line), "%-20s  %-20s  %9lld  %6lld  %9zu  %10s  %s\n",
             UtcTime(s.window.start_unix_ns).c_str(), UtcTime(s.window.end_unix_ns).c_str(),
             static_cast<long long>(s.samples), static_cast<long long>(s.lost), s.processes,
             Bytes(s.window.bytes).c_str(), s.window.sent ? "yes" : "no");
    out << line;
  }
  return 0;
}

}  // namespace arcprof::reports
