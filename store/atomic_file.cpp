#include "store/atomic_file.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
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

// Removes ".NAME.tmp.PID.*" files in `dir` whose writer is gone: regular
// files owned by us, PID not running (and not ours). Best effort.
void RemoveLeftovers(const std::string& dir) {
  DIR* d = ::opendir(dir.c_str());
  if (!d) return;
  const int dir_fd = ::dirfd(d);
  while (const dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    if (name.size() < 2 || name[0] != '.') continue;
    const auto tmp = name.find(".tmp.", 1);
    if (tmp == std::string::npos) continue;
    const std::string rest = name.substr(tmp + 5);
    const auto dot = rest.find('.');
    if (dot == std::string::npos || dot == 0) continue;
    char* end = nullptr;
    const long pid = std::strtol(rest.c_str(), &end, 10);
    if (end != rest.c_str() + dot || pid <= 0 || pid == ::getpid()) continue;
    if (::kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH) continue;
    struct stat st {};
    if (::fstatat(dir_fd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
    if (!S_ISREG(st.st_mode) || st.st_uid != ::geteuid()) continue;
    ::unlinkat(dir_fd, e->d_name, 0);
  }
  ::closedir(d);
}

}  // namespace

const char* FileKind(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISLNK(mode)) return "a symbolic link";
  if (S_ISREG(mode)) return "a regular file";
  return "not a regular file";
}

AtomicFile::AtomicFile(std::string target_path, std::string temp_path, ScopedFd fd)
    : target_path_(std::move(target_path)), temp_path_(std::move(temp_path)), fd_(std::move(fd)) {}

AtomicFile::AtomicFile(AtomicFile&& other) noexcept
    : target_path_(std::move(other.target_path_)),
      temp_path_(std::move(other.temp_path_)),
      fd_(std::move(other.fd_)),
      committed_(std::exchange(other.committed_, true)),
      direct_(other.direct_) {}

AtomicFile& AtomicFile::operator=(AtomicFile&& other) noexcept {
  if (this != &other) {
    Discard();
    target_path_ = std::move(other.target_path_);
    temp_path_ = std::move(other.temp_path_);
    fd_ = std::move(other.fd_);
    committed_ = std::exchange(other.committed_, true);
    direct_ = other.direct_;
  }
  return *this;
}

AtomicFile::~AtomicFile() { Discard(); }

void AtomicFile::Discard() {
  fd_.reset();
  if (!committed_ && !temp_path_.empty()) ::unlink(temp_path_.c_str());
  committed_ = true;
}

Result<AtomicFile> AtomicFile::Create(const std::string& target_path, Streams streams) {
  if (target_path.empty()) return MakeError("output path is empty; pass a file name");
  const std::string dir = DirectoryOf(target_path);
  const std::string base = BaseNameOf(target_path);
  struct stat st {};
  if (::lstat(target_path.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) {
    // A link is followed only when we or root own it (/dev/stdout), and
    // only to write through it; one planted by another user is refused.
    bool through_link = false;
    if (S_ISLNK(st.st_mode)) {
      if (st.st_uid != 0 && st.st_uid != ::geteuid()) {
        return MakeError(target_path +
                         ": is a symbolic link owned by another user; it is neither followed nor "
                         "replaced: pass another name");
      }
      if (streams == Streams::kRefuse) {
        return MakeError(target_path + ": is a symbolic link; pass the path of the file itself");
      }
      if (::stat(target_path.c_str(), &st) != 0) {
        return MakeError(target_path + ": is a symbolic link to nothing (" + Errno(errno) + ")");
      }
      through_link = true;
    }
    const bool stream = S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode);
    if (!(stream || (through_link && S_ISREG(st.st_mode))) || streams == Streams::kRefuse) {
      return MakeError(target_path + ": is " + FileKind(st.st_mode) +
                       (S_ISDIR(st.st_mode) ? "; pass a file name"
                                            : "; only a regular file is written here, pass a file name"));
    }
    // Never renamed over: written in place. O_NONBLOCK so that a FIFO
    // without a reader fails at once instead of hanging.
    const int follow = through_link ? 0 : O_NOFOLLOW;
    const int truncate = S_ISREG(st.st_mode) ? O_TRUNC : 0;
    ScopedFd fd(::open(target_path.c_str(), O_WRONLY | follow | truncate | O_CLOEXEC | O_NONBLOCK | O_NOCTTY));
    if (!fd.valid()) {
      return MakeError(target_path + ": cannot write to " + FileKind(st.st_mode) + ": " +
                       (errno == ENXIO ? std::string("no process reads the FIFO") : Errno(errno)));
    }
    const int flags = ::fcntl(fd.get(), F_GETFL);
    if (flags >= 0) ::fcntl(fd.get(), F_SETFL, flags & ~O_NONBLOCK);
    AtomicFile file(target_path, "", std::move(fd));
    file.direct_ = true;
    return file;
  }
  if (base.empty() || base == "." || base == "..") {
    return MakeError(target_path + ": not a file name; pass a path to a file");
  }
  RemoveLeftovers(dir);
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

Result<void> AtomicFile::WriteWhole(const std::string& target_path, std::string_view bytes,
                                    Streams streams) {
  auto file = Create(target_path, streams);
  if (!file) return file.error();
  if (auto written = file->Write(bytes); !written) return written;
  return file->Commit();
}

Result<void> AtomicFile::Commit() {
  if (committed_) return MakeError(target_path_ + ": internal error: file already committed");
  if (direct_) {
    fd_.reset();
    committed_ = true;
    return {};
  }
  if (!fd_.valid()) {
    fd_.reset(::open(temp_path_.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
    if (!fd_.valid()) return MakeError(target_path_ + ": cannot reopen temporary file: " + Errno(errno));
  }
  if (::fsync(fd_.get()) != 0) return MakeError(target_path_ + ": fsync failed: " + Errno(errno));
  fd_.reset();
  // The target may have changed since Create(): still never rename over
  // anything but a regular file.
  struct stat st {};
  if (::lstat(target_path_.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) {
    return MakeError(target_path_ + ": is " + FileKind(st.st_mode) + " now; not replaced");
  }
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
