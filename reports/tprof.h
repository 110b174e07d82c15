// The tprof report (IBM Performance Inspector layout): ticks attributed to the
// leaf frame of each sample, nested by the levels chosen with --by (pid, tid,
// mod, sym in any order), rows sorted by ticks within their parent.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "model/metric.h"
#include "model/profile.h"
#include "model/thread_filter.h"

namespace arcprof::reports {

// kHost: the machine, in a merge of several hosts (always the first level there).
// kContainer, kService, kPod: the process's identity (model/process_identity.h).
enum class TprofLevel : uint8_t { kPid, kTid, kModule, kSymbol, kHost, kContainer, kService, kPod };

// "pid", "tid", "mod", "sym", "host", "container", "service", "pod": the words of --by.
std::string_view TprofLevelName(TprofLevel level);
// "PID", "TID", "MOD", "SYM", "HST", "CTR", "SVC", "POD": the LAB column.
std::string_view TprofLevelLabel(TprofLevel level);
// Parses "pid,tid,mod,sym" (any order, each level at most once). Errors are ErrorKind::kFailed.
Result<std::vector<TprofLevel>> ParseTprofLevels(std::string_view spec);
// perf's `--sort` keys as --by levels: pid, tid, dso -> mod, sym/symbol -> sym
// ("pid,tid,dso,sym" -> "pid,tid,mod,sym"). Any other key (comm, cpu, srcline,
// ...) is an error of one line: it has no tprof level.
Result<std::string> PerfSortToTprofLevels(std::string_view keys);

struct TprofOptions {
  std::vector<TprofLevel> levels = {TprofLevel::kPid, TprofLevel::kTid, TprofLevel::kModule,
                                    TprofLevel::kSymbol};
  double min_percent = 0;  // rows below this share of all ticks are hidden
  model::ThreadFilter filter;
  // What a tick is (--metric, model/metric.h): samples unless told.
  model::Metric metric;
};

struct TprofRow {
  TprofLevel level = TprofLevel::kPid;
  std::string name;      // the NAMES column
  uint64_t ticks = 0;
  double percent = 0;    // of all ticks in the capture
  uint32_t pid = 0;      // set on pid and tid rows
  uint32_t ns_pid = 0;   // on pid rows of a process in its own pid namespace: its pid there
  uint32_t tid = 0;      // set on tid rows
  std::string module;    // set on mod and sym rows
  std::string symbol;    // set on sym rows ("" for an unknown frame)
  std::string host;      // set on host rows
  std::string container_id;  // set on container rows (full id; "" for no container)
  std::string container_runtime;  // set on container rows
  std::string service;   // set on service rows
  std::string pod_uid;   // set on pod rows ("" for no pod)
  std::string qos_class;  // set on pod rows
  std::vector<TprofRow> children;
};

// How many of `total` were unknown frames, by reason name.
struct UnknownShare {
  uint64_t unknown = 0;
  uint64_t total = 0;
  std::map<std::string, uint64_t> by_reason;
};

struct TprofReport {
  std::string event;
  uint64_t frequency_hz = 0;
  double duration_s = 0;
  uint64_t total_samples = 0;     // ticks in the whole capture: the 100% of every row
  uint64_t selected_samples = 0;  // ticks of the threads that passed the filter
  bool filtered = false;
  int64_t lost_samples = 0;
  int64_t jvms_without_frame_pointers = 0;  // counter java.jvms_without_preserve_frame_pointer
  UnknownShare unknown_frames;      // frames of the selected stacks, each weighted by its ticks
  UnknownShare unknown_leaf_ticks;  // selected ticks whose leaf frame is unknown
  std::vector<TprofLevel> levels;
  double min_percent = 0;
  std::vector<TprofRow> rows;
};

// In a merge of several hosts (Profile::multi_host) the host level is put
// first when options.levels does not name it.
TprofReport BuildTprof(const model::Profile& profile, const TprofOptions& options);
void WriteTprofText(const TprofReport& report, std::ostream& out);
void WriteTprofJson(const TprofReport& report, std::ostream& out);

// The reason name used in headers: UnknownReasonName, or "unnamed" for a frame
// without a symbol and without a recorded reason.
std::string UnknownFrameReason(const model::FrameRecord& frame);

}  // namespace arcprof::reports
