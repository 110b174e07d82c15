#include "loader/trace_code.h"

#include <capstone/capstone.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <gelf.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <spdlog/spdlog.h>

#include "common/scoped_fd.h"
#include "symbolize/elf_symbols.h"

namespace arcprof {
namespace {

constexpr uint64_t kMaxFunctionBytes = 1 << 20;

#define ARCPROF_STR2(x) #x
#define ARCPROF_STR(x) ARCPROF_STR2(x)

// capstone is opened when `trace` first decodes, not linked: its tables are
// relocated when the library loads, 3.2 MB of resident memory in every
// arcprof process (a third of what `record -- /bin/true` adds to its heap).
struct CapstoneApi {
  decltype(&cs_open) open = nullptr;
  decltype(&cs_option) option = nullptr;
  decltype(&cs_close) close = nullptr;
  decltype(&cs_malloc) malloc = nullptr;
  decltype(&cs_free) free = nullptr;
  decltype(&cs_disasm_iter) disasm_iter = nullptr;
  bool ok = false;

  CapstoneApi() {
    static constexpr const char* kLibrary = "libcapstone.so." ARCPROF_STR(CS_API_MAJOR);
    void* lib = dlopen(kLibrary, RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
      spdlog::error("cannot decode machine code: {}", dlerror());
      return;
    }
    open = reinterpret_cast<decltype(open)>(dlsym(lib, "cs_open"));
    option = reinterpret_cast<decltype(option)>(dlsym(lib, "cs_option"));
    close = reinterpret_cast<decltype(close)>(dlsym(lib, "cs_close"));
    malloc = reinterpret_cast<decltype(malloc)>(dlsym(lib, "cs_malloc"));
    free = reinterpret_cast<decltype(free)>(dlsym(lib, "cs_free"));
    disasm_iter = reinterpret_cast<decltype(disasm_iter)>(dlsym(lib, "cs_disasm_iter"));
    ok = open && option && close && malloc && free && disasm_iter;
    if (!ok) spdlog::error("cannot decode machine code: {} lacks a function arcprof uses", kLibrary);
  }
};

const CapstoneApi& Api() {
  static const CapstoneApi api;  // the library stays loaded until exit
  return api;
}

struct Capstone {
  csh handle = 0;
  bool ok = false;
  Capstone() {
    if (!Api().ok) return;
    ok = Api().open(CS_ARCH_X86, CS_MODE_64, &handle) == CS_ERR_OK;
    if (ok) Api().option(handle, CS_OPT_DETAIL, CS_OPT_ON);
  }
  ~Capstone() {
    if (ok) Api().close(&handle);
  }
};

}  // namespace

DecodedFunction DecodeFunction(std::span<const uint8_t> code, uint64_t start) {
  DecodedFunction out;
  thread_local Capstone cs;
  if (!cs.ok) {
    out.complete = false;
    return out;
  }
  if (code.size() > kMaxFunctionBytes) code = code.first(kMaxFunctionBytes);
  const uint64_t end = start + code.size();
  cs_insn* insn = Api().malloc(cs.handle);
  const uint8_t* p = code.data();
  size_t left = code.size();
  uint64_t address = start;
  std::vector<uint64_t> rets, jumps, jump_targets;
  while (left > 0) {
    if (!Api().disasm_iter(cs.handle, &p, &left, &address, insn)) {
      // Padding or data: stop; what was decoded so far is exact.
      out.complete = false;
      break;
    }
    if (insn->address == start) out.first_is_push = insn->id == X86_INS_PUSH;
    const cs_x86& x86 = insn->detail->x86;
    const bool one_imm = x86.op_count == 1 && x86.operands[0].type == X86_OP_IMM;
    switch (insn->id) {
      case X86_INS_RET:
        rets.push_back(insn->address);
        break;
      case X86_INS_CALL:
        if (one_imm) {
          out.call_targets.push_back(static_cast<uint64_t>(x86.operands[0].imm));
        } else {
          ++out.indirect_calls;
        }
        break;
      case X86_INS_JMP:
        if (one_imm) {
          const uint64_t target = static_cast<uint64_t>(x86.operands[0].imm);
          if (target < start || target >= end) {
            jumps.push_back(insn->address);
            jump_targets.push_back(target);
          }
        }
        break;
      default:
        break;
    }
  }
  Api().free(insn, 1);
  out.exits = rets;
  out.exit_targets.assign(rets.size(), 0);
  out.exits.insert(out.exits.end(), jumps.begin(), jumps.end());
  out.exit_targets.insert(out.exit_targets.end(), jump_targets.begin(), jump_targets.end());
  std::sort(out.call_targets.begin(), out.call_targets.end());
  out.call_targets.erase(std::unique(out.call_targets.begin(), out.call_targets.end()),
                         out.call_targets.end());
  return out;
}

const CodeFunction* CodeModule::At(uint64_t vaddr) const {
  auto it = std::lower_bound(functions.begin(), functions.end(), vaddr,
                             [](const CodeFunction& f, uint64_t v) { return f.start < v; });
  return it != functions.end() && it->start == vaddr ? &*it : nullptr;
}

uint64_t CodeModule::FileOffset(uint64_t vaddr) const {
  for (const Segment& s : segments) {
    if (vaddr >= s.vaddr && vaddr - s.vaddr < s.filesz) return vaddr - s.vaddr + s.offset;
  }
  return 0;
}

Result<std::vector<uint8_t>> CodeModule::Read(uint64_t vaddr, uint64_t size) const {
  const uint64_t offset = FileOffset(vaddr);
  if (offset == 0 || FileOffset(vaddr + size - 1) != offset + size - 1) {
    return MakeError("code at " + std::to_string(vaddr) + " is not in the file");
  }
  size = std::min(size, kMaxFunctionBytes);
  if (!file || !file->valid()) return MakeError(path + ": not open");
  std::vector<uint8_t> bytes(size);
  const ssize_t n = pread(file->get(), bytes.data(), size, static_cast<off_t>(offset));
  if (n != static_cast<ssize_t>(size)) return MakeError(path + ": short read");
  return bytes;
}

Result<CodeModule> ReadCodeModule(const std::string& path) {
  // map_files links and /proc/PID/root paths are followed on purpose (they
  // are the kernel's names of the mapped file); the file must be regular.
  ScopedFd fd(open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return MakeError(path + ": " + strerror(errno));
  struct stat st {};
  if (fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) return MakeError(path + ": not a regular file");
  auto elf = OpenElfFd(fd.get());
  if (!elf) return elf.error();
  auto header = ReadElfHeaderInfo(elf->get());
  if (!header) return header.error();
  CodeModule module;
  module.path = path;
  module.file = std::make_shared<ScopedFd>(fcntl(fd.get(), F_DUPFD_CLOEXEC, 0));
  for (const LoadSegment& s : header->loads) module.segments.push_back({s.vaddr, s.offset, s.filesz});
  // The raw names: every FUNC symbol with a size, .symtab first.
  for (const Elf64_Word section : {Elf64_Word{SHT_SYMTAB}, Elf64_Word{SHT_DYNSYM}}) {
    Elf_Scn* scn = nullptr;
    while ((scn = elf_nextscn(elf->get(), scn)) != nullptr) {
      GElf_Shdr shdr;
      if (!gelf_getshdr(scn, &shdr) || shdr.sh_type != section) continue;
      Elf_Data* data = elf_getdata(scn, nullptr);
      if (!data || shdr.sh_entsize == 0) continue;
      const size_t count = std::min<size_t>(shdr.sh_size / shdr.sh_entsize, 4u << 20);
      for (size_t i = 0; i < count; ++i) {
        GElf_Sym sym;
        if (!gelf_getsym(data, static_cast<int>(i), &sym)) break;
        if (GELF_ST_TYPE(sym.st_info) != STT_FUNC || sym.st_shndx == SHN_UNDEF || sym.st_value == 0 ||
            sym.st_size == 0) {
          continue;
        }
        const char* name = elf_strptr(elf->get(), shdr.sh_link, sym.st_name);
        if (!name || !*name) continue;
        std::string raw(name, strnlen(name, 4096));
        if (auto at = raw.find('@'); at != std::string::npos) raw.resize(at);
        CodeFunction f;
        f.start = sym.st_value;
        f.end = sym.st_value + std::min<uint64_t>(sym.st_size, kMaxFunctionBytes);
        std::string pretty = Demangle(raw);
        f.name = pretty.empty() ? raw : std::move(pretty);
        f.raw = std::move(raw);
        module.functions.push_back(std::move(f));
      }
    }
    if (!module.functions.empty()) break;
  }
  std::sort(module.functions.begin(), module.functions.end(),
            [](const CodeFunction& a, const CodeFunction& b) { return a.start < b.start; });
  module.functions.erase(std::unique(module.functions.begin(), module.functions.end(),
                                     [](const CodeFunction& a, const CodeFunction& b) {
                                       return a.start == b.start;
                                     }),
                         module.functions.end());
  return module;
}

std::vector<const CodeFunction*> FindFunctions(const CodeModule& module, const std::string& name) {
  std::vector<const CodeFunction*> out;
  for (const CodeFunction& f : module.functions) {
    const bool bare = f.name.size() > name.size() && f.name.compare(0, name.size(), name) == 0 &&
                      f.name[name.size()] == '(';
    if (f.name == name || f.raw == name || bare) out.push_back(&f);
  }
  return out;
}

}  // namespace arcprof
