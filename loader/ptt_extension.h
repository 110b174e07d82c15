// `record --ptt`: the PTT recorder as a RecordExtension. It starts before the
// sampler, snapshots per-CPU accounting every --ptt-interval on the drain
// tick, and at the end stores everything in Profile::ptt.
#pragma once

#include <memory>

#include "loader/record_extension.h"

namespace arcprof {

struct RecordOptions;

// Whether these options record PTT: --ptt / --no-ptt, else on for
// whole-machine recordings only.
bool PttEnabled(const RecordOptions& options);

std::unique_ptr<RecordExtension> MakePttExtension(const RecordOptions& options);

}  // namespace arcprof
