#include "symbolize/module_cache.h"

#include <fcntl.h>

#include <cerrno>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <spdlog/fmt/fmt.h>
#include <spdlog/spdlog.h>

namespace arcprof {

void ModuleCache::NoteOpenError(const std::string& path) {
  if ((errno != EMFILE && errno != ENFILE) || hit_file_limit_) return;
  hit_file_limit_ = true;
  struct rlimit limit {};
  getrlimit(RLIMIT_NOFILE, &limit);
  spdlog::warn(
      "open file limit reached ({} open, limit {}) opening {}: frames in files not opened yet "
      "will be unknown; raise the limit (ulimit -n)",
      files_.size(), static_cast<unsigned long long>(limit.rlim_cur), path);
}

ScopedFd ModuleCache::OpenMappedFile(uint32_t pid, uint64_t start, uint64_t end,
                                     const std::string& path, uint64_t inode) {
  // map_files names the exact mapped inode, even if deleted or in another
  // mount namespace; the path fallbacks may name a different file by now,
  // so they must match the inode the kernel reported.
  ScopedFd fd(open(fmt::format("{}/{}/map_files/{:x}-{:x}", proc_root_, pid, start, end).c_str(),
                   O_RDONLY | O_CLOEXEC));
  if (fd.valid()) return fd;
  NoteOpenError(path);
  for (const std::string& candidate : {fmt::format("{}/{}/root{}", proc_root_, pid, path), path}) {
    ScopedFd other(open(candidate.c_str(), O_RDONLY | O_CLOEXEC));
    if (!other.valid()) {
      NoteOpenError(path);
      continue;
    }
    struct stat st;
    if (fstat(other.get(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
    if (inode != 0 && st.st_ino != inode) continue;
    return other;
  }
  return ScopedFd();
}

uint32_t ModuleCache::Register(std::unique_ptr<ElfFile> file, std::optional<DevInode> reported,
                               const std::string& reported_build_id) {
  const uint32_t id = next_id_++;
  by_inode_.emplace(DevInode{file->dev(), file->inode()}, id);
  if (reported) by_inode_.emplace(*reported, id);
  const std::string& build_id = file->build_id().empty() ? reported_build_id : file->build_id();
  if (!build_id.empty()) by_build_id_.emplace(build_id, id);
  files_.emplace(id, std::move(file));
  return id;
}

uint32_t ModuleCache::FileFor(uint32_t pid, const MappingEvent& m, const std::string& path) {
  std::optional<DevInode> reported;
  if (m.ino != 0) reported = DevInode{makedev(m.maj, m.min), m.ino};
  auto compatible = [&](uint32_t id) {
    const std::string& known = files_.at(id)->build_id();
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
  std::unique_ptr<ElfFile> file = ElfFile::FromFd(std::move(fd), path);
  if (!m.build_id.empty() && !file->build_id().empty() && file->build_id() != m.build_id) {
    // The path now names another build than the one that was mapped.
    spdlog::debug("symbolizer: {} has build-id {}, pid {} mapped {}", path, file->build_id(), pid,
                  m.build_id);
    return kNoFile;
  }
  return Register(std::move(file), reported, m.build_id);
}

void ModuleCache::NoteSymbolsUsed(uint32_t id, bool was_loaded) {
  ElfFile* file = Get(id);
  if (!file || !file->symbols_loaded()) return;
  auto it = symbols_loaded_.find(id);
  if (it == symbols_loaded_.end() || !was_loaded) {
    if (it != symbols_loaded_.end()) ForgetSymbols(id);  // released and read again
    symbol_lru_.push_front(id);
    const size_t bytes = file->symbol_bytes();
    symbols_loaded_.emplace(id, Loaded{symbol_lru_.begin(), bytes});
    symbol_bytes_ += bytes;
  } else {
    symbol_lru_.splice(symbol_lru_.begin(), symbol_lru_, it->second.at);
  }
  while (symbol_bytes_ > symbol_budget_ && symbol_lru_.size() > 1) {
    const uint32_t victim = symbol_lru_.back();
    if (ElfFile* f = Get(victim)) f->ReleaseSymbols();
    ForgetSymbols(victim);
    ++symbols_released_;
  }
}

void ModuleCache::ForgetSymbols(uint32_t id) {
  auto it = symbols_loaded_.find(id);
  if (it == symbols_loaded_.end()) return;
  symbol_bytes_ -= it->second.bytes;
  symbol_lru_.erase(it->second.at);
  symbols_loaded_.erase(it);
}

size_t ModuleCache::CloseAllBut(const std::unordered_set<uint32_t>& live) {
  const size_t before = files_.size();
  for (auto it = symbols_loaded_.begin(); it != symbols_loaded_.end();) {
    if (live.count(it->first)) {
      ++it;
      continue;
    }
    symbol_bytes_ -= it->second.bytes;
    symbol_lru_.erase(it->second.at);
    it = symbols_loaded_.erase(it);
  }
  std::erase_if(files_, [&](const auto& entry) { return !live.count(entry.first); });
  if (files_.size() == before) return 0;
  std::erase_if(by_inode_, [&](const auto& entry) { return !files_.count(entry.second); });
  std::erase_if(by_build_id_, [&](const auto& entry) { return !files_.count(entry.second); });
  return before - files_.size();
}

}  // namespace arcprof
