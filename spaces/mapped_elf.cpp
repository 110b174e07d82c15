#include "spaces/mapped_elf.h"

#include <sys/stat.h>

#include <span>

namespace arcprof {

std::unique_ptr<MappedElf> MappedElf::FromFd(ScopedFd fd, std::string path) {
  std::unique_ptr<MappedElf> file(new MappedElf());
  file->fd_ = std::move(fd);
  file->path_ = std::move(path);
  struct stat st;
  if (fstat(file->fd_.get(), &st) == 0) {
    file->dev_ = st.st_dev;
    file->inode_ = st.st_ino;
  }
  file->ReadHeader();
  return file;
}

std::unique_ptr<MappedElf> MappedElf::FromImage(std::vector<char> image, std::string name) {
  std::unique_ptr<MappedElf> file(new MappedElf());
  file->image_ = std::move(image);
  file->path_ = std::move(name);
  file->ReadHeader();
  return file;
}

void MappedElf::ReadHeader() {
  auto elf = Open();
  if (!elf.ok()) {
    header_error_ = elf.error().message;
    return;
  }
  auto header = ReadElfHeaderInfo(elf->get());
  if (header.ok()) {
    header_ = std::move(header).value();
  } else {
    header_error_ = header.error().message;
  }
}

Result<ElfPtr> MappedElf::Open() const {
  if (fd_.valid()) return OpenElfFd(fd_.get());
  return OpenElfMemory(std::span<char>(image_.data(), image_.size()));
}

}  // namespace arcprof
