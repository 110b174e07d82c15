// Shared by the arcflow fuzzers: a parsed model must render every view and
// satisfy the xarc invariants; anything else is a bug worth a crash report.
#pragma once

#include <cstdlib>
#include <ostream>
#include <streambuf>

#include "reports/arcflow.h"
#include "tests/layer_names.h"

namespace arcprof {

class NullBuffer : public std::streambuf {
 protected:
  int overflow(int c) override { return c; }
  std::streamsize xsputn(const char*, std::streamsize n) override { return n; }
};

inline void CheckInvariants(const ArcflowProfile& model) {
  for (const XarcStanza& s : ComputeXarc(model)) {
    uint64_t n = 0, base = 0, cum = 0, child_cum = 0;
    for (const auto& p : s.parents) {
      n += p.n;
      base += p.base;
      cum += p.cum;
    }
    for (const auto& c : s.children) child_cum += c.cum;
    if (n != s.self.n || base != s.self.base || cum != s.self.cum ||
        child_cum != s.self.cum - s.self.base) {
      std::abort();
    }
  }
}

inline void ExerciseModel(const ArcflowProfile& model) {
  CheckInvariants(model);
  CheckInvariants(Prune(model, 10));
  NullBuffer null_buffer;
  std::ostream null_stream(&null_buffer);
  // --root comes from the user's command line, not from the input: fixed
  // patterns, one regex and one exact name that is not a valid regex.
  const char* roots[] = {"[A-Za-z_].*|f", "a(", ""};
  for (ArcflowView view : {ArcflowView::kXtree, ArcflowView::kXarc, ArcflowView::kXprof}) {
    ArcflowOptions options;
    options.view = view;
    options.format = view == ArcflowView::kXarc ? ArcflowFormat::kJson : ArcflowFormat::kText;
    options.units = ArcflowUnits::kPct;
    options.min_pct = 5;
    options.merge_threads = view == ArcflowView::kXprof;
    options.root = roots[static_cast<int>(view)];
    (void)RenderArcflowProfile(model, options, null_stream);
  }
}

}  // namespace arcprof
