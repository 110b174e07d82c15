// The unwinder on this test's own stack: registers and a copy of the stack
// taken in-process, the address space from /proc/self/maps.
#include "unwind/unwinder.h"

#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <link.h>
#include <signal.h>
#include <sys/auxv.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "symbolize/symbolizer.h"
#include "tests/layer_names.h"
#include "tests/unwind/own_stack.h"

namespace arcprof {
namespace {

UnwindResult UnwindOwn(Unwinder& unwinder, const Captured& c) {
  return unwinder.Unwind(OwnInput(c), /*fp_fallback=*/false, 128);
}

// A CFI budget smaller than any file's: every step into another file drops
// the previous file's CFI and reads its own again; the walk is the same.
TEST(Unwinder, CfiBudgetDropsAndRereadsWithTheSameWalk) {
  if (getpid() != gettid()) GTEST_SKIP() << "needs the main thread's stack";
  const uint64_t top = StackTop();
  ASSERT_NE(top, 0u);
  Captured c;
  CaptureDeeper(&c, top, 3);
  AddressSpaces spaces;
  Symbolizer symbolizer(spaces);
  spaces.SnapshotProcess(static_cast<uint32_t>(getpid()), 1000);

  Unwinder roomy(spaces, symbolizer);
  const UnwindResult expected = UnwindOwn(roomy, c);
  // Capture, four CaptureDeeper frames, the test body, gtest, main, libc.
  ASSERT_GE(expected.pcs.size(), 8u);
  EXPECT_EQ(roomy.stats().cfi_released, 0u);

  Unwinder tight(spaces, symbolizer, /*cfi_budget_bytes=*/1);
  for (int round = 0; round < 2; ++round) {
    const UnwindResult r = UnwindOwn(tight, c);
    EXPECT_EQ(r.pcs, expected.pcs);
    EXPECT_EQ(r.stop, expected.stop);
  }
  // The walk crosses the test binary, libstdc++/gtest and libc at least.
  EXPECT_GE(tight.stats().cfi_released, 2u);
  EXPECT_LT(tight.stats().cfi_bytes, roomy.stats().cfi_bytes + 1);
}

// The address of a function of this process's vDSO, from its .dynsym; 0
// when there is none.
uint64_t VdsoFunction(const char* name) {
  const uint64_t base = getauxval(AT_SYSINFO_EHDR);
  if (base == 0) return 0;
  uint64_t size = 0;
  std::ifstream maps("/proc/self/maps");
  for (std::string line; std::getline(maps, line) && size == 0;) {
    if (line.find("[vdso]") == std::string::npos) continue;
    const uint64_t start = std::stoull(line, nullptr, 16);
    if (start == base) size = std::stoull(line.substr(line.find('-') + 1), nullptr, 16) - start;
  }
  if (size == 0) return 0;
  elf_version(EV_CURRENT);
  Elf* elf = elf_memory(reinterpret_cast<char*>(base), size);
  uint64_t found = 0;
  for (Elf_Scn* scn = elf ? elf_nextscn(elf, nullptr) : nullptr; scn && !found; scn = elf_nextscn(elf, scn)) {
    GElf_Shdr shdr;
    if (!gelf_getshdr(scn, &shdr) || shdr.sh_type != SHT_DYNSYM) continue;
    Elf_Data* data = elf_getdata(scn, nullptr);
    for (size_t i = 0; data && i < shdr.sh_size / shdr.sh_entsize; ++i) {
      GElf_Sym sym;
      if (!gelf_getsym(data, static_cast<int>(i), &sym)) break;
      const char* sym_name = elf_strptr(elf, shdr.sh_link, sym.st_name);
      if (sym_name && std::strcmp(sym_name, name) == 0 && sym.st_value != 0) found = base + sym.st_value;
    }
  }
  if (elf) elf_end(elf);
  return found;
}

// A frame in the vDSO is stepped with the vDSO's own unwind tables: arcprof's
// copy of the image is a mapped file to the unwinder, the same one that names
// the frame. The sample is this test's own stack with __vdso_clock_gettime
// called from where Capture took its registers, at its entry (the return
// address on top of the stack).
TEST(Unwinder, StepsOutOfTheVdsoWithItsOwnUnwindTables) {
  if (getpid() != gettid()) GTEST_SKIP() << "needs the main thread's stack";
  const uint64_t entry = VdsoFunction("__vdso_clock_gettime");
  if (entry == 0) GTEST_SKIP() << "this process has no vDSO with __vdso_clock_gettime";
  const uint64_t top = StackTop();
  ASSERT_NE(top, 0u);
  Captured c;
  CaptureDeeper(&c, top, 3);
  AddressSpaces spaces;
  Symbolizer symbolizer(spaces);
  const auto pid = static_cast<uint32_t>(getpid());
  spaces.SnapshotProcess(pid, 1000);
  const std::optional<MappedFile> vdso = spaces.FindMappedFile(pid, entry, 2000);
  ASSERT_TRUE(vdso) << "the vDSO is not a mapped file";
  EXPECT_EQ(vdso->path, "[vdso]");
  EXPECT_GE(vdso->fd, 0);
  EXPECT_EQ(vdso->file_id, 0xfffffffeu);
  EXPECT_TRUE(spaces.FileOpen(vdso->file_id));
  auto space = spaces.MappedFiles(pid, 2000);
  ASSERT_TRUE(space);
  EXPECT_TRUE(std::any_of(space->files.begin(), space->files.end(),
                          [](const MappedFile& f) { return f.path == "[vdso]"; }))
      << "libdwfl would not know the vDSO";
  EXPECT_EQ(symbolizer.ResolveUser(pid, entry, 2000).symbol, "__vdso_clock_gettime");

  Unwinder unwinder(spaces, symbolizer);
  const UnwindResult own = UnwindOwn(unwinder, c);
  ASSERT_GE(own.pcs.size(), 8u);
  Captured in_vdso;
  std::memcpy(in_vdso.regs, c.regs, sizeof(c.regs));
  in_vdso.regs[16] = entry;
  in_vdso.regs[7] = c.regs[7] - 8;
  in_vdso.stack.resize(8);
  std::memcpy(in_vdso.stack.data(), &c.regs[16], 8);  // the return address
  in_vdso.stack.insert(in_vdso.stack.end(), c.stack.begin(), c.stack.end());
  std::vector<uint64_t> want = {entry, c.regs[16]};
  want.insert(want.end(), own.pcs.begin() + 1, own.pcs.end());
  const UnwindResult r = UnwindOwn(unwinder, in_vdso);
  EXPECT_EQ(r.pcs, want);
  EXPECT_EQ(r.stop, own.stop);

  // fp mode's leaf repair takes the same step.
  UnwindInput input;
  input.pid = pid;
  input.tid = static_cast<uint32_t>(gettid());
  input.t_ns = 2000;
  input.regs = in_vdso.regs;
  input.stack = in_vdso.stack.data();
  input.stack_len = in_vdso.stack.size();
  const auto caller = unwinder.LeafCaller(input);
  ASSERT_TRUE(caller);
  EXPECT_EQ(caller->pc, c.regs[16]);
  EXPECT_FALSE(caller->activation);
}

// libc's first lazy PLT entry (after PLT0) in this process, and the address
// where it has pushed its relocation index; {0, 0} when libc's .plt is not
// binutils' lazy layout (jmp *GOT(%rip); push $index; jmp PLT0).
struct PltEntry {
  uint64_t entry = 0;
  uint64_t pushed = 0;
};
PltEntry LibcPltEntry() {
  struct Found {
    std::string path;
    uint64_t bias = 0;
  } found;
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* arg) {
        const std::string name = info->dlpi_name ? info->dlpi_name : "";
        if (name.find("/libc.so.6") == std::string::npos) return 0;
        *static_cast<Found*>(arg) = Found{name, info->dlpi_addr};
        return 1;
      },
      &found);
  if (found.path.empty()) return {};
  elf_version(EV_CURRENT);
  const int fd = open(found.path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return {};
  Elf* elf = elf_begin(fd, ELF_C_READ, nullptr);
  size_t shstrndx = 0;
  uint64_t plt = 0;
  if (elf && elf_getshdrstrndx(elf, &shstrndx) == 0) {
    for (Elf_Scn* scn = elf_nextscn(elf, nullptr); scn; scn = elf_nextscn(elf, scn)) {
      GElf_Shdr shdr;
      const char* name = gelf_getshdr(scn, &shdr) ? elf_strptr(elf, shstrndx, shdr.sh_name) : nullptr;
      if (name && std::strcmp(name, ".plt") == 0 && shdr.sh_size >= 32) plt = shdr.sh_addr;
    }
  }
  if (elf) elf_end(elf);
  close(fd);
  if (plt == 0) return {};
  const uint64_t entry = found.bias + plt + 16;
  const auto* code = reinterpret_cast<const uint8_t*>(entry);
  if (code[0] != 0xff || code[1] != 0x25 || code[6] != 0x68) return {};
  return {entry, entry + 11};
}

// A sample in a PLT stub (a leaf there is common: every call into a shared
// library passes one) is stepped with the cached rules: the stub's CFA
// expression (rsp + 8, or + 16 once the stub has pushed its relocation index)
// is resolved for its address, not left to libdwfl. The stub is libc's, called
// from where Capture took its registers: at its entry, and after its push.
TEST(Unwinder, StepsOutOfAPltStubWithCachedRules) {
  if (getpid() != gettid()) GTEST_SKIP() << "needs the main thread's stack";
  const PltEntry plt = LibcPltEntry();
  if (plt.entry == 0) GTEST_SKIP() << "libc's .plt is not binutils' lazy layout (jmp *GOT; push; jmp)";
  const uint64_t top = StackTop();
  ASSERT_NE(top, 0u);
  Captured c;
  CaptureDeeper(&c, top, 3);
  AddressSpaces spaces;
  Symbolizer symbolizer(spaces);
  spaces.SnapshotProcess(static_cast<uint32_t>(getpid()), 1000);
  Unwinder unwinder(spaces, symbolizer);
  const UnwindResult own = UnwindOwn(unwinder, c);
  ASSERT_GE(own.pcs.size(), 8u);
  for (const bool pushed : {false, true}) {
    Captured in_plt;
    std::memcpy(in_plt.regs, c.regs, sizeof(c.regs));
    in_plt.regs[16] = pushed ? plt.pushed : plt.entry;
    std::vector<uint64_t> words = {c.regs[16]};  // the return address
    if (pushed) words.insert(words.begin(), 7);  // the relocation index
    in_plt.regs[7] = c.regs[7] - 8 * words.size();
    in_plt.stack.resize(8 * words.size());
    std::memcpy(in_plt.stack.data(), words.data(), in_plt.stack.size());
    in_plt.stack.insert(in_plt.stack.end(), c.stack.begin(), c.stack.end());
    std::vector<uint64_t> want = {in_plt.regs[16], c.regs[16]};
    want.insert(want.end(), own.pcs.begin() + 1, own.pcs.end());
    const UnwindResult r = UnwindOwn(unwinder, in_plt);
    EXPECT_EQ(r.pcs, want) << (pushed ? "after the push" : "at the entry");
    EXPECT_EQ(r.stop, own.stop);
  }
  EXPECT_EQ(unwinder.stats().fast_unwinds, unwinder.stats().unwinds) << "a PLT stub went to libdwfl";
  EXPECT_EQ(unwinder.stats().dwfl_created, 0u);
}

// A frame whose CFA is kept in rbx, as ld.so's lazy-binding trampoline
// (_dl_runtime_resolve) keeps it while it realigns the stack for xsave: the
// walk tracks rbx through the frames below it (here one that saves rbx and
// puts something else in it) and steps it with the cached rules.
extern "C" void arcprof_test_rbx_cfa_frame(void (*fn)(void*), void* arg);
extern "C" void arcprof_test_clobber_rbx(void* arg);
asm(R"(
  .text
  .p2align 4
  .globl arcprof_test_rbx_cfa_frame
  .type arcprof_test_rbx_cfa_frame, @function
arcprof_test_rbx_cfa_frame:
  .cfi_startproc
  push %rbx
  .cfi_def_cfa_offset 16
  .cfi_offset %rbx, -16
  mov %rsp, %rbx
  .cfi_def_cfa_register %rbx
  and $-64, %rsp
  mov %rdi, %rax
  mov %rsi, %rdi
  call *%rax
  mov %rbx, %rsp
  .cfi_def_cfa_register %rsp
  pop %rbx
  .cfi_restore %rbx
  .cfi_def_cfa_offset 8
  ret
  .cfi_endproc
  .size arcprof_test_rbx_cfa_frame, .-arcprof_test_rbx_cfa_frame

  .p2align 4
  .globl arcprof_test_clobber_rbx
  .type arcprof_test_clobber_rbx, @function
arcprof_test_clobber_rbx:
  .cfi_startproc
  push %rbx
  .cfi_def_cfa_offset 16
  .cfi_offset %rbx, -16
  mov $0x5a5a5a5a, %ebx
  call arcprof_test_capture_with_rbx@PLT
  pop %rbx
  .cfi_restore %rbx
  .cfi_def_cfa_offset 8
  ret
  .cfi_endproc
  .size arcprof_test_clobber_rbx, .-arcprof_test_clobber_rbx
)");

Captured with_rbx;
uint64_t with_rbx_top = 0;

extern "C" __attribute__((noinline, used)) void arcprof_test_capture_with_rbx(void*) {
  uint64_t rip, rsp, rbp, rbx;
  asm volatile("mov %%rbx, %3\n\tlea 0(%%rip), %0\n\tmov %%rsp, %1\n\tmov %%rbp, %2"
               : "=r"(rip), "=r"(rsp), "=r"(rbp), "=r"(rbx));
  with_rbx.regs[16] = rip;
  with_rbx.regs[7] = rsp;
  with_rbx.regs[6] = rbp;
  with_rbx.regs[3] = rbx;
  const uint64_t len = std::min<uint64_t>(32768, with_rbx_top > rsp ? with_rbx_top - rsp : 0);
  with_rbx.stack.resize(len);
  std::memcpy(with_rbx.stack.data(), reinterpret_cast<const void*>(rsp), len);
  asm volatile("" ::: "memory");
}

TEST(Unwinder, StepsAFrameWhoseCfaIsInRbx) {
  if (getpid() != gettid()) GTEST_SKIP() << "needs the main thread's stack";
  with_rbx_top = StackTop();
  ASSERT_NE(with_rbx_top, 0u);
  arcprof_test_rbx_cfa_frame(arcprof_test_clobber_rbx, nullptr);
  Captured here;
  Capture(&here, with_rbx_top);

  AddressSpaces spaces;
  Symbolizer symbolizer(spaces);
  spaces.SnapshotProcess(static_cast<uint32_t>(getpid()), 1000);
  Unwinder unwinder(spaces, symbolizer);
  const UnwindResult r = UnwindOwn(unwinder, with_rbx);
  EXPECT_EQ(unwinder.stats().fast_unwinds, 1u) << "the rbx frame went to libdwfl";
  EXPECT_EQ(unwinder.stats().dwfl_created, 0u);
  // The capture, arcprof_test_clobber_rbx, arcprof_test_rbx_cfa_frame.
  const auto frame = reinterpret_cast<uint64_t>(&arcprof_test_rbx_cfa_frame);
  ASSERT_GE(r.pcs.size(), 4u);
  EXPECT_GT(r.pcs[2], frame);
  EXPECT_LT(r.pcs[2], frame + 64) << "the third frame is not the rbx frame";
  // Below it, this test's callers, as a walk from here sees them.
  const UnwindResult own = UnwindOwn(unwinder, here);
  ASSERT_GE(own.pcs.size(), 4u);
  EXPECT_EQ(r.stop, own.stop);
  const std::vector<uint64_t> outer(own.pcs.begin() + 2, own.pcs.end());
  ASSERT_GE(r.pcs.size(), outer.size() + 4);
  EXPECT_TRUE(std::equal(outer.rbegin(), outer.rend(), r.pcs.rbegin()))
      << "the callers of this test differ after the rbx frame";
}

// A walk through a real signal frame: the handler of a signal this test
// raises captures its registers and stack, and the walk goes from it through
// glibc's trampoline (__restore_rt, whose CFI reads the interrupted registers
// from the kernel's signal frame) into the code the signal interrupted and on
// to this test's callers, with the cached rules alone (no libdwfl). The
// trampoline and the interrupted frame resume at their pc: marked as such.
Captured in_handler;
uint64_t handler_top = 0;

__attribute__((noinline)) void CapturingHandler(int) {
  CaptureDeeper(&in_handler, handler_top, 1);
  asm volatile("" ::: "memory");  // not a tail call: the handler keeps its frame
}

TEST(Unwinder, WalksThroughASignalFrame) {
  if (getpid() != gettid()) GTEST_SKIP() << "needs the main thread's stack";
  handler_top = StackTop();
  ASSERT_NE(handler_top, 0u);
  struct sigaction sa = {}, old = {};
  sa.sa_handler = CapturingHandler;
  sigemptyset(&sa.sa_mask);
  ASSERT_EQ(sigaction(SIGUSR2, &sa, &old), 0);
  struct sigaction installed = {};
  ASSERT_EQ(sigaction(SIGUSR2, nullptr, &installed), 0);
  const auto restorer = reinterpret_cast<uint64_t>(installed.sa_restorer);
  ASSERT_NE(restorer, 0u) << "glibc installs its trampoline as the restorer";
  raise(SIGUSR2);
  sigaction(SIGUSR2, &old, nullptr);
  Captured here;
  Capture(&here, handler_top);

  AddressSpaces spaces;
  Symbolizer symbolizer(spaces);
  const auto pid = static_cast<uint32_t>(getpid());
  spaces.SnapshotProcess(pid, 1000);
  Unwinder unwinder(spaces, symbolizer);
  const UnwindResult r = UnwindOwn(unwinder, in_handler);
  EXPECT_EQ(unwinder.stats().fast_unwinds, 1u) << "the signal frame went to libdwfl";
  const auto at = std::find(r.pcs.begin(), r.pcs.end(), restorer);
  ASSERT_NE(at, r.pcs.end()) << "no trampoline in the walk";
  const size_t k = static_cast<size_t>(at - r.pcs.begin());
  // Capture, CaptureDeeper x2, the handler, the trampoline.
  EXPECT_GE(k, 4u);
  ASSERT_GT(r.pcs.size(), k + 1);
  EXPECT_TRUE(r.IsActivation(k)) << "the trampoline resumes at its first byte";
  EXPECT_TRUE(r.IsActivation(k + 1)) << "the interrupted frame resumes at its pc";
  EXPECT_EQ(r.LookupPc(k), restorer);
  for (size_t i = 1; i < r.pcs.size(); ++i) {
    if (i != k && i != k + 1) EXPECT_FALSE(r.IsActivation(i)) << i;
  }
  // Below the interrupted libc frames, the walk goes on through this test's
  // callers to the end, as a walk from here does (from gtest's call of the
  // test body on: the test calls raise and Capture from two places).
  const UnwindResult own = UnwindOwn(unwinder, here);
  ASSERT_GE(own.pcs.size(), 4u);
  EXPECT_EQ(r.stop, own.stop);
  const std::vector<uint64_t> outer(own.pcs.begin() + 2, own.pcs.end());
  ASSERT_GE(r.pcs.size(), outer.size());
  EXPECT_TRUE(std::equal(outer.rbegin(), outer.rend(), r.pcs.rbegin()))
      << "the callers of this test differ after the signal frame";
  // With libc's symbols at hand (libc6-dbg), the trampoline has its name.
  const SymbolizedFrame named = symbolizer.ResolveUser(pid, r.LookupPc(k), 2000);
  if (!named.symbol.empty()) EXPECT_EQ(named.symbol, "__restore_rt");
}

}  // namespace
}  // namespace arcprof
