// Writes a Profile as a capture file in the current schema
// (docs/capture-format.md). Captures of older schemas are only read
// (capture_reader.h); tests/store/fixtures/ holds one of each.
#pragma once

#include <string>

#include "common/result.h"
#include "model/profile.h"

namespace arcprof::store {

inline constexpr const char* kDefaultCapturePath = "arcprof.db";

// Writes `profile` as one capture with one time window, in schema
// kCaptureSchemaVersion. The file is created mode 0600 as a temporary file in
// the same directory and renamed over `path` only when complete: a failure
// never leaves a partial file, and a symlink at `path` is replaced, not
// followed.
Result<void> WriteCapture(const std::string& path, const model::Profile& profile);

}  // namespace arcprof::store
