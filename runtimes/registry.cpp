#include "runtimes/runtime.h"
#include "runtimes/java/hotspot_stepper.h"
#include "runtimes/node/node_runtime.h"
#include "runtimes/python/python_runtime.h"
#include "runtimes/python/trampoline_stepper.h"

namespace arcprof::runtimes {

std::vector<std::unique_ptr<Runtime>> MakeRuntimes() {
  std::vector<std::unique_ptr<Runtime>> all;
  all.push_back(MakePythonRuntime());
  all.push_back(MakeNodeRuntime());
  return all;
}

std::vector<std::unique_ptr<FrameStepper>> MakeFrameSteppers() {
  std::vector<std::unique_ptr<FrameStepper>> all;
  all.push_back(MakePythonTrampolineStepper());  // before HotSpot's, which steps any code of known frame size
  all.push_back(MakeHotSpotFrameStepper());
  return all;
}

}  // namespace arcprof::runtimes
