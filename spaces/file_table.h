// The file table: every mapped ELF file the address spaces have opened,
// shared by all mappings of it in all processes. A mapping finds its file by
// (device, inode) or build-id without a system call when another mapping of
// the same file was seen; otherwise the file is opened now, through
// /proc/PID/map_files (the exact mapped inode, even when deleted or in another
// mount namespace) or a path that must name the same inode.
//
// File ids are never reused: a closed file's id stays dead, so caches keyed by
// file id (unwind rules, resolved frames, symbol tables) cannot confuse two
// files.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

#include "common/scoped_fd.h"
#include "common/string_hash.h"
#include "spaces/mapped_elf.h"
#include "spaces/space_types.h"

namespace arcprof {

// Opens the file mapped at [start, end) in pid (path as its maps name it),
// read-only: through /proc/PID/map_files (the exact mapped inode), else by
// the path inside the process's root, where the process's symbolic links
// stay inside that root and magic links are not followed. Either must be a
// regular file with `inode` (0: any) on `dev` (nullopt: any; a file in an
// overlayfs container shows the overlay's device through the path and the
// layer's in the maps). An invalid ScopedFd when none is.
ScopedFd OpenMappedFileOf(const std::string& proc_root, uint32_t pid, uint64_t start, uint64_t end,
                          const std::string& path, uint64_t inode, std::optional<dev_t> dev);

class FileTable {
 public:
  static constexpr uint32_t kNoFile = 0xffffffffu;

  explicit FileTable(std::string proc_root) : proc_root_(std::move(proc_root)) {}

  // The file of mapping m in pid (path without " (deleted)"); kNoFile when it
  // cannot be opened or the path now names another build.
  uint32_t FileFor(uint32_t pid, const MappingEvent& m, std::string_view path);

  // The open file with this id; nullptr for kNoFile or a closed file.
  const MappedElf* Get(uint32_t id) const {
    auto it = files_.find(id);
    return it == files_.end() ? nullptr : it->second.elf.get();
  }

  // A mapping of file `id` was added to or removed from what the address
  // spaces remember (kNoFile and closed files are ignored).
  void AddMapping(uint32_t id) {
    if (auto it = files_.find(id); it != files_.end()) ++it->second.mappings;
  }
  void RemoveMapping(uint32_t id) {
    if (auto it = files_.find(id); it != files_.end() && it->second.mappings > 0) --it->second.mappings;
  }

  // A module name as frames carry it, stable for the table's lifetime.
  std::string_view Intern(std::string_view name) {
    if (auto it = module_names_.find(name); it != module_names_.end()) return *it;
    return *module_names_.emplace(name).first;
  }
  // Intern(path) for a mapping of file `id`: the name its last mapping had
  // is compared first (every exec maps the same few files by the same
  // names, and hashing the path was per mmap event).
  std::string_view ModuleOf(uint32_t id, std::string_view path) {
    auto it = files_.find(id);
    if (it == files_.end()) return Intern(path);
    if (it->second.module != path) it->second.module = Intern(path);
    return it->second.module;
  }

  size_t open_files() const { return files_.size(); }

  // Closes every open file no remembered mapping refers to (AddMapping,
  // RemoveMapping); returns how many were closed.
  size_t CloseUnmapped();

  // True once opening a file failed for the open file limit (EMFILE/ENFILE);
  // the first time is logged as a warning.
  bool hit_file_limit() const { return hit_file_limit_; }

 private:
  struct DevInode {
    uint64_t dev = 0;
    uint64_t inode = 0;
    bool operator==(const DevInode&) const = default;
  };
  struct DevInodeHash {
    size_t operator()(const DevInode& k) const {
      return std::hash<uint64_t>()(k.dev * 0x9e3779b97f4a7c15ULL ^ k.inode);
    }
  };

  ScopedFd OpenMappedFile(uint32_t pid, uint64_t start, uint64_t end, const std::string& path,
                          uint64_t inode);
  void NoteOpenError(const std::string& path);
  uint32_t Register(std::unique_ptr<MappedElf> file, std::optional<DevInode> reported,
                    const std::string& reported_build_id);

  std::string proc_root_;
  uint32_t next_id_ = 0;
  struct OpenFile {
    std::unique_ptr<MappedElf> elf;
    // Mappings of it the address spaces remember: the forget pass closes the
    // file at 0 without walking every process's mappings.
    uint32_t mappings = 0;
    std::string_view module;  // interned: the name its last mapping had
  };
  std::unordered_map<uint32_t, OpenFile> files_;
  std::unordered_map<DevInode, uint32_t, DevInodeHash> by_inode_;
  std::unordered_map<std::string, uint32_t> by_build_id_;
  std::unordered_set<std::string, TransparentStringHash, std::equal_to<>> module_names_;  // node-based: views stay valid
  bool hit_file_limit_ = false;
};

}  // namespace arcprof
