#include "spaces/vdso_image.h"

#include <fcntl.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <spdlog/spdlog.h>

#include "spaces/proc_parse.h"
#include "spaces/process_registry.h"

namespace arcprof {
namespace {

// A sealed memfd holding `len` bytes from `bytes`; invalid on failure.
ScopedFd SealedCopy(const char* bytes, size_t len) {
  ScopedFd fd(memfd_create("arcprof-vdso", MFD_CLOEXEC | MFD_ALLOW_SEALING));
  if (!fd.valid()) return {};
  for (size_t done = 0; done < len;) {
    const ssize_t n = write(fd.get(), bytes + done, len - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return {};
    done += static_cast<size_t>(n);
  }
  // Nothing may change the image behind the caches keyed by its file id.
  fcntl(fd.get(), F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL);
  return fd;
}

}  // namespace

const MappedElf* VdsoImage::Get() {
  if (tried_) return image_.get();
  tried_ = true;
  // This process's copy is read through the auxiliary vector, its size from maps.
  const uintptr_t base = getauxval(AT_SYSINFO_EHDR);
  if (base == 0) return nullptr;
  auto maps = ReadWholeFile("/proc/self/maps");
  if (!maps.ok()) return nullptr;
  for (const procfs::MapsEntry& e : procfs::ParseMaps(*maps)) {
    if (e.start == base && e.path == kVdsoModule) {
      ScopedFd fd = SealedCopy(reinterpret_cast<const char*>(base), e.end - e.start);
      if (!fd.valid()) {
        spdlog::warn("cannot copy the vDSO into a memfd: {}; [vdso] frames stay unnamed and end unwinding",
                     std::strerror(errno));
        break;
      }
      image_ = MappedElf::FromFd(std::move(fd), std::string(kVdsoModule));
      break;
    }
  }
  return image_.get();
}

}  // namespace arcprof
