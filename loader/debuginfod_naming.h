// Names a profile's stripped frames from debug files that debuginfod found,
// after the fact: frames keep their module and offset (frames.address), so a
// window at the end of a recording, or a capture opened by `report`/`export`,
// can be named once the files are in.
#pragma once

#include <cstdint>

#include "model/profile.h"
#include "symbolize/debuginfod.h"

namespace arcprof {

struct DebuginfodNaming {
  uint64_t modules_named = 0;      // modules whose debug file was found
  uint64_t modules_not_found = 0;  // not on any server, or not answered within the budget
  uint64_t frames_named = 0;
};

// Requests the build-id of every module with stripped frames in the profile,
// waits for the answers (within the fetcher's budget) when `wait`, and
// renames the frames the found files cover.
DebuginfodNaming NameFramesFromDebuginfod(model::Profile& profile, DebuginfodFetcher& fetcher, bool wait);

// "12 modules named from debuginfod, 3 not found" ("" when nothing was asked).
std::string DebuginfodSummaryLine(int64_t named, int64_t not_found);

}  // namespace arcprof
