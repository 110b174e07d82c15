// The one registry of what `arcprof report --view NAME` and `arcprof export
// --format NAME` offer: every built-in view and export format is one line in
// registry.cpp, and a new one is one Add call. (timeline and timeline-svg read
// a store window by window and are handled by the command line itself.)
#pragma once

#include <map>
#include <string>

#include "reports/export_options.h"
#include "reports/views.h"

namespace arcprof::reports {

struct Registry {
  std::map<std::string, ReportView> views;
  std::map<std::string, ExportWriter> formats;

  // Registers (or replaces) a view.
  void AddView(const std::string& name, ReportView view);
  // Registers (or replaces) a format that sees the profile after --root/--min
  // (export_scope.h) and the thread filter.
  void AddExporter(const std::string& name, Exporter exporter);
  // Registers (or replaces) a format that reads every export option itself.
  void AddExportWriter(const std::string& name, ExportWriter writer);
};

// tprof, xtree, xarc, xprof, ptt, irq; folded, svg, html, pprof, otlp, speedscope, xprof.
Registry BuiltinRegistry();

}  // namespace arcprof::reports
