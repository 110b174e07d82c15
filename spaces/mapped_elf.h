// One mapped ELF file, opened once and shared by every mapping of it in every
// process: its descriptor and the ELF facts an address space needs (segments,
// build-id). The descriptor is kept while a remembered process maps the file:
// the file then resolves even after it was deleted, its inode number cannot be
// reused while we hold it (so (dev, inode) stays a safe cache key), and a DWARF
// unwinder (libdwfl's dwfl_report_elf takes an fd) and the symbolizer's symbol
// tables (symbolize/elf_file.h) read it through the same descriptor.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"
#include "common/scoped_fd.h"
#include "spaces/elf_header.h"

namespace arcprof {

class MappedElf {
 public:
  // Reads the ELF headers now (type, segments, build-id, debuglink). Never
  // fails: a file that is not ELF says why in header_error().
  static std::unique_ptr<MappedElf> FromFd(ScopedFd fd, std::string path);
  // An in-memory image. The bytes are owned by the MappedElf.
  static std::unique_ptr<MappedElf> FromImage(std::vector<char> image, std::string name);

  // The ELF vaddr of a file offset (see FileOffsetToVaddr).
  std::optional<uint64_t> OffsetToVaddr(uint64_t file_offset) const {
    return FileOffsetToVaddr(header_.loads, file_offset);
  }
  // A libelf handle on the file (or the image), for reading more of it.
  Result<ElfPtr> Open() const;

  bool is_elf() const { return header_error_.empty(); }
  const std::string& header_error() const { return header_error_; }
  const std::string& path() const { return path_; }
  const std::string& build_id() const { return header_.build_id; }
  const ElfHeaderInfo& header() const { return header_; }
  int fd() const { return fd_.get(); }
  dev_t dev() const { return dev_; }
  ino_t inode() const { return inode_; }

 private:
  MappedElf() = default;
  // Reads type, segments, build-id and debuglink; failures go to header_error_.
  void ReadHeader();

  ScopedFd fd_;
  mutable std::vector<char> image_;  // in-memory ELF when fd_ is not valid (libelf takes it non-const)
  std::string path_;
  dev_t dev_ = 0;
  ino_t inode_ = 0;
  ElfHeaderInfo header_;
  std::string header_error_;
};

}  // namespace arcprof
