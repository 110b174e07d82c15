// Creates an output file without ever exposing a partial one: the bytes go to a
// temporary file next to the target (open(O_CREAT|O_EXCL|O_NOFOLLOW, 0600), so a
// name planted in a shared directory such as /tmp is never followed or reused),
// and Commit() renames it over the target. A file that was never committed is
// unlinked.
//
// Only a new name or a regular file is ever renamed over. With
// Streams::kWriteDirectly (exports) a character device or FIFO at the target
// (/dev/null, a named pipe) is written in place, and so is what a symbolic
// link owned by us or root leads to (/dev/stdout); without it (captures) all
// of these are refused. A link owned by another user (planted in /tmp) is
// never followed nor replaced; directories, block devices and sockets are
// always refused.
//
// Temporary files of processes that died before Commit() (".NAME.tmp.PID...",
// owned by us, PID no longer running) are removed from the folder on the next
// Create() there.
#pragma once

#include <sys/types.h>

#include <string>
#include <string_view>

#include "common/result.h"
#include "common/scoped_fd.h"

namespace arcprof::store {

// "a directory", "a FIFO", "a symbolic link", ... for messages about a path
// that is not what it should be.
const char* FileKind(mode_t mode);

class AtomicFile {
 public:
  enum class Streams { kRefuse, kWriteDirectly };
  // Creates the temporary file in the target's directory, mode 0600 (or opens
  // a device/FIFO target for writing, with Streams::kWriteDirectly).
  static Result<AtomicFile> Create(const std::string& target_path,
                                   Streams streams = Streams::kRefuse);

  AtomicFile(AtomicFile&& other) noexcept;
  AtomicFile& operator=(AtomicFile&& other) noexcept;
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;
  ~AtomicFile();

  // Empty when writing directly to a device or FIFO.
  const std::string& temp_path() const { return temp_path_; }
  bool direct() const { return direct_; }
  const std::string& target_path() const { return target_path_; }
  int fd() const { return fd_.get(); }

  // Writes all of `bytes` to the temporary file (retrying short writes).
  Result<void> Write(std::string_view bytes);
  // Closes the descriptor; for writers (SQLite) that reopen the file by path.
  void CloseFd() { fd_.reset(); }
  // fsyncs the file, renames it over the target and fsyncs the directory.
  Result<void> Commit();
  // Create, Write and Commit in one: `bytes` becomes the whole file at
  // `target_path`, or nothing changes there.
  static Result<void> WriteWhole(const std::string& target_path, std::string_view bytes,
                                 Streams streams = Streams::kRefuse);

 private:
  AtomicFile(std::string target_path, std::string temp_path, ScopedFd fd);
  void Discard();

  std::string target_path_;
  std::string temp_path_;
  ScopedFd fd_;
  bool committed_ = false;
  bool direct_ = false;
};

}  // namespace arcprof::store
