// The runtimes of runtimes/ in a recording (docs/design.md, "Runtimes"):
// learns from the side band which processes map a runtime's binary or
// library, recognizes them from the file, tells the sampler what to read in
// them, and hands the runtimes to the sample processor, which puts their
// frames in place of the native frames that run them. It also keeps the JIT
// symbol sources of every process (loader/jit_sources.h) and runs each
// runtime's own work during the recording (Java: attaching its agent).
#pragma once

#include <memory>

#include "loader/record_extension.h"

namespace arcprof {

struct RuntimeExtensionOptions {
  // Name runtimes' frames read at sample time (--no-runtimes: off).
  bool frames = true;
  // Runtimes may load an agent into their processes (--java/--no-java).
  bool attach = true;
  // No line per process attached.
  bool quiet = false;
};

std::unique_ptr<RecordExtension> MakeRuntimeExtension(const RuntimeExtensionOptions& options);

}  // namespace arcprof
