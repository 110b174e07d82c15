// speedscope export: speedscope's JSON file format
// (https://www.speedscope.app/file-format-schema.json, docs/formats.md §4):
// one sampled profile per thread, weights in `metric` (samples unless told:
// unit "none"; the time metrics cpu, offcpu and wall: "microseconds"),
// stacks root first, frames shared by all profiles. The capture has no
// per-sample timestamps, so each profile lists its distinct stacks once with
// their counts; the time-order view is therefore not a timeline.
#pragma once

#include <iosfwd>

#include "model/metric.h"
#include "model/profile.h"
#include "model/thread_filter.h"

namespace arcprof::reports {

void WriteSpeedscope(const model::Profile& profile, const model::ThreadFilter& filter, std::ostream& out,
                     const model::Metric& metric = {});

}  // namespace arcprof::reports
