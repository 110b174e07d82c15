// JIT symbols in a recording (docs/java.md): installs the symbolizer's JIT
// source (jitdump + arcprof side file, else perf map, per process), tails
// those files on every drain tick, and with Java on (`record --java`, the
// default) loads our JVMTI agent into every HotSpot JVM that runs during the
// recording. At the end, Java thread names replace the kernel's 15-character
// names and the capture's counters say how it went.
#pragma once

#include <memory>

#include "loader/record_extension.h"

namespace arcprof {

struct RecordOptions;

// Whether these options attach to JVMs: --java / --no-java, on by default.
bool JavaAttachEnabled(const RecordOptions& options);

// `attach`: load the agent into JVMs (JavaAttachEnabled); `quiet`: no line per
// JVM attached (-q, and `continuous` without --verbose-java).
std::unique_ptr<RecordExtension> MakeJavaExtension(bool attach, bool quiet);

}  // namespace arcprof
