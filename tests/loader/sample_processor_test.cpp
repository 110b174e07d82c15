// Hermetic tests of the central recording path: DecodeStackSample and the
// SampleProcessor with its windows. No root, no BPF: records are built here,
// and the symbolizer sees a fake process whose address space maps this test
// binary where it really is (so its own functions resolve by name), plus a
// fake kallsyms.
#include <gtest/gtest.h>
#include <limits.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "events.h"
#include "loader/offcpu_source.h"
#include "tests/loader/offcpu_records_only.h"
#include "loader/sample_processor.h"
#include "loader/stack_sample.h"
#include "symbolize/symbolizer.h"
#include "tests/layer_names.h"

extern "C" __attribute__((noinline)) int ArcprofTestLeaf(int x) { return x * 3 + 1; }
extern "C" __attribute__((noinline)) int ArcprofTestCaller(int x) { return ArcprofTestLeaf(x) + 2; }
extern "C" __attribute__((noinline)) int ArcprofTestOther(int x) { return ArcprofTestLeaf(x) - 2; }

namespace arcprof {
namespace {

constexpr uint32_t kPid = 4242;
constexpr uint64_t kKernelBase = 0xffffffff81000000ull;

// A sample_event record as the BPF program writes it, 8-byte aligned.
std::vector<uint64_t> MakeRecord(uint32_t pid, uint32_t tid, const std::string& comm,
                                 const std::vector<uint64_t>& kernel_leaf_first,
                                 const std::vector<uint64_t>& user_leaf_first, uint16_t flags = 0,
                                 uint64_t t_ns = 1000) {
  sample_event e{};
  e.timestamp_ns = t_ns;
  e.pid = pid;
  e.tid = tid;
  e.cpu = 1;
  e.flags = flags;
  e.kstack_len = static_cast<uint8_t>(kernel_leaf_first.size());
  e.ustack_len = static_cast<uint8_t>(user_leaf_first.size());
  memcpy(e.comm, comm.data(), std::min(comm.size(), sizeof(e.comm)));
  std::vector<uint64_t> out(sizeof(e) / 8);
  memcpy(out.data(), &e, sizeof(e));
  out.insert(out.end(), kernel_leaf_first.begin(), kernel_leaf_first.end());
  out.insert(out.end(), user_leaf_first.begin(), user_leaf_first.end());
  return out;
}

size_t Bytes(const std::vector<uint64_t>& r) { return r.size() * sizeof(uint64_t); }

TEST(DecodeStackSample, SplitsHeaderKernelAndUserFrames) {
  auto r = MakeRecord(7, 8, "worker", {0x11, 0x12}, {0x21, 0x22, 0x23}, ARCPROF_SAMPLE_USER_MODE, 99);
  auto s = DecodeStackSample(r.data(), Bytes(r));
  ASSERT_TRUE(s);
  EXPECT_EQ(s->pid, 7u);
  EXPECT_EQ(s->tid, 8u);
  EXPECT_EQ(s->cpu, 1u);
  EXPECT_EQ(s->timestamp_ns, 99u);
  EXPECT_EQ(s->comm, "worker");
  EXPECT_EQ(std::vector<uint64_t>(s->kernel_pcs.begin(), s->kernel_pcs.end()),
            (std::vector<uint64_t>{0x11, 0x12}));
  EXPECT_EQ(std::vector<uint64_t>(s->user_pcs.begin(), s->user_pcs.end()),
            (std::vector<uint64_t>{0x21, 0x22, 0x23}));
  EXPECT_FALSE(s->has_regs());
}

TEST(DecodeStackSample, SixteenByteNameHasNoTerminator) {
  auto r = MakeRecord(7, 8, "exactly16bytes!!", {}, {});
  auto s = DecodeStackSample(r.data(), Bytes(r));
  ASSERT_TRUE(s);
  EXPECT_EQ(s->comm, "exactly16bytes!!");
}

TEST(DecodeStackSample, RegisterBlockAndStackCopy) {
  auto r = MakeRecord(7, 8, "w", {}, {0x21}, ARCPROF_SAMPLE_HAS_REGS);
  user_regs_block regs{};
  for (int i = 0; i < ARCPROF_USER_REGS; ++i) regs.regs[i] = 100 + i;
  regs.stack_len = 16;
  std::vector<uint64_t> block(sizeof(regs) / 8);
  memcpy(block.data(), &regs, sizeof(regs));
  r.insert(r.end(), block.begin(), block.end());
  r.push_back(0xaaaa);
  r.push_back(0xbbbb);
  auto s = DecodeStackSample(r.data(), Bytes(r));
  ASSERT_TRUE(s);
  ASSERT_TRUE(s->has_regs());
  EXPECT_EQ(s->user_regs.size(), size_t{ARCPROF_USER_REGS});
  EXPECT_EQ(s->user_regs[7], 107u);
  ASSERT_EQ(s->user_stack.size(), 16u);
  uint64_t first;
  memcpy(&first, s->user_stack.data(), 8);
  EXPECT_EQ(first, 0xaaaau);

  // A stack copy longer than the record is malformed.
  r.pop_back();
  EXPECT_FALSE(DecodeStackSample(r.data(), Bytes(r)));
  // The idle task's register block is ignored.
  auto idle = MakeRecord(0, 0, "swapper/0", {0x11}, {}, ARCPROF_SAMPLE_HAS_REGS);
  auto s0 = DecodeStackSample(idle.data(), Bytes(idle));
  ASSERT_TRUE(s0);
  EXPECT_FALSE(s0->has_regs());
}

TEST(DecodeStackSample, RejectsMalformedRecords) {
  auto r = MakeRecord(7, 8, "w", {0x11}, {0x21, 0x22});
  EXPECT_FALSE(DecodeStackSample(r.data(), sizeof(sample_event) - 1));
  EXPECT_FALSE(DecodeStackSample(r.data(), Bytes(r) - 8));  // frames cut short
  EXPECT_FALSE(DecodeStackSample(nullptr, 64));
  auto* e = reinterpret_cast<sample_event*>(r.data());
  e->kstack_len = ARCPROF_MAX_STACK + 1;
  EXPECT_FALSE(DecodeStackSample(r.data(), Bytes(r)));
  // Unaligned data: not a ring-buffer record.
  std::vector<uint8_t> bytes(Bytes(r) + 1);
  EXPECT_FALSE(DecodeStackSample(bytes.data() + 1, Bytes(r)));
  // Register flag without a block.
  auto flagged = MakeRecord(7, 8, "w", {}, {0x21}, ARCPROF_SAMPLE_HAS_REGS);
  EXPECT_FALSE(DecodeStackSample(flagged.data(), Bytes(flagged)));
}

// A symbolizer whose process kPid maps this test binary's code where it is
// mapped in this process, and whose kernel has two functions.
class FakeMachine {
 public:
  FakeMachine() {
    dir_ = std::filesystem::temp_directory_path() /
           ("arcprof-sp-test-" + std::to_string(getpid()));
    std::filesystem::create_directories(dir_ / "proc");
    {
      std::ofstream k(dir_ / "kallsyms");
      k << std::hex << kKernelBase << " T fake_kernel_entry\n"
        << kKernelBase + 0x1000 << " T fake_kernel_work\n"
        << kKernelBase + 0x2000 << " T __schedule\n"
        << kKernelBase + 0x3000 << " T irqentry_exit_to_user_mode\n"
        << kKernelBase + 0x4000 << " T asm_sysvec_apic_timer_interrupt\n"
        << kKernelBase + 0x5000 << " T do_syscall_64\n"
        << kKernelBase + 0x6000 << " T fake_kernel_end\n";
    }
    AddressSpacesOptions spaces_options;
    spaces_options.proc_root = (dir_ / "proc").string();
    spaces_ = std::make_unique<AddressSpaces>(spaces_options);
    SymbolizerOptions options;
    options.kallsyms_path = (dir_ / "kallsyms").string();
    options.debug_dirs = {};
    symbolizer_ = std::make_unique<Symbolizer>(*spaces_, options);
    spaces_->OnExec(kPid, 1, "fakeproc");
    const std::string exe = std::filesystem::canonical("/proc/self/exe").string();
    std::ifstream maps("/proc/self/maps");
    std::string line;
    while (std::getline(maps, line)) {
      std::istringstream in(line);
      std::string range, perms, offset, dev, path;
      uint64_t inode = 0;
      in >> range >> perms >> offset >> dev >> inode >> path;
      if (path != exe) continue;
      MappingEvent m;
      m.start = std::stoull(range.substr(0, range.find('-')), nullptr, 16);
      m.len = std::stoull(range.substr(range.find('-') + 1), nullptr, 16) - m.start;
      m.pgoff = std::stoull(offset, nullptr, 16);
      m.prot = (perms[0] == 'r' ? PROT_READ : 0) | (perms[1] == 'w' ? PROT_WRITE : 0) |
               (perms[2] == 'x' ? PROT_EXEC : 0);
      m.flags = MAP_PRIVATE;
      m.path = path;
      spaces_->OnMmap(kPid, 1, m);
    }
  }
  ~FakeMachine() { std::filesystem::remove_all(dir_); }
  Symbolizer& symbolizer() { return *symbolizer_; }

 private:
  std::filesystem::path dir_;
  std::unique_ptr<AddressSpaces> spaces_;
  std::unique_ptr<Symbolizer> symbolizer_;
};

uint64_t Addr(int (*f)(int)) { return reinterpret_cast<uint64_t>(f); }

// Root-first frame names of every leaf with samples, "a;b;c" -> n.
std::map<std::string, uint64_t> Folded(const Profile& p) {
  std::map<std::string, uint64_t> out;
  for (size_t t = 0; t < p.threads.size(); ++t) {
    const auto& nodes = p.threads[t].tree.nodes();
    for (size_t i = 1; i < nodes.size(); ++i) {
      if (nodes[i].n == 0) continue;
      std::vector<std::string> names;
      for (uint32_t n = static_cast<uint32_t>(i); n != 0; n = nodes[n].parent) {
        names.insert(names.begin(), p.frames.at(nodes[n].frame).symbol);
      }
      std::string key = p.threads[t].comm;
      for (const std::string& s : names) key += ";" + s;
      out[key] += nodes[i].n;
    }
  }
  return out;
}

TEST(SampleProcessor, FoldsNamedUserAndKernelFramesRootFirst) {
  FakeMachine machine;
  SampleProcessor processor(machine.symbolizer());
  // Return addresses after the leaf: +1 so that ip-1 lands inside the caller.
  auto r = MakeRecord(kPid, kPid + 1, "busy", {kKernelBase + 0x1010, kKernelBase + 0x20},
                      {Addr(ArcprofTestLeaf) + 4, Addr(ArcprofTestCaller) + 5});
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(processor.Process(r.data(), Bytes(r)));
  Profile w = processor.TakeWindow();
  auto folded = Folded(w);
  ASSERT_EQ(folded.size(), 1u) << ::testing::PrintToString(folded);
  EXPECT_EQ(folded.begin()->first,
            "busy;ArcprofTestCaller;ArcprofTestLeaf;fake_kernel_entry;fake_kernel_work");
  EXPECT_EQ(folded.begin()->second, 3u);
  EXPECT_EQ(w.counters.at("samples_total"), 3);
  ASSERT_EQ(w.threads.size(), 1u);
  EXPECT_EQ(w.threads[0].pid, kPid);
  EXPECT_EQ(w.threads[0].tid, kPid + 1);
  EXPECT_EQ(w.threads[0].process_comm, "fakeproc");
}

TEST(SampleProcessor, WindowsHoldOnlyTheirOwnSamplesAndFrames) {
  FakeMachine machine;
  SampleProcessor processor(machine.symbolizer());
  auto a = MakeRecord(kPid, kPid, "t", {}, {Addr(ArcprofTestLeaf) + 2, Addr(ArcprofTestCaller) + 5});
  auto b = MakeRecord(kPid, kPid, "t", {}, {Addr(ArcprofTestLeaf) + 2, Addr(ArcprofTestOther) + 5});
  auto bad = MakeRecord(kPid, kPid, "t", {}, {0x1});
  for (int i = 0; i < 5; ++i) processor.Process(a.data(), Bytes(a));
  EXPECT_FALSE(processor.Process(bad.data(), 10));
  Profile w1 = processor.TakeWindow();
  // The same stack again: the stack cache of window 1 must not count into
  // window 1's (handed over) tree, nor into a stale index of window 2.
  for (int i = 0; i < 2; ++i) processor.Process(a.data(), Bytes(a));
  for (int i = 0; i < 4; ++i) processor.Process(b.data(), Bytes(b));
  Profile w2 = processor.TakeWindow();
  Profile w3 = processor.TakeWindow();

  EXPECT_EQ(Folded(w1), (std::map<std::string, uint64_t>{{"t;ArcprofTestCaller;ArcprofTestLeaf", 5}}));
  EXPECT_EQ(Folded(w2), (std::map<std::string, uint64_t>{{"t;ArcprofTestCaller;ArcprofTestLeaf", 2},
                                                         {"t;ArcprofTestOther;ArcprofTestLeaf", 4}}));
  EXPECT_TRUE(Folded(w3).empty());
  EXPECT_EQ(w1.counters.at("samples_total"), 5);
  EXPECT_EQ(w1.counters.at("samples_malformed"), 1);
  EXPECT_EQ(w2.counters.at("samples_total"), 6);
  EXPECT_EQ(w2.counters.at("samples_malformed"), 0);
  EXPECT_EQ(w3.counters.at("samples_total"), 0);
  // Window 1 never saw ArcprofTestOther; window 3 holds no frames at all.
  for (const FrameRecord& f : w1.frames.all()) EXPECT_NE(f.symbol, "ArcprofTestOther");
  EXPECT_EQ(w1.frames.size(), 2u);
  EXPECT_EQ(w2.frames.size(), 3u);
  EXPECT_EQ(w3.frames.size(), 0u);
  EXPECT_TRUE(w3.threads.empty());
  EXPECT_EQ(processor.samples(), 11u);
  EXPECT_EQ(processor.malformed(), 1u);
}

// A daemon releases the symbolizer's interned names between windows
// (Symbolizer::ReleaseNames right after TakeWindow): the next window's
// frames are named as before, none from a released name.
TEST(SampleProcessor, NamesReleasedBetweenWindowsNameTheNextWindowAlike) {
  FakeMachine machine;
  SampleProcessor processor(machine.symbolizer());
  auto a = MakeRecord(kPid, kPid, "t", {kKernelBase + 0x1010}, {Addr(ArcprofTestLeaf) + 2, Addr(ArcprofTestCaller) + 5});
  auto b = MakeRecord(kPid, kPid, "t", {}, {Addr(ArcprofTestLeaf) + 2, Addr(ArcprofTestOther) + 5});
  for (int i = 0; i < 3; ++i) processor.Process(a.data(), Bytes(a));
  Profile w1 = processor.TakeWindow();
  EXPECT_GT(machine.symbolizer().ReleaseNames(0), 0u);
  for (int i = 0; i < 2; ++i) processor.Process(a.data(), Bytes(a));
  processor.Process(b.data(), Bytes(b));
  Profile w2 = processor.TakeWindow();
  EXPECT_EQ(Folded(w1), (std::map<std::string, uint64_t>{{"t;ArcprofTestCaller;ArcprofTestLeaf;fake_kernel_work", 3}}));
  EXPECT_EQ(Folded(w2), (std::map<std::string, uint64_t>{{"t;ArcprofTestCaller;ArcprofTestLeaf;fake_kernel_work", 2},
                                                         {"t;ArcprofTestOther;ArcprofTestLeaf", 1}}));
}

// An off-CPU record as the sched_switch program writes it: the header, its
// key and reason, then the frames.
std::vector<uint64_t> MakeOffCpuRecord(uint64_t key, uint32_t state, int32_t syscall,
                                       const std::vector<uint64_t>& kernel_leaf_first,
                                       const std::vector<uint64_t>& user_leaf_first) {
  auto r = MakeRecord(kPid, kPid, "t", kernel_leaf_first, user_leaf_first, ARCPROF_SAMPLE_SOURCE);
  source_info info{};
  info.key = key;
  info.source = ARCPROF_SOURCE_OFFCPU;
  info.arg = syscall;
  info.values[0] = state;
  std::vector<uint64_t> words(sizeof(info) / 8);
  memcpy(words.data(), &info, sizeof(info));
  r.insert(r.begin() + sizeof(sample_event) / 8, words.begin(), words.end());
  return r;
}

// A thread preempted on its way back to user mode keeps its user stack and
// the reason, not the kernel's return path (the same for every preemption);
// preempted inside a system call, or blocked, it keeps its kernel frames.
TEST(SampleProcessor, PreemptionOnTheWayBackToUserKeepsNoKernelFrames) {
  FakeMachine machine;
  SampleProcessor processor(machine.symbolizer());
  OffCpuRecordsOnly source;
  processor.Route(ARCPROF_SOURCE_OFFCPU, &source);
  const std::vector<uint64_t> user = {Addr(ArcprofTestLeaf) + 2, Addr(ArcprofTestCaller) + 5};
  // Leaf first: __schedule <- irqentry_exit_to_user_mode <- the interrupt entry.
  const std::vector<uint64_t> back_to_user = {kKernelBase + 0x2010, kKernelBase + 0x3010, kKernelBase + 0x4010};
  const std::vector<uint64_t> in_syscall = {kKernelBase + 0x2010, kKernelBase + 0x1010, kKernelBase + 0x5010};
  auto a = MakeOffCpuRecord(1, 0, -1, back_to_user, user);
  auto b = MakeOffCpuRecord(2, 0, 0, in_syscall, user);
  auto c = MakeOffCpuRecord(3, 1, 35, back_to_user, user);  // sleeping: not a preemption
  for (auto* r : {&a, &b, &c}) ASSERT_TRUE(processor.Process(r->data(), Bytes(*r)));
  EXPECT_TRUE(AddOffCpuTime(processor, 1, 1000));
  EXPECT_TRUE(AddOffCpuTime(processor, 2, 2000));
  EXPECT_TRUE(AddOffCpuTime(processor, 3, 3000));
  Profile w = processor.TakeWindow();
  // Every path that ends in an off-CPU reason, root first.
  std::map<std::string, uint64_t> offcpu;
  for (const auto& t : w.threads) {
    const auto& nodes = t.tree.nodes();
    for (size_t i = 1; i < nodes.size(); ++i) {
      if (!w.frames.at(nodes[i].frame).symbol.starts_with("off-cpu:")) continue;
      std::string key;
      for (uint32_t n = static_cast<uint32_t>(i); n != 0; n = nodes[n].parent) {
        key = w.frames.at(nodes[n].frame).symbol + (key.empty() ? "" : ";" + key);
      }
      ++offcpu[key];
    }
  }
  EXPECT_EQ(offcpu, (std::map<std::string, uint64_t>{
                        {"ArcprofTestCaller;ArcprofTestLeaf;off-cpu:preempted", 1},
                        {"ArcprofTestCaller;ArcprofTestLeaf;do_syscall_64;fake_kernel_work;__schedule;off-cpu:preempted", 1},
                        {"ArcprofTestCaller;ArcprofTestLeaf;asm_sysvec_apic_timer_interrupt;irqentry_exit_to_user_mode;"
                         "__schedule;off-cpu:sleep", 1}}))
      << ::testing::PrintToString(offcpu);
}

// A value source's kept stacks are added at the window's end in no
// particular order. A program that renames itself right after exec can be
// switched out under its exec name first: its record takes the name of the
// stack seen latest, whichever is added first.
TEST(SampleProcessor, KeptStacksNameTheirThreadByTheLatestSeen) {
  for (const bool later_first : {false, true}) {
    FakeMachine machine;
    SampleProcessor processor(machine.symbolizer());
    auto early = MakeRecord(kPid, kPid, "exe", {}, {Addr(ArcprofTestLeaf) + 2, Addr(ArcprofTestCaller) + 5}, 0,
                            1000);
    auto late = MakeRecord(kPid, kPid, "renamed", {}, {Addr(ArcprofTestLeaf) + 2, Addr(ArcprofTestOther) + 5}, 0,
                           5000);
    auto e1 = DecodeStackSample(early.data(), Bytes(early));
    auto e2 = DecodeStackSample(late.data(), Bytes(late));
    ASSERT_TRUE(e1 && e2);
    processor.Keep(ARCPROF_SOURCE_OFFCPU, 1, processor.Stack(*e1), {});
    processor.Keep(ARCPROF_SOURCE_OFFCPU, 2, processor.Stack(*e2), {});
    const SourceValue value{model::kOffCpuNs, 10};
    for (uint64_t key : later_first ? std::vector<uint64_t>{2, 1} : std::vector<uint64_t>{1, 2}) {
      ASSERT_TRUE(processor.Add(ARCPROF_SOURCE_OFFCPU, key, {&value, 1}));
    }
    Profile w = processor.TakeWindow();
    ASSERT_EQ(w.threads.size(), 1u);
    EXPECT_EQ(w.threads[0].comm, "renamed") << (later_first ? "later added first" : "earlier added first");
  }
}

TEST(SampleProcessor, UnknownProcessFramesAreCountedNotCached) {
  FakeMachine machine;
  SampleProcessor processor(machine.symbolizer());
  auto r = MakeRecord(999, 999, "ghost", {}, {0x7000'0000'1000});
  processor.Process(r.data(), Bytes(r));
  processor.Process(r.data(), Bytes(r));
  Profile w = processor.TakeWindow();
  int64_t unknown = 0;
  for (const auto& [name, value] : w.counters) {
    if (name.rfind("unknown_frames.", 0) == 0) unknown += value;
  }
  EXPECT_EQ(unknown, 2);
  EXPECT_EQ(w.counters.at("stack_cache_hits"), 0);
  EXPECT_EQ(w.total_samples(), 2u);
}

}  // namespace
}  // namespace arcprof
