// CPython's `-X perf` trampolines for the unwinder (unwind/frame_stepper.h):
// a fixed frame of 16 bytes that keeps the caller's rbp (`[endbr64;] sub
// $8,%rsp; call *%rcx; add $8,%rsp; ret`), stepped by its size so that the
// walk goes on with the caller's CFI in an interpreter built without frame
// pointers. The Python runtime marks such code (PythonRuntime::RefineJitFrame:
// JitSymbol::keeps_rbp, frame_size, frame_complete) once it has checked the
// trampoline's bytes in the process's interpreter (docs/python.md, "-X perf").
#pragma once

#include <memory>

#include "unwind/frame_stepper.h"

namespace arcprof::runtimes {

std::unique_ptr<FrameStepper> MakePythonTrampolineStepper();

}  // namespace arcprof::runtimes
