#include "store/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <random>
#include <utility>

namespace arcprof::store {
namespace {

std::string DirectoryOf(const std::string& path) {
  const auto slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

std::string BaseNameOf(const std::string& path) {
  const auto slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

std::string Errno(int err) { return std::strerror(err); }

}  // namespace

AtomicFile::AtomicFile(std::string target_path, std::string temp_path, ScopedFd fd)
    : target_path_(std::move(target_path)), temp_path_(std::move(temp_path)), fd_(std::move(fd)) {}

AtomicFile::AtomicFile(AtomicFile&& other) noexcept
    : target_path_(std::move(other.target_path_)),
      temp_path_(std::move(other.temp_path_)),
      fd_(std::move(other.fd_)),
      committed_(std::exchange(other.committed_, true)) {}

AtomicFile& AtomicFile::operator=(AtomicFile&& other) noexcept {
  if (this != &other) {
    Discard();
    target_path_ = std::move(other.target_path_);
    temp_path_ = std::move(other.temp_path_);
    fd_ = std::move(other.fd_);
    committed_ = std::exchange(other.committed_, true);
  }
  return *this;
}

AtomicFile::~AtomicFile() { Discard(); }

void AtomicFile::Discard() {
  fd_.reset();
  if (!committed_ && !temp_path_.empty()) ::unlink(temp_path_.c_str());
  committed_ = true;
}

Result<AtomicFile> AtomicFile::Create(const std::string& target_path) {
  if (target_path.empty()) return MakeError("output path is empty; pass a file name");
  const std::string dir = DirectoryOf(target_path);
  const std::string base = BaseNameOf(target_path);
  if (base.empty() || base == "." || base == "..") {
    return MakeError(target_path + ": not a file name; pass a path to a file");
  }
  // A process-wide counter plus randomness: names never repeat within a process
  // and are hard to predict for another user racing us in /tmp.
  static std::atomic<uint64_t> counter{0};
  std::random_device random;
  for (int attempt = 0; attempt < 16; ++attempt) {
    const std::string temp = dir + "/." + base + ".tmp." + std::to_string(::getpid()) + "." +
                             std::to_string(counter++) + "." + std::to_string(random());
    ScopedFd fd(::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
    if (!fd.valid()) {
      if (errno == EEXIST) continue;
      return MakeError(target_path + ": cannot create a file in " + dir + ": " + Errno(errno) +
                       "; check that the directory exists and is writable");
    }
    // The umask can only narrow 0600, but say it explicitly: captures hold
    // command lines and symbol names of every process on the machine.
    if (::fchmod(fd.get(), 0600) != 0) {
      const int err = errno;
      ::unlink(temp.c_str());
      return MakeError(target_path + ": cannot set mode 0600: " + Errno(err));
    }
    return AtomicFile(target_path, temp, std::move(fd));
  }
  return MakeError(target_path + ": cannot pick a unique temporary name in " + dir);
}

Result<void> AtomicFile::Write(std::string_view bytes) {
  if (!fd_.valid()) return MakeError(target_path_ + ": internal error: file already closed");
  while (!bytes.empty()) {
    const ssize_t written = ::write(fd_.get(), bytes.data(), bytes.size());
    if (written < 0) {
      if (errno == EINTR) continue;
      return MakeError(target_path_ + ": write failed: " + Errno(errno));
    }
    bytes.remove_prefix(static_cast<size_t>(written));
  }
  return {};
}

Result<void> AtomicFile::Commit() {
  if (committed_) return MakeError(target_path_ + ": internal error: file already committed");
  if (!fd_.valid()) {
    fd_.reset(::open(temp_path_.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
    if (!fd_.valid()) return MakeError(target_path_ + ": cannot reopen temporary file: " + Errno(errno));
  }
  if (::fsync(fd_.get()) != 0) return MakeError(target_path_ + ": fsync failed: " + Errno(errno));
  fd_.reset();
  if (::rename(temp_path_.c_str(), target_path_.c_str()) != 0) {
    return MakeError(target_path_ + ": cannot replace the file: " + Errno(errno) +
                     (errno == EISDIR ? "; it is a directory, pass a file name" : ""));
  }
  committed_ = true;
  // Persist the rename itself; failure here does not undo a complete file.
  ScopedFd dir(::open(DirectoryOf(target_path_).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (dir.valid()) ::fsync(dir.get());
  return {};
}

}  // namespace arcprof::store
