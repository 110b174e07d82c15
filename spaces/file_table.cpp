#include "spaces/file_table.h"

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <spdlog/fmt/fmt.h>
#include <spdlog/spdlog.h>

namespace arcprof {

void FileTable::NoteOpenError(const std::string& path) {
  if ((errno != EMFILE && errno != ENFILE) || hit_file_limit_) return;
  hit_file_limit_ = true;
  struct rlimit limit {};
  getrlimit(RLIMIT_NOFILE, &limit);
  spdlog::warn(
      "open file limit reached ({} open, limit {}) opening {}: frames in files not opened yet "
      "will be unknown; raise the limit (ulimit -n)",
      files_.size(), static_cast<unsigned long long>(limit.rlim_cur), path);
}

ScopedFd OpenMappedFileOf(const std::string& proc_root, uint32_t pid, uint64_t start, uint64_t end,
                          const std::string& path, uint64_t inode, std::optional<dev_t> dev) {
  auto is_it = [&](int fd) {
    struct stat st;
    return fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && (inode == 0 || st.st_ino == inode) &&
           (!dev || st.st_dev == *dev);
  };
  // map_files names the exact mapped inode, even if deleted or in another
  // mount namespace (opening it needs CAP_SYS_ADMIN or
  // CAP_CHECKPOINT_RESTORE).
  ScopedFd fd(open(fmt::format("{}/{}/map_files/{:x}-{:x}", proc_root, pid, start, end).c_str(),
                   O_RDONLY | O_CLOEXEC | O_NONBLOCK));
  if (fd.valid()) return is_it(fd.get()) ? std::move(fd) : ScopedFd();
  const int map_files_errno = errno;
  // The path inside the process's root. The process controls that tree:
  // its symbolic links resolve inside the root (never out of it, never
  // through /proc's magic links), no FIFO is waited on, and what opens must
  // be the mapped inode.
  ScopedFd root(open(fmt::format("{}/{}/root", proc_root, pid).c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (root.valid()) {
    struct open_how how {};
    how.flags = O_RDONLY | O_CLOEXEC | O_NONBLOCK;
    how.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS;
    ScopedFd in_root(static_cast<int>(syscall(SYS_openat2, root.get(), path.c_str(), &how, sizeof(how))));
    if (in_root.valid() && is_it(in_root.get())) return in_root;
  }
  errno = map_files_errno;
  return ScopedFd();
}

ScopedFd FileTable::OpenMappedFile(uint32_t pid, uint64_t start, uint64_t end,
                                     const std::string& path, uint64_t inode) {
  ScopedFd fd = OpenMappedFileOf(proc_root_, pid, start, end, path, inode, std::nullopt);
  if (fd.valid()) return fd;
  NoteOpenError(path);
  // A process gone by now: the path in arcprof's own root, if it is the
  // mapped inode.
  ScopedFd other(open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK));
  if (!other.valid()) {
    NoteOpenError(path);
    return ScopedFd();
  }
  struct stat st;
  if (fstat(other.get(), &st) != 0 || !S_ISREG(st.st_mode) || (inode != 0 && st.st_ino != inode)) return ScopedFd();
  return other;
}

uint32_t FileTable::Register(std::unique_ptr<MappedElf> file, std::optional<DevInode> reported,
                               const std::string& reported_build_id) {
  const uint32_t id = next_id_++;
  by_inode_.emplace(DevInode{file->dev(), file->inode()}, id);
  if (reported) by_inode_.emplace(*reported, id);
  const std::string& build_id = file->build_id().empty() ? reported_build_id : file->build_id();
  if (!build_id.empty()) by_build_id_.emplace(build_id, id);
  files_.emplace(id, OpenFile{std::move(file), 0, {}});
  return id;
}

uint32_t FileTable::FileFor(uint32_t pid, const MappingEvent& m, std::string_view path_view) {
  std::optional<DevInode> reported;
  if (m.ino != 0) reported = DevInode{makedev(m.maj, m.min), m.ino};
  auto compatible = [&](uint32_t id) {
    const std::string& known = files_.at(id).elf->build_id();
    return m.build_id.empty() || known.empty() || known == m.build_id;
  };
  if (reported) {
    auto it = by_inode_.find(*reported);
    if (it != by_inode_.end() && compatible(it->second)) return it->second;
  }
  if (!m.build_id.empty()) {
    auto it = by_build_id_.find(m.build_id);
    if (it != by_build_id_.end()) {
      if (reported) by_inode_.emplace(*reported, it->second);
      return it->second;
    }
  }
  const std::string path(path_view);  // only a file not open yet needs it as a string
  ScopedFd fd = OpenMappedFile(pid, m.start, m.start + m.len, path, m.ino);
  if (!fd.valid()) {
    spdlog::debug("symbolizer: cannot open {} mapped by pid {}", path, pid);
    return kNoFile;
  }
  struct stat st;
  if (fstat(fd.get(), &st) == 0) {
    auto it = by_inode_.find(DevInode{st.st_dev, st.st_ino});
    if (it != by_inode_.end() && compatible(it->second)) {
      if (reported) by_inode_.emplace(*reported, it->second);
      return it->second;
    }
  }
  std::unique_ptr<MappedElf> file = MappedElf::FromFd(std::move(fd), path);
  if (!m.build_id.empty() && !file->build_id().empty() && file->build_id() != m.build_id) {
    // The path now names another build than the one that was mapped.
    spdlog::debug("symbolizer: {} has build-id {}, pid {} mapped {}", path, file->build_id(), pid,
                  m.build_id);
    return kNoFile;
  }
  return Register(std::move(file), reported, m.build_id);
}

size_t FileTable::CloseUnmapped() {
  const size_t before = files_.size();
  std::erase_if(files_, [](const auto& entry) { return entry.second.mappings == 0; });
  if (files_.size() == before) return 0;
  std::erase_if(by_inode_, [&](const auto& entry) { return !files_.count(entry.second); });
  std::erase_if(by_build_id_, [&](const auto& entry) { return !files_.count(entry.second); });
  return before - files_.size();
}

}  // namespace arcprof
