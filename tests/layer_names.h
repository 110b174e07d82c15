// Tests and benchmarks name every layer's types unqualified (Profile,
// WriteCapture, BuildTprof, ReportCommands): this imports the layer namespaces
// into arcprof for test code only. Production code qualifies (model::Profile).
#pragma once

namespace arcprof {
namespace model {}
namespace store {}
namespace reports {}
namespace cli {}
using namespace model;
using namespace store;
using namespace reports;
using namespace cli;
}  // namespace arcprof
