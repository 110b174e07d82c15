#include "spaces/elf_header.h"

#include <gelf.h>

#include <algorithm>
#include <cstring>

namespace arcprof {
namespace {

constexpr uint32_t kNtGnuBuildId = 3;

std::string ToHex(const uint8_t* bytes, size_t n) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string hex;
  hex.reserve(n * 2);
  for (size_t i = 0; i < n; ++i) {
    hex.push_back(kDigits[bytes[i] >> 4]);
    hex.push_back(kDigits[bytes[i] & 0xf]);
  }
  return hex;
}

// Scans a buffer of ELF notes for NT_GNU_BUILD_ID.
std::string BuildIdFromNotes(Elf_Data* data) {
  if (!data || !data->d_buf) return "";
  size_t offset = 0;
  GElf_Nhdr nhdr;
  size_t name_offset = 0, desc_offset = 0;
  while (offset < data->d_size) {
    size_t next = gelf_getnote(data, offset, &nhdr, &name_offset, &desc_offset);
    if (next == 0 || next <= offset) break;
    const char* base = static_cast<const char*>(data->d_buf);
    if (nhdr.n_type == kNtGnuBuildId && nhdr.n_namesz == 4 &&
        std::memcmp(base + name_offset, "GNU", 4) == 0 && nhdr.n_descsz > 0 &&
        nhdr.n_descsz <= 64) {
      return ToHex(reinterpret_cast<const uint8_t*>(base + desc_offset), nhdr.n_descsz);
    }
    offset = next;
  }
  return "";
}

// DT_FLAGS_1 has DF_1_PIE: the linker made a position-independent program.
bool IsPie(Elf_Data* dynamic) {
  if (!dynamic || !dynamic->d_buf) return false;
  // gelf_getdyn fails past the end of the data; d_size bounds the loop too.
  for (size_t i = 0; i < dynamic->d_size; ++i) {
    GElf_Dyn dyn;
    if (!gelf_getdyn(dynamic, static_cast<int>(i), &dyn) || dyn.d_tag == DT_NULL) break;
    if (dyn.d_tag == DT_FLAGS_1) return (dyn.d_un.d_val & DF_1_PIE) != 0;
  }
  return false;
}

Result<ElfPtr> CheckElf(Elf* raw) {
  ElfPtr elf(raw);
  if (!elf) return MakeError(std::string("libelf: ") + elf_errmsg(-1));
  if (elf_kind(elf.get()) != ELF_K_ELF) return MakeError("not an ELF file");
  GElf_Ehdr ehdr;
  if (!gelf_getehdr(elf.get(), &ehdr)) return MakeError(std::string("bad ELF header: ") + elf_errmsg(-1));
  return elf;
}

}  // namespace

Result<ElfPtr> OpenElfFd(int fd) {
  elf_version(EV_CURRENT);  // idempotent; required before any other libelf call
  return CheckElf(elf_begin(fd, ELF_C_READ, nullptr));
}

Result<ElfPtr> OpenElfMemory(std::span<char> image) {
  elf_version(EV_CURRENT);
  return CheckElf(elf_memory(image.data(), image.size()));
}

Result<ElfHeaderInfo> ReadElfHeaderInfo(Elf* elf) {
  ElfHeaderInfo info;
  GElf_Ehdr ehdr;
  if (!gelf_getehdr(elf, &ehdr)) return MakeError(std::string("bad ELF header: ") + elf_errmsg(-1));
  info.type = ehdr.e_type;
  info.entry = ehdr.e_entry;
  info.executable = ehdr.e_type == ET_EXEC;

  size_t phnum = 0;
  if (elf_getphdrnum(elf, &phnum) == 0) {
    for (size_t i = 0; i < phnum; ++i) {
      GElf_Phdr phdr;
      if (!gelf_getphdr(elf, static_cast<int>(i), &phdr)) break;
      if (phdr.p_type == PT_LOAD) {
        info.loads.push_back({phdr.p_offset, phdr.p_vaddr, phdr.p_filesz, phdr.p_memsz});
      } else if (phdr.p_type == PT_NOTE && info.build_id.empty() && phdr.p_filesz > 0 &&
                 phdr.p_filesz < (1u << 20)) {
        info.build_id = BuildIdFromNotes(
            elf_getdata_rawchunk(elf, static_cast<int64_t>(phdr.p_offset), phdr.p_filesz, ELF_T_NHDR));
      } else if (phdr.p_type == PT_DYNAMIC && ehdr.e_type == ET_DYN && phdr.p_filesz < (1u << 20)) {
        info.executable = IsPie(
            elf_getdata_rawchunk(elf, static_cast<int64_t>(phdr.p_offset), phdr.p_filesz, ELF_T_DYN));
      }
    }
  }

  size_t shstrndx = 0;
  const bool have_names = elf_getshdrstrndx(elf, &shstrndx) == 0;
  Elf_Scn* scn = nullptr;
  while ((scn = elf_nextscn(elf, scn)) != nullptr) {
    GElf_Shdr shdr;
    if (!gelf_getshdr(scn, &shdr)) break;
    if (shdr.sh_type == SHT_SYMTAB) info.has_symtab = true;
    if (shdr.sh_type == SHT_NOTE && info.build_id.empty()) {
      info.build_id = BuildIdFromNotes(elf_getdata(scn, nullptr));
    }
    if (have_names && shdr.sh_type == SHT_PROGBITS) {
      const char* name = elf_strptr(elf, shstrndx, shdr.sh_name);
      if (name && std::strcmp(name, ".gnu_debuglink") == 0) {
        Elf_Data* data = elf_getdata(scn, nullptr);
        if (data && data->d_buf && data->d_size >= 8) {
          const char* bytes = static_cast<const char*>(data->d_buf);
          size_t len = strnlen(bytes, data->d_size);
          size_t crc_offset = (len + 4) & ~size_t{3};  // NUL, then padding to 4
          if (len > 0 && crc_offset + 4 <= data->d_size) {
            info.debuglink.assign(bytes, len);
            std::memcpy(&info.debuglink_crc, bytes + crc_offset, 4);
          }
        }
      }
    }
  }
  return info;
}

std::optional<uint64_t> FileOffsetToVaddr(const std::vector<LoadSegment>& loads, uint64_t offset) {
  for (const LoadSegment& s : loads) {
    if (offset >= s.offset && offset - s.offset < std::max(s.filesz, s.memsz))
      return offset - s.offset + s.vaddr;
  }
  // The mapping starts at the page below p_offset: accept the page-aligned
  // head of a segment too.
  for (const LoadSegment& s : loads) {
    uint64_t page_start = s.offset & ~uint64_t{0xfff};
    if (offset >= page_start && offset < s.offset) return s.vaddr - (s.offset - offset);
  }
  return std::nullopt;
}

std::optional<uint64_t> VaddrToFileOffset(const std::vector<LoadSegment>& loads, uint64_t vaddr) {
  for (const LoadSegment& s : loads) {
    if (vaddr >= s.vaddr && vaddr - s.vaddr < s.filesz) return vaddr - s.vaddr + s.offset;
  }
  return std::nullopt;
}

}  // namespace arcprof
