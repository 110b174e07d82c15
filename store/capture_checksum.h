// The content checksum of a capture (docs/capture-format.md): what readers
// compare with meta (0, 'content_crc32') to find a file changed after it was
// written.
#pragma once

#include <string>

#include "common/result.h"

struct sqlite3;

namespace arcprof::store {

// CRC-32 of the file's contents as stored in meta (0, 'content_crc32'): every
// row of every arcprof table but push_sent and that meta row, tables by name,
// rows by primary key. A writer that changes a capture in place (appending
// windows) must store the new value, or readers report the file as corrupt.
Result<std::string> ContentChecksum(sqlite3* db);

}  // namespace arcprof::store
