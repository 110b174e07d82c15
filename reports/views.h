// The views of `arcprof report --view NAME`: what a view is asked for
// (ReportRequest) and the adapters from a request to the tprof and arcflow
// reports (ptt, irq and timeline have theirs next to their report).
#pragma once

#include <functional>
#include <ostream>
#include <string>

#include "model/metric.h"
#include "model/profile.h"
#include "model/thread_filter.h"

namespace arcprof::reports {

// What `arcprof report` was asked for; a view reads the parts it needs.
struct ReportRequest {
  std::string capture_path;
  std::string view = "tprof";
  std::string by = "pid,tid,mod,sym";
  double min_percent = 0;
  model::ThreadFilter filter;
  std::string format = "text";  // text or json
  // arcflow views (xtree, xarc, xprof); see docs/arcflow.md.
  std::string root;             // --root NAME|REGEX
  bool merge_threads = false;   // --merge-threads
  std::string sort = "base";    // --sort base|cum
  std::string units = "samples";  // --units samples|ms|pct
  std::string interval = "1s";  // --interval: time buckets of the irq view
  // --metric samples|cpu|offcpu|wall or a declared value type (model/metric.h):
  // what the call-tree views (tprof, xtree, xarc, xprof) weigh nodes by.
  std::string metric = "samples";
};

// Prints one view of `profile`; returns the process exit code (1 for a usage
// error such as a bad --by, after one line on `err`).
using ReportView = std::function<int(const model::Profile& profile, const ReportRequest& request,
                                     std::ostream& out, std::ostream& err)>;

// Renders `profile` in one export format to `out` (a file or stdout), each
// node weighed by `metric` (--metric, model/metric.h).
using Exporter = std::function<void(const model::Profile& profile, const model::ThreadFilter& filter,
                                    std::ostream& out, const model::Metric& metric)>;

// The arcflow views: xtree, xarc and xprof.
int RunArcflowView(const std::string& view, const model::Profile& profile, const ReportRequest& request,
                   std::ostream& out, std::ostream& err);
int RunTprofView(const model::Profile& profile, const ReportRequest& request, std::ostream& out,
                 std::ostream& err);

}  // namespace arcprof::reports
