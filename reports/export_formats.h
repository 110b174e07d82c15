// The export formats of docs/exports.md behind `arcprof export --format NAME`:
// svg (interactive flame graph), html (flame graph + tprof table + xprof list),
// pprof (gzipped profile.proto), otlp (OpenTelemetry profiles), speedscope (JSON) and xprof (arcflow text).
// reports/registry.h lists them for the command line.
#pragma once

#include <iosfwd>
#include <string>

#include "common/result.h"
#include "reports/export_options.h"
#include "reports/flamegraph.h"
#include "model/profile.h"

namespace arcprof::reports {

Result<void> ExportFolded(const model::Profile& profile, const ExportOptions& options, std::ostream& out);
Result<void> ExportSvg(const model::Profile& profile, const ExportOptions& options, std::ostream& out);
Result<void> ExportHtml(const model::Profile& profile, const ExportOptions& options, std::ostream& out);
Result<void> ExportPprof(const model::Profile& profile, const ExportOptions& options, std::ostream& out);
// otlp: the serialized ExportProfilesServiceRequest (reports/otlp.h), uncompressed.
Result<void> ExportOtlp(const model::Profile& profile, const ExportOptions& options, std::ostream& out);
Result<void> ExportSpeedscope(const model::Profile& profile, const ExportOptions& options, std::ostream& out);
Result<void> ExportXprof(const model::Profile& profile, const ExportOptions& options, std::ostream& out);

// The flame graph of the selection (options applied), and the subtitle the
// exports give it: target, event and frequency, selected samples.
Result<FlameTree> ExportFlameTree(const model::Profile& profile, const ExportOptions& options);
std::string CaptureSubtitle(const model::Profile& profile, uint64_t selected_samples);

}  // namespace arcprof::reports
