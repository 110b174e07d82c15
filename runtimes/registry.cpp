#include "runtimes/runtime.h"
#include "runtimes/java/java_runtime.h"
#include "runtimes/node/node_runtime.h"
#include "runtimes/python/python_runtime.h"

namespace arcprof::runtimes {

// Adding a runtime: its folder, and one line here. The order is the order in
// which their frame steppers are asked (Python's trampolines before HotSpot's
// stepper, which steps any code of a known frame size).
std::vector<std::unique_ptr<Runtime>> MakeRuntimes() {
  std::vector<std::unique_ptr<Runtime>> all;
  all.push_back(MakePythonRuntime());
  all.push_back(MakeNodeRuntime());
  all.push_back(MakeJavaRuntime());
  return all;
}

std::vector<std::unique_ptr<FrameStepper>> MakeFrameSteppers() {
  std::vector<std::unique_ptr<FrameStepper>> all;
  for (const auto& runtime : MakeRuntimes()) {
    if (auto stepper = runtime->MakeFrameStepper()) all.push_back(std::move(stepper));
  }
  return all;
}

}  // namespace arcprof::runtimes
