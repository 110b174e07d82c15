// Synthetic profiles with known numbers, shared by the report tests and the
// fuzzer's seed generator.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "model/profile.h"
#include "tests/layer_names.h"

namespace arcprof::testing {

// Four threads in three processes, named, unknown, inlined, JIT, kernel and
// truncated frames, names with ';' and spaces. Ticks: "busy loop" 1090,
// java 890 (main 650, compiler 240), systemd 15; 1995 in all.
Profile SampleProfile();

// A runtime's frame (python, js) of `file` at `line`, interned in p.
uint32_t SourceFrame(Profile& p, const std::string& file, const std::string& symbol, FrameKind kind, uint32_t line);

// `distinct_stacks` stacks of `depth` frames spread over 4 threads, with
// `samples` samples in all: the shape of a long capture of a busy machine.
Profile LargeProfile(uint64_t samples, int distinct_stacks, int depth);

// A fresh directory under /tmp, removed with its content on destruction.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  std::string File(const std::string& name) const { return path_ + "/" + name; }
  // Names of the entries in the directory, sorted.
  std::vector<std::string> Entries() const;

 private:
  std::string path_;
};

// The bytes a gzip stream (a .pb.gz) holds; "" when it does not inflate.
std::string Gunzip(const std::string& bytes);

}  // namespace arcprof::testing
