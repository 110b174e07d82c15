// Creates an output file without ever exposing a partial one: the bytes go to a
// temporary file next to the target (open(O_CREAT|O_EXCL|O_NOFOLLOW, 0600), so a
// name planted in a shared directory such as /tmp is never followed or reused),
// and Commit() renames it over the target. rename() replaces a symlink at the
// target instead of following it. A file that was never committed is unlinked.
#pragma once

#include <string>
#include <string_view>

#include "common/result.h"
#include "common/scoped_fd.h"

namespace arcprof::store {

class AtomicFile {
 public:
  // Creates the temporary file in the target's directory, mode 0600.
  static Result<AtomicFile> Create(const std::string& target_path);

  AtomicFile(AtomicFile&& other) noexcept;
  AtomicFile& operator=(AtomicFile&& other) noexcept;
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;
  ~AtomicFile();

  const std::string& temp_path() const { return temp_path_; }
  const std::string& target_path() const { return target_path_; }
  int fd() const { return fd_.get(); }

  // Writes all of `bytes` to the temporary file (retrying short writes).
  Result<void> Write(std::string_view bytes);
  // Closes the descriptor; for writers (SQLite) that reopen the file by path.
  void CloseFd() { fd_.reset(); }
  // fsyncs the file, renames it over the target and fsyncs the directory.
  Result<void> Commit();

 private:
  AtomicFile(std::string target_path, std::string temp_path, ScopedFd fd);
  void Discard();

  std::string target_path_;
  std::string temp_path_;
  ScopedFd fd_;
  bool committed_ = false;
};

}  // namespace arcprof::store
