#include "symbolize/vdso_resolver.h"

#include <sys/auxv.h>

#include "symbolize/proc_parse.h"
#include "symbolize/process_registry.h"

namespace arcprof {

ElfFile* VdsoResolver::Image() {
  if (tried_) return image_.get();
  tried_ = true;
  // This process's copy is read through the auxiliary vector, its size from maps.
  const uintptr_t base = getauxval(AT_SYSINFO_EHDR);
  if (base == 0) return nullptr;
  auto maps = ReadWholeFile("/proc/self/maps");
  if (!maps.ok()) return nullptr;
  for (const procfs::MapsEntry& e : procfs::ParseMaps(*maps)) {
    if (e.start == base && e.path == kVdsoModule) {
      const char* bytes = reinterpret_cast<const char*>(base);
      image_ = ElfFile::FromImage(std::vector<char>(bytes, bytes + (e.end - e.start)),
                                  std::string(kVdsoModule));
      break;
    }
  }
  return image_.get();
}

}  // namespace arcprof
