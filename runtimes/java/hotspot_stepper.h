// HotSpot's frames for the unwinder (unwind/frame_stepper.h): compiled
// methods and stubs stepped by the frame sizes the agent writes to the side
// file, the interpreter's rbp frames with their Method* slot, and the i2c/c2i
// adapters, which have no frame of their own (docs/java.md, "Unwinding Java
// frames").
#pragma once

#include <memory>

#include "unwind/frame_stepper.h"

namespace arcprof::runtimes {

std::unique_ptr<FrameStepper> MakeHotSpotFrameStepper();

}  // namespace arcprof::runtimes
