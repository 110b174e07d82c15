// Reads capture files of every schema version (docs/capture-format.md),
// checking everything in them as untrusted: a file handed to arcprof is
// outside input.
#pragma once

#include <cstdint>
#include <string>

#include "common/result.h"
#include "model/profile.h"

namespace arcprof::store {

// Reads a capture, merging every time window (and every capture, for merged
// stores) into one Profile: trees are summed node by node, counters are summed
// by name, the metadata is the first capture's. Every id read from the file is
// checked, so the returned Profile is always consistent. Errors carry a
// one-line message starting with `path` and kind ErrorKind::kCapture.
Result<model::Profile> ReadCapture(const std::string& path);

// What identifies a capture without reading it whole: the uuid of its first
// capture (random, written once by the writer and kept by copies of the file)
// and its time range in Unix ns (start_unix_ns, and the end from the
// monotonic length). The file is opened and its schema checked as ReadCapture
// does; the rows are not checked (ReadCapture does that).
struct CaptureIdentity {
  std::string uuid;
  uint64_t start_unix_ns = 0;
  uint64_t end_unix_ns = 0;
};
Result<CaptureIdentity> ReadCaptureIdentity(const std::string& path);

}  // namespace arcprof::store
