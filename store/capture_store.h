// The capture store: one SQLite file (default arcprof.db) holding a Profile as
// folded call trees, so its size grows with the number of distinct stacks, not
// with the number of samples. The schema, the meaning of every column and the
// versioning rules are in docs/capture-format.md. The public header of the
// parts, each of one responsibility: capture_schema.h (tables and versions),
// capture_checksum.h (the content checksum), capture_writer.h (writes the
// current schema) and capture_reader.h (reads every schema).
#pragma once

#include "store/capture_checksum.h"
#include "store/capture_reader.h"
#include "store/capture_schema.h"
#include "store/capture_writer.h"
