// libFuzzer target: ELF symbol loading from a byte buffer (elf_memory), the
// path the vDSO takes and the same code that reads every mapped file.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "symbolize/elf_file.h"
#include "symbolize/elf_symbols.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::vector<char> image(reinterpret_cast<const char*>(data), reinterpret_cast<const char*>(data) + size);
  auto file = arcprof::ElfFile::FromImage(std::move(image), "fuzz-input");
  if (!file->is_elf()) return 0;
  arcprof::DebugSearchOptions no_debug;  // no directories: never touches the file system
  std::vector<uint64_t> probes = {0, 0x1000, 0x401000, file->header().entry, file->header().entry + 4};
  for (const arcprof::LoadSegment& s : file->header().loads) {
    if (auto vaddr = file->OffsetToVaddr(s.offset)) probes.push_back(*vaddr);
    probes.push_back(s.vaddr + s.filesz / 2);
  }
  for (uint64_t vaddr : probes) {
    arcprof::ElfFile::Lookup found = file->Find(vaddr, no_debug);
    if (found.symbol && (vaddr < found.symbol->start || vaddr >= found.symbol->end)) __builtin_trap();
    if (auto start = file->FunctionStart(vaddr); start && *start > vaddr) __builtin_trap();
  }
  return 0;
}
