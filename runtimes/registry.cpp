#include "runtimes/runtime.h"
#include "runtimes/node/node_runtime.h"
#include "runtimes/python/python_runtime.h"

namespace arcprof::runtimes {

std::vector<std::unique_ptr<Runtime>> MakeRuntimes() {
  std::vector<std::unique_ptr<Runtime>> all;
  all.push_back(MakePythonRuntime());
  all.push_back(MakeNodeRuntime());
  return all;
}

}  // namespace arcprof::runtimes
