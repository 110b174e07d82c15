#include "runtimes/naming.h"

#include <fcntl.h>
#include <unistd.h>

#include <fmt/format.h>

namespace arcprof::runtimes {

bool ProcessMemory::Read(uint32_t pid, uint64_t addr, void* out, size_t n) {
  if (!mem_.valid()) {
    if (failed_) return false;
    mem_.reset(open(fmt::format("/proc/{}/mem", pid).c_str(), O_RDONLY | O_CLOEXEC));
    if (!mem_.valid()) {
      failed_ = true;
      return false;
    }
  }
  return addr != 0 && pread(mem_.get(), out, n, static_cast<off_t>(addr)) == static_cast<ssize_t>(n);
}

std::optional<std::string_view> NameStore::Intern(std::string&& s) {
  if (auto it = names_.find(s); it != names_.end()) return std::string_view(*it);
  if (bytes_ + s.size() > max_bytes_) {
    ++over_budget_;
    return std::nullopt;
  }
  bytes_ += s.size() + 1;
  return std::string_view(*names_.insert(std::move(s)).first);
}

}  // namespace arcprof::runtimes
