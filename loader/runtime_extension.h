// Interpreted runtimes named with no flag (runtimes/, docs/python.md): learns
// from the side band which processes map a runtime's binary or library,
// recognizes them from the file, tells the sampler what to read in them, and
// hands the runtimes to the sample processor, which puts their frames in
// place of the native frames that run them.
#pragma once

#include <memory>

#include "loader/record_extension.h"

namespace arcprof {

std::unique_ptr<RecordExtension> MakeRuntimeExtension();

}  // namespace arcprof
