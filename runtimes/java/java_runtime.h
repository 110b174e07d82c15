// HotSpot JVMs as a runtime (runtimes/runtime.h, docs/java.md): recognized
// by their libjvm.so; nothing read at sample time (the stack copy and the
// agent's jitdump name their frames); HotSpot's frame stepper for the
// unwinder (hotspot_stepper.h); during a recording, our JVMTI agent loaded
// into every JVM that runs (java_attach.h), Java thread names in place of
// the kernel's 15 characters, and the java.* counters.
#pragma once

#include <memory>

#include "runtimes/runtime.h"

namespace arcprof::runtimes {

std::unique_ptr<Runtime> MakeJavaRuntime();

}  // namespace arcprof::runtimes
