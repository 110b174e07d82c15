// Unit tests of the JIT symbol pieces: the jitdump and perf-map parsers, the
// time-versioned index, and the per-process source tailing real files in a
// /proc-shaped directory tree.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <random>

#include "symbolize/jit_index.h"
#include "symbolize/jit_method_table.h"
#include "symbolize/jit_process_source.h"
#include "symbolize/jitdump.h"
#include "symbolize/perf_map.h"
#include "symbolize/symbolizer.h"
#include "tests/java/jit_test_util.h"
#include "tests/layer_names.h"

namespace arcprof::testing {
namespace {

// ---- jitdump parser ----

TEST(JitdumpParse, HeaderAndLoads) {
  const std::string file = JitdumpHeader(77) + CodeLoad(100, 0x1000, 0x40, 1, "A.run") +
                           CodeLoad(90, 0x2000, 0x10, 2, "B.go", /*with_code=*/false) +
                           CodeMove(120, 0x1000, 0x3000, 0x40, 1);
  auto h = jitdump::ParseFileHeader(file);
  ASSERT_TRUE(h.ok()) << h.error().message;
  EXPECT_EQ(h->pid, 77u);
  EXPECT_EQ(h->header_size, 40u);
  EXPECT_FALSE(h->swapped);
  jitdump::Records r;
  auto p = jitdump::ParseRecords(std::string_view(file).substr(40), false, &r);
  EXPECT_FALSE(p.corrupt);
  EXPECT_EQ(p.consumed, file.size() - 40);
  ASSERT_EQ(r.loads.size(), 2u);
  EXPECT_EQ(r.loads[0].name, "A.run");
  EXPECT_EQ(r.loads[0].addr, 0x1000u);
  EXPECT_EQ(r.loads[0].size, 0x40u);
  EXPECT_EQ(r.loads[0].t_ns, 100u);
  EXPECT_EQ(r.loads[1].name, "B.go");  // symbol only, no code bytes
  ASSERT_EQ(r.moves.size(), 1u);
  EXPECT_EQ(r.moves[0].new_addr, 0x3000u);
  EXPECT_EQ(r.moves[0].index, 1u);
}

TEST(JitdumpParse, TruncatedTailIsNotCorruption) {
  const std::string rec = CodeLoad(100, 0x1000, 0x40, 1, "A.run");
  const std::string two = rec + CodeLoad(101, 0x2000, 0x40, 2, "B.run");
  for (size_t cut = rec.size(); cut < two.size(); ++cut) {
    jitdump::Records r;
    auto p = jitdump::ParseRecords(std::string_view(two).substr(0, cut), false, &r);
    EXPECT_FALSE(p.corrupt) << cut;
    EXPECT_EQ(p.consumed, rec.size()) << cut;
    EXPECT_EQ(r.loads.size(), 1u);
  }
}

TEST(JitdumpParse, RejectsBadHeadersAndRecords) {
  EXPECT_FALSE(jitdump::ParseFileHeader("short").ok());
  std::string bad = JitdumpHeader(1);
  bad[0] = 'X';
  EXPECT_FALSE(jitdump::ParseFileHeader(bad).ok());
  EXPECT_FALSE(jitdump::ParseFileHeader(JitdumpHeader(1, /*flags=*/4)).ok());
  auto tsc = jitdump::ParseFileHeader(JitdumpHeader(1, /*flags=*/1));
  ASSERT_FALSE(tsc.ok());
  EXPECT_NE(tsc.error().message.find("JITDUMP_USE_ARCH_TIMESTAMP"), std::string::npos);

  std::string tiny = CodeLoad(1, 0x1000, 4, 1, "x");
  uint32_t size = 8;
  memcpy(tiny.data() + 4, &size, 4);
  jitdump::Records r;
  EXPECT_TRUE(jitdump::ParseRecords(tiny, false, &r).corrupt);

  std::string no_nul = CodeLoad(1, 0x1000, 0, 1, "name");
  no_nul.pop_back();  // drop the NUL, keep total_size consistent
  size = static_cast<uint32_t>(no_nul.size());
  memcpy(no_nul.data() + 4, &size, 4);
  EXPECT_TRUE(jitdump::ParseRecords(no_nul, false, &r).corrupt);

  std::string wrong_code = CodeLoad(1, 0x1000, 0x40, 1, "n");
  wrong_code.resize(wrong_code.size() - 20);
  size = static_cast<uint32_t>(wrong_code.size());
  memcpy(wrong_code.data() + 4, &size, 4);
  EXPECT_TRUE(jitdump::ParseRecords(wrong_code, false, &r).corrupt);
}

TEST(JitdumpParse, SwappedByteOrder) {
  std::string file = JitdumpHeader(5);
  uint32_t magic = jitdump::kMagicSwapped;
  memcpy(file.data(), &magic, 4);
  // Every other header field byte-swapped as the other-endian writer would.
  uint32_t v = __builtin_bswap32(1);
  memcpy(file.data() + 4, &v, 4);
  v = __builtin_bswap32(40);
  memcpy(file.data() + 8, &v, 4);
  v = __builtin_bswap32(5);
  memcpy(file.data() + 20, &v, 4);
  uint64_t flags = 0;
  memcpy(file.data() + 32, &flags, 8);
  auto h = jitdump::ParseFileHeader(file);
  ASSERT_TRUE(h.ok()) << h.error().message;
  EXPECT_TRUE(h->swapped);
  EXPECT_EQ(h->pid, 5u);
}

TEST(SideFileParse, AllRecordKinds) {
  const std::string file = SideHeader() + SideVmInfo(1, 9, jitdump::kVmPreserveFramePointer, "HotSpot 17") +
                           SideThreadName(2, 10, "main") + SideUnload(3, 0x1000, 4) +
                           SideInline(4, 0x1000, 4, {"Outer.run", "Mid.call", "Leaf.get"},
                                      {{0x10, {2, 1, 0}}, {0x20, {0}}});
  auto off = jitdump::ParseSideHeader(file);
  ASSERT_TRUE(off.ok());
  jitdump::SideRecords r;
  auto p = jitdump::ParseSideRecords(std::string_view(file).substr(*off), &r);
  EXPECT_FALSE(p.corrupt) << p.error;
  ASSERT_EQ(r.vm.size(), 1u);
  EXPECT_EQ(r.vm[0].flags, jitdump::kVmPreserveFramePointer);
  EXPECT_EQ(r.vm[0].vm, "HotSpot 17");
  ASSERT_EQ(r.threads.size(), 1u);
  EXPECT_EQ(r.threads[0].tid, 10u);
  EXPECT_EQ(r.threads[0].name, "main");
  ASSERT_EQ(r.unloads.size(), 1u);
  EXPECT_EQ(r.unloads[0].index, 4u);
  ASSERT_EQ(r.inlines.size(), 1u);
  jitdump::InlineInfo inl;
  ASSERT_TRUE(jitdump::DecodeInline(r.inlines[0].record, &inl));
  ASSERT_EQ(inl.entries.size(), 2u);
  EXPECT_EQ(inl.entries[0].chain, (std::vector<uint32_t>{2, 1, 0}));
  EXPECT_EQ(inl.names[2], "Leaf.get");
}

TEST(SideFileParse, MethodsAndFrames) {
  const std::string file = SideHeader() + SideMethods(5, {{0x7000, "Split.main"}, {0x7100, "Split.drive"}}) +
                           SideFrame(6, 0x1000, 4, 48, 20);
  jitdump::SideRecords r;
  auto p = jitdump::ParseSideRecords(std::string_view(file).substr(jitdump::kSideHeaderSize), &r);
  EXPECT_FALSE(p.corrupt) << p.error;
  ASSERT_EQ(r.methods.size(), 1u);
  const std::vector<jitdump::MethodName> names = jitdump::MethodNames(r.methods[0]);
  ASSERT_EQ(names.size(), 2u);
  EXPECT_EQ(names[1].method, 0x7100u);
  EXPECT_EQ(names[1].name, "Split.drive");
  EXPECT_EQ(names[1].t_ns, 5u);
  ASSERT_EQ(r.frames.size(), 1u);
  EXPECT_EQ(r.frames[0].frame_size, 48);
  EXPECT_EQ(r.frames[0].frame_complete, 20);
  // Counts beyond the record, unterminated names and absurd frames are corrupt.
  jitdump::SideRecords bad;
  std::string methods = SideMethods(5, {{0x7000, "A.b"}});
  methods[16] = 100;  // count
  EXPECT_TRUE(jitdump::ParseSideRecords(methods, &bad).corrupt);
  methods = SideMethods(5, {{0x7000, "A.b"}});
  methods.back() = 'x';
  EXPECT_TRUE(jitdump::ParseSideRecords(methods, &bad).corrupt);
  EXPECT_TRUE(jitdump::ParseSideRecords(SideFrame(6, 0x1000, 4, 0, 0), &bad).corrupt);
  EXPECT_TRUE(jitdump::ParseSideRecords(SideFrame(6, 0x1000, 4, 12, 0), &bad).corrupt);
  EXPECT_TRUE(jitdump::ParseSideRecords(SideFrame(6, 0x1000, 4, 1 << 30, 0), &bad).corrupt);
}

TEST(SideFileParse, InlineChainOutOfRangeIsCorrupt) {
  const std::string rec = SideInline(4, 0x1000, 4, {"A"}, {{0x10, {3}}});
  jitdump::SideRecords r;
  EXPECT_TRUE(jitdump::ParseSideRecords(rec, &r).corrupt);
}

// ---- perf map parser ----

TEST(PerfMapParse, FormatsSeenInTheWild) {
  const std::string text =
      "7f3529fcf759 b py::bar:/run/t.py\n"
      "0x00007f0011223344 0x20 Interpreter\n"  // jcmd Compiler.perfmap
      "7F00AA 10   LazyCompile:*heavy /x.js:1:2\r\n"
      "garbage line\n"
      "1000 10\n"  // no name
      "2000\t8\tstub<1> TYPE<OWNER>\n"
      "3000 4 partial";
  std::vector<perfmap::Entry> e;
  auto p = perfmap::ParseLines(text, /*at_end=*/false, &e);
  ASSERT_EQ(e.size(), 4u);
  EXPECT_EQ(p.malformed, 2u);
  EXPECT_EQ(p.consumed, text.size() - std::string("3000 4 partial").size());
  EXPECT_EQ(e[0].start, 0x7f3529fcf759u);
  EXPECT_EQ(e[0].size, 0xbu);
  EXPECT_EQ(e[0].name, "py::bar:/run/t.py");
  EXPECT_EQ(e[1].start, 0x7f0011223344u);
  EXPECT_EQ(e[1].name, "Interpreter");
  EXPECT_EQ(e[2].start, 0x7f00aau);
  EXPECT_EQ(e[2].name, "LazyCompile:*heavy /x.js:1:2");
  EXPECT_EQ(e[3].name, "stub<1> TYPE<OWNER>");
  std::vector<perfmap::Entry> rest;
  perfmap::ParseLines(std::string_view(text).substr(p.consumed), /*at_end=*/true, &rest);
  ASSERT_EQ(rest.size(), 1u);
  EXPECT_EQ(rest[0].name, "partial");
}

TEST(PerfMapParse, RejectsOverflowAndHugeNumbers) {
  perfmap::Entry e;
  EXPECT_FALSE(perfmap::ParseLine("ffffffffffffffff 10 wrap", &e));
  EXPECT_FALSE(perfmap::ParseLine("12345678901234567 1 toolong", &e));
  EXPECT_TRUE(perfmap::ParseLine("fffffffffffffff0 f edge", &e));
  EXPECT_FALSE(perfmap::ParseLine("fffffffffffffff0 10 wraps to zero", &e));
}

// ---- the index ----

TEST(JitIndex, AddressReuseResolvesByTime) {
  JitCodeIndex index;
  index.AddCode(100, 0x1000, 0x100, "Old.m", 1);
  index.AddUnload(200, 0x1000, 1);
  index.AddCode(250, 0x1040, 0x80, "New.m", 2);
  EXPECT_EQ(index.Find(0x1050, 150)->name, "Old.m");
  EXPECT_EQ(index.Find(0x1050, 300)->name, "New.m");
  EXPECT_EQ(index.Find(0x1050, 150)->name, "Old.m");  // cached answers keep their window
  EXPECT_EQ(index.Find(0x1050, 249)->name, "New.m");  // between: the next load (a racing sample)
  EXPECT_EQ(index.Find(0x1010, 300), std::nullopt);   // Old.m is gone, New.m does not cover it
  EXPECT_EQ(index.Find(0x1050, 50)->name, "Old.m");   // before any load: the earliest later one
  EXPECT_EQ(index.Find(0x1050, 300)->start, 0x1040u);
}

TEST(JitIndex, OutOfOrderRecordsGiveTheSameAnswers) {
  JitCodeIndex in_order, reversed;
  struct L {
    uint64_t t, addr, size, index;
    const char* name;
  };
  const std::vector<L> loads = {{10, 0x5000, 0x100, 1, "A"}, {20, 0x5000, 0x100, 2, "B"}, {30, 0x5080, 0x40, 3, "C"}};
  for (const L& l : loads) in_order.AddCode(l.t, l.addr, l.size, l.name, l.index);
  for (auto it = loads.rbegin(); it != loads.rend(); ++it) reversed.AddCode(it->t, it->addr, it->size, it->name, it->index);
  for (uint64_t t : {10, 15, 20, 25, 30, 35}) {
    for (uint64_t a : {0x5000, 0x5090}) {
      auto x = in_order.Find(a, t), y = reversed.Find(a, t);
      ASSERT_EQ(x.has_value(), y.has_value());
      EXPECT_EQ(x->name, y->name) << t << " " << a;
    }
  }
  EXPECT_EQ(in_order.Find(0x5090, 35)->name, "C");
  EXPECT_EQ(in_order.Find(0x5090, 25)->name, "B");
}

TEST(JitIndex, UnloadBeforeLoadAndMoves) {
  JitCodeIndex index;
  index.AddUnload(50, 0x1000, 7);  // the side file was read before the dump
  index.AddCode(10, 0x1000, 0x10, "Gone.m", 7);
  EXPECT_EQ(index.Find(0x1004, 40)->name, "Gone.m");
  EXPECT_EQ(index.Find(0x1004, 60), std::nullopt);
  index.AddCode(100, 0x2000, 0x10, "Moving.m", 8);
  index.AddMove(200, 0x3000, 0x10, 8);
  EXPECT_EQ(index.Find(0x3004, 250)->name, "Moving.m");
  EXPECT_EQ(index.Find(0x3004, 250)->start, 0x3000u);
}

TEST(JitIndex, InlineChainsByPcRange) {
  JitCodeIndex index;
  index.AddInline(3, {{0x20, {"Mid.call", "Leaf.get"}}, {0x40, {}}});  // before its load
  index.AddCode(1, 0x9000, 0x100, "Outer.run", 3);
  auto at = [&](uint64_t off) { return index.Find(0x9000 + off, 5); };
  ASSERT_NE(at(0x10)->inlined, nullptr);
  EXPECT_EQ(*at(0x10)->inlined, (std::vector<std::string_view>{"Mid.call", "Leaf.get"}));
  ASSERT_NE(at(0x20)->inlined, nullptr);  // a range ends at its pc, inclusive
  EXPECT_EQ(at(0x21)->inlined, nullptr);
  EXPECT_EQ(at(0x80)->inlined, nullptr);
  EXPECT_EQ(at(0x10)->name, "Outer.run");
}

// An INLINE record is kept as bytes and decoded at the first lookup in its
// code: the same chains as the record says (outermost first, without the
// compiled method), whether it was read before or after its load; a later
// record for the code replaces it; the caller's buffer may go at once.
TEST(JitIndex, InlineRecordsAreDecodedAtTheFirstLookup) {
  JitCodeIndex index;
  auto add = [&](uint64_t code, std::vector<std::string> names, std::vector<InlinePc> pcs) {
    std::string record = SideInline(1, 0x9000, code, names, pcs);
    index.AddInlineRecord(code, record);
    std::fill(record.begin(), record.end(), 'x');  // the index kept its own copy
  };
  add(3, {"Outer.run", "Mid.call", "Leaf.get"}, {{0x40, {2, 1, 0}}, {0x20, {1, 0}}, {0x60, {0}}});  // before its load
  index.AddCode(1, 0x9000, 0x100, "Outer.run", 3);
  index.AddCode(1, 0xa000, 0x100, "Other.run", 4);
  add(4, {"Other.run", "Gone.m"}, {{0x10, {1, 0}}});
  add(4, {"Other.run", "Kept.m"}, {{0x10, {1, 0}}});  // the later record wins
  auto at = [&](uint64_t addr) { return index.Find(addr, 5); };
  ASSERT_NE(at(0x9010)->inlined, nullptr);  // ranges sorted by pc: (0, 0x20] first
  EXPECT_EQ(*at(0x9010)->inlined, (std::vector<std::string_view>{"Mid.call"}));
  EXPECT_EQ(*at(0x9021)->inlined, (std::vector<std::string_view>{"Mid.call", "Leaf.get"}));
  EXPECT_EQ(*at(0x9040)->inlined, (std::vector<std::string_view>{"Mid.call", "Leaf.get"}));
  EXPECT_EQ(at(0x9050)->inlined, nullptr);  // only the method itself
  EXPECT_EQ(at(0x9080)->inlined, nullptr);
  EXPECT_EQ(at(0x9010)->name, "Outer.run");
  ASSERT_NE(at(0xa004)->inlined, nullptr);
  EXPECT_EQ(*at(0xa004)->inlined, (std::vector<std::string_view>{"Kept.m"}));
  EXPECT_EQ(index.stats().inline_tables, 3u);
}

TEST(JitIndex, LargeBlobsAndInterpreterKind) {
  JitCodeIndex index;
  index.AddCode(1, 0x100000, 0x30000, "Interpreter", 1, FrameKind::kInterpreted);
  index.AddCode(2, 0x110000, 0x100, "Small.m", 2);
  EXPECT_EQ(index.Find(0x12f000, 5)->name, "Interpreter");
  EXPECT_EQ(index.Find(0x12f000, 5)->kind, FrameKind::kInterpreted);
  EXPECT_EQ(index.Find(0x110010, 5)->name, "Small.m");  // the later load wins inside the big one
  EXPECT_EQ(index.Find(0x110010, 1)->name, "Interpreter");
}

// ---- the per-process source over real files ----

class FakeProc {
 public:
  FakeProc() {
    char tmpl[] = "/tmp/arcprof-jit-test-XXXXXX";
    dir_ = mkdtemp(tmpl);
    std::filesystem::create_directories(dir_ + "/4242/root/tmp");
    Write("4242/status", "Name:\tjava\nUid:\t1000\t1000\t1000\t1000\nNSpid:\t4242\t7\n");
    Write("4242/maps", "");
  }
  ~FakeProc() { std::filesystem::remove_all(dir_); }
  void Write(const std::string& rel, const std::string& data, bool append = false) {
    std::ofstream out(dir_ + "/" + rel, append ? std::ios::app | std::ios::binary : std::ios::trunc | std::ios::binary);
    out << data;
  }
  std::string path(const std::string& rel) const { return dir_ + "/" + rel; }
  JitSourceOptions options() const {
    JitSourceOptions o;
    o.proc_root = dir_;
    o.reread_on_miss_ns = 0;
    return o;
  }
  ProcessInfo info() const {
    ProcessInfo p;
    p.pid = 4242;
    p.uid = 1000;
    return p;
  }

 private:
  std::string dir_;
};

TEST(JitProcessSource, TailsJitdumpAndSideFileByNamespacePid) {
  FakeProc proc;
  // The namespaced pid (7) names the files.
  const std::string dump = "4242/root/tmp/jit-7.dump";
  const std::string first = JitdumpHeader(7) + CodeLoad(100, 0x1000, 0x40, 1, "A.run");
  const std::string second = CodeLoad(300, 0x1000, 0x40, 2, "B.run");
  proc.Write(dump, first + second.substr(0, 30));  // the writer is mid-record
  proc.Write("4242/root/tmp/jit-7.arcprof", SideHeader() + SideVmInfo(1, 7, 0, "HotSpot 17") +
                                                 SideThreadName(2, 4243, "worker-1") +
                                                 SideThreadName(3, 4243, "DestroyJavaVM") +
                                                 SideUnload(250, 0x1000, 1));
  if (geteuid() == 0) {
    ASSERT_EQ(chown(proc.path(dump).c_str(), 1000, 1000), 0);
    ASSERT_EQ(chown(proc.path("4242/root/tmp/jit-7.arcprof").c_str(), 1000, 1000), 0);
  }
  JitProcessSource source(proc.info(), proc.options());
  source.Poll(1000);
  EXPECT_TRUE(source.has_jitdump());
  EXPECT_EQ(source.stats().code_loads, 1u);
  EXPECT_EQ(source.Find(0x1010, 200)->name, "A.run");
  EXPECT_EQ(source.Find(0x1010, 260), std::nullopt);  // unloaded, and B.run not read yet...
  proc.Write(dump, second.substr(30), /*append=*/true);
  EXPECT_EQ(source.Find(0x1010, 310)->name, "B.run");  // ...a miss re-reads the tail
  EXPECT_EQ(source.stats().code_loads, 2u);
  ASSERT_TRUE(source.vm_flags().has_value());
  EXPECT_EQ(*source.vm_flags(), 0u);
  EXPECT_EQ(source.thread_names().at(4243), "worker-1");  // the first name wins
}

// Frame sizes follow their code (also when the FRAME record is read first);
// Method* names are versioned by time; compiled Java code of a JVM without
// PreserveFramePointer is marked: its rbp is no frame pointer.
TEST(JitProcessSource, FrameSizesAndMethodNames) {
  FakeProc proc;
  const std::string dump = "4242/root/tmp/jit-7.dump";
  proc.Write(dump, JitdumpHeader(7) + CodeLoad(100, 0x1000, 0x40, 1, "A.run") + CodeLoad(100, 0x2000, 0x40, 2, "call_stub"));
  proc.Write("4242/root/tmp/jit-7.arcprof",
             SideHeader() + SideVmInfo(1, 7, 0, "HotSpot 17") + SideFrame(100, 0x1000, 1, 64, 12) +
                 SideFrame(100, 0x3000, 3, 32, 8) + SideMethods(50, {{0x9000, "Old.gone"}}) +
                 SideMethods(500, {{0x9000, "New.reused"}, {0x9100, "Split.main"}}));
  if (geteuid() == 0) {
    ASSERT_EQ(chown(proc.path(dump).c_str(), 1000, 1000), 0);
    ASSERT_EQ(chown(proc.path("4242/root/tmp/jit-7.arcprof").c_str(), 1000, 1000), 0);
  }
  JitProcessSource source(proc.info(), proc.options());
  source.Poll(1000);
  auto a = source.Find(0x1010, 200);
  ASSERT_TRUE(a);
  EXPECT_EQ(a->frame_size, 64);
  EXPECT_EQ(a->frame_complete, 12);
  EXPECT_TRUE(a->rbp_unreliable);  // PreserveFramePointer off (flags 0)
  auto stub = source.Find(0x2010, 200);
  ASSERT_TRUE(stub);
  EXPECT_EQ(stub->frame_size, 0);
  EXPECT_FALSE(stub->rbp_unreliable);  // stubs keep rbp frames
  // A FRAME record read before its code.
  proc.Write(dump, CodeLoad(300, 0x3000, 0x40, 3, "B.run"), /*append=*/true);
  auto b = source.Find(0x3004, 400);
  ASSERT_TRUE(b);
  EXPECT_EQ(b->frame_size, 32);
  EXPECT_EQ(source.MethodName(0x9000, 100), "Old.gone");
  EXPECT_EQ(source.MethodName(0x9000, 600), "New.reused");
  EXPECT_EQ(source.MethodName(0x9100, 10), "Split.main");  // raced its record: the earliest
  EXPECT_EQ(source.MethodName(0x9200, 600), std::nullopt);
  EXPECT_EQ(source.stats().frames, 2u);
  EXPECT_EQ(source.stats().methods, 3u);
}

// The plain model of JitMethodTable::Find: versions in the order they were
// added (record by record, a record's Method*s in order); the latest at or
// before t wins (the later added at equal times), else the earliest (the
// first added at equal times).
struct MethodModel {
  struct Named {
    uint64_t t;
    uint64_t method;
    std::string name;
  };
  std::vector<Named> named;
  JitMethodTable table;
  int checked = 0;

  void Add(uint64_t t, const std::vector<std::pair<uint64_t, std::string>>& methods) {
    for (const auto& [method, name] : methods) named.push_back({t, method, name});
    const std::string record = SideMethods(t, methods);  // parsed views into it
    jitdump::SideRecords parsed;
    ASSERT_FALSE(jitdump::ParseSideRecords(record, &parsed).corrupt);
    ASSERT_EQ(parsed.methods.size(), 1u);
    table.Add(parsed.methods[0]);
  }
  void Check(uint64_t method, uint64_t t) {
    const Named* latest = nullptr;
    const Named* earliest = nullptr;
    for (const Named& n : named) {
      if (n.method != method) continue;
      if (n.t <= t && (!latest || n.t >= latest->t)) latest = &n;
      if (!earliest || n.t < earliest->t) earliest = &n;
    }
    const Named* want = latest ? latest : earliest;
    const std::optional<std::string_view> got = table.Find(method, t);
    ASSERT_EQ(got.has_value(), want != nullptr) << std::hex << method << std::dec << " at " << t;
    if (want) ASSERT_EQ(*got, want->name) << std::hex << method << std::dec << " at " << t;
    ++checked;
  }
};

// The method table against a plain model: a record of 3,000 Method*s and two
// of 1,000 (one class's methods, evenly spaced), those Method*s named
// again later (class unloading reuses them), records kept in the order read
// and not in time; every lookup at, between and before the records' times
// agrees with "the latest record at or before t, at equal times the later
// added, else the earliest".
TEST(JitMethodTable, AgreesWithAPlainModelOverManyMethods) {
  MethodModel m;
  const uint64_t times[] = {500, 100, 500};  // read out of time order; two at 500
  for (int r = 0; r < 3; ++r) {
    std::vector<std::pair<uint64_t, std::string>> methods;
    for (uint64_t i = 0; i < 3000; ++i) {
      if (r > 0 && i % 3 != 0) continue;
      const uint64_t method = 0x7f0000001000 + i * 88;  // metadata is 8-aligned
      methods.emplace_back(method, "C" + std::to_string(r) + ".m" + std::to_string(i));
    }
    m.Add(times[r], methods);
  }
  for (uint64_t i = 0; i < 3000; i += 7) {
    for (uint64_t t : {50, 100, 300, 500, 900}) m.Check(0x7f0000001000 + i * 88, t);
  }
  EXPECT_GT(m.checked, 2000);
  JitMethodTable& table = m.table;
  EXPECT_EQ(table.Find(0x7f0000001000 + 3000 * 88, 900), std::nullopt);
  EXPECT_EQ(table.Find(0x7f0000001000 + 3 * 88, 600), "C2.m3");    // same time, added later
  EXPECT_EQ(table.Find(0x7f0000001000 + 3 * 88, 200), "C1.m3");    // the record at 100
  EXPECT_EQ(table.Find(0x7f0000001000 + 3 * 88, 10), "C1.m3");     // raced: the earliest
  EXPECT_EQ(table.Find(0x7f0000001000 + 4 * 88, 10), "C0.m4");     // named once
  EXPECT_GT(table.bytes(), 3000u * 8);
}

// The index of records by their Method*s' ranges, against the plain model:
// classes whose methods interleave in metaspace, records that spread over
// megabytes, a Method* in several records (class unloading reuses them) and
// twice in one record, Method*s at the ends of the address space, records
// added between lookups (sorted runs merged) and lookups with no record in
// between (the runs made one).
TEST(JitMethodTable, RangeIndexAgreesWithAPlainModel) {
  std::mt19937_64 rng(1234);
  MethodModel m;
  std::vector<uint64_t> known;
  const uint64_t base = 0x7f53c4000000;
  for (int r = 0; r < 1500; ++r) {
    std::vector<std::pair<uint64_t, std::string>> methods;
    const uint64_t t = 100 * (rng() % 20);  // many records at the same time
    const int count = 1 + static_cast<int>(rng() % (r % 50 == 0 ? 300 : 12));
    // Method*s at the ends of the address space in a few records (in many,
    // their pieces would pile up past kMaxWalk: the test below).
    int shape = static_cast<int>(rng() % 10);
    if (shape == 3 || r % 100 == 3) shape = r % 100 == 3 ? 3 : 4;
    uint64_t at = base + (rng() % (64u << 20)) / 8 * 8;
    for (int i = 0; i < count; ++i) {
      uint64_t method;
      if (shape == 0 && !known.empty()) {
        method = known[rng() % known.size()];  // a Method* named before
      } else if (shape == 1) {
        method = base + (rng() % (1ull << 30)) / 8 * 8;  // spread over a GB
      } else if (shape == 2 && i % 5 == 4) {
        method = methods[rng() % methods.size()].first;  // twice in one record
      } else if (shape == 3) {
        method = (rng() % 2) ? 8 * (rng() % 1024) : ~uint64_t{0} - 7 - 8 * (rng() % 1024);
      } else {
        method = at;
        at += 88 + 8 * (rng() % 16);  // one class's methods, close together
      }
      methods.emplace_back(method, "C" + std::to_string(r) + ".m" + std::to_string(i));
    }
    for (const auto& [method, name] : methods) known.push_back(method);
    m.Add(t, methods);
    if (r % 7 == 0) {
      for (int q = 0; q < 5; ++q) m.Check(known[rng() % known.size()], 100 * (rng() % 21));
    }
  }
  for (int q = 0; q < 4000; ++q) {
    const uint64_t method = known[rng() % known.size()];
    m.Check(method, 100 * (rng() % 21) + (q % 3 == 0 ? 50 : 0));
    if (q % 10 == 0) m.Check(method + 8, 1000);  // maybe named, maybe not
  }
  m.Check(base - 8, 5000);
  EXPECT_GT(m.checked, 5000);
  EXPECT_FALSE(m.table.hashed());  // overlaps as wide as these stay in the range index
}

// A Method* named in many records (a class unloaded and its Method*s reused
// again and again, or a hostile file): past JitMethodTable::kMaxWalk pieces a
// lookup would walk, every Method* is hashed, and the answers stay the same. (The
// four Method*s near `hot` are one piece per record.)
TEST(JitMethodTable, AMethodInManyRecordsStaysBounded) {
  for (const int records : {100, 1000}) {
    SCOPED_TRACE(records);
    MethodModel m;
    const uint64_t hot = 0x7f0000100000;
    for (int r = 0; r < records; ++r) {
      std::vector<std::pair<uint64_t, std::string>> methods;
      for (uint64_t i = 0; i < 4; ++i) methods.emplace_back(hot - 64 + 32 * i, "R" + std::to_string(r) + "." + std::to_string(i));
      methods.emplace_back(0x7f0000900000 + 88 * r, "Other" + std::to_string(r));
      m.Add(static_cast<uint64_t>(r % 37) * 10, methods);
      if (r % 50 == 0) m.Check(hot, 100);
    }
    for (uint64_t t : {0, 5, 10, 100, 360, 1000}) {
      for (uint64_t i = 0; i < 4; ++i) m.Check(hot - 64 + 32 * i, t);
      m.Check(0x7f0000900000 + 88 * 7, t);
    }
    EXPECT_EQ(m.table.hashed(), records > static_cast<int>(JitMethodTable::kMaxWalk));
    // Records read after the switch are hashed too.
    m.Add(5, {{hot, "Late.one"}, {0x10, "Low.one"}});
    m.Check(hot, 5);
    m.Check(hot, 1000);
    m.Check(0x10, 0);
  }
}

// Method names read over several polls are merged into the ones read before:
// an older record read later still answers for its time, and of two records
// at the same time the one written later wins.
TEST(JitProcessSource, MethodNamesReadAcrossPollsKeepTheirTimes) {
  FakeProc proc;
  const std::string side = "4242/root/tmp/jit-7.arcprof";
  proc.Write("4242/root/tmp/jit-7.dump", JitdumpHeader(7) + CodeLoad(100, 0x1000, 0x40, 1, "A.run"));
  proc.Write(side, SideHeader() + SideMethods(500, {{0x9000, "Second.at500"}, {0xa000, "High.one"}}));
  if (geteuid() == 0) {
    ASSERT_EQ(chown(proc.path("4242/root/tmp/jit-7.dump").c_str(), 1000, 1000), 0);
    ASSERT_EQ(chown(proc.path(side).c_str(), 1000, 1000), 0);
  }
  JitProcessSource source(proc.info(), proc.options());
  source.Poll(1000);
  EXPECT_EQ(source.MethodName(0x9000, 600), "Second.at500");
  proc.Write(side,
             SideMethods(50, {{0x9000, "First.at50"}}) + SideMethods(500, {{0x9000, "Third.at500"}}) +
                 SideMethods(700, {{0x8000, "Low.one"}}),
             /*append=*/true);
  source.Poll(2000);
  EXPECT_EQ(source.MethodName(0x9000, 100), "First.at50");
  EXPECT_EQ(source.MethodName(0x9000, 10), "First.at50");  // raced its record: the earliest
  EXPECT_EQ(source.MethodName(0x9000, 600), "Third.at500");  // same time, written later
  EXPECT_EQ(source.MethodName(0x8000, 800), "Low.one");
  EXPECT_EQ(source.MethodName(0xa000, 800), "High.one");
  EXPECT_EQ(source.stats().methods, 5u);
}

TEST(JitProcessSource, PerfMapLinesReadLaterWinFromTheirReadTime) {
  FakeProc proc;
  const std::string map = "4242/root/tmp/perf-7.map";
  proc.Write(map, "1000 100 first\n2000 10 other\n");
  if (geteuid() == 0) ASSERT_EQ(chown(proc.path(map).c_str(), 1000, 1000), 0);
  JitProcessSource source(proc.info(), proc.options());
  source.Poll(5000);
  EXPECT_TRUE(source.has_perf_map());
  EXPECT_EQ(source.Find(0x1010, 1)->name, "first");  // first read: valid from the start
  proc.Write(map, "1000 100 second\n", /*append=*/true);
  source.Poll(9000);
  EXPECT_EQ(source.Find(0x1010, 8000)->name, "first");
  EXPECT_EQ(source.Find(0x1010, 9500)->name, "second");
  EXPECT_EQ(source.stats().perf_map_entries, 3u);
}

// A stale map of an earlier process with the same pid is truncated and
// rewritten by the new one: its new lines are read, not skipped up to the old
// file's length.
TEST(JitProcessSource, PerfMapRewrittenFromTheStartIsReadAgain) {
  FakeProc proc;
  const std::string map = "4242/root/tmp/perf-7.map";
  proc.Write(map, "1000 100 stale_one_of_an_earlier_process\n2000 10 stale_two_of_an_earlier_process\n");
  if (geteuid() == 0) ASSERT_EQ(chown(proc.path(map).c_str(), 1000, 1000), 0);
  JitProcessSource source(proc.info(), proc.options());
  source.Poll(5000);
  ASSERT_TRUE(source.has_perf_map());
  proc.Write(map, "3000 100 fresh\n");  // truncated, shorter than what was read
  source.Poll(9000);
  ASSERT_TRUE(source.Find(0x3010, 9500).has_value());
  EXPECT_EQ(source.Find(0x3010, 9500)->name, "fresh");
}

TEST(JitProcessSource, IgnoresMapOwnedByAnotherUser) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to give a file to another user";
  FakeProc proc;
  const std::string map = "4242/root/tmp/perf-7.map";
  proc.Write(map, "1000 100 planted\n");
  ASSERT_EQ(chown(proc.path(map).c_str(), 2000, 2000), 0);
  JitProcessSource source(proc.info(), proc.options());
  source.Poll(1);
  EXPECT_FALSE(source.has_perf_map());
  EXPECT_EQ(source.Find(0x1010, 5), std::nullopt);
  auto warnings = source.TakeWarnings();
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("owned by uid 2000"), std::string::npos) << warnings[0];
  source.Poll(1'000'000'000);
  EXPECT_TRUE(source.TakeWarnings().empty());  // said once
  // Root-owned maps are trusted.
  ASSERT_EQ(chown(proc.path(map).c_str(), 0, 0), 0);
  JitProcessSource trusted(proc.info(), proc.options());
  trusted.Poll(1);
  EXPECT_EQ(trusted.Find(0x1010, 5)->name, "planted");
}

TEST(JitProcessSource, RefusesSymlinkedMap) {
  FakeProc proc;
  proc.Write("target.map", "1000 100 planted\n");
  std::filesystem::create_symlink(proc.path("target.map"), proc.path("4242/root/tmp/perf-7.map"));
  JitProcessSource source(proc.info(), proc.options());
  source.Poll(1);
  EXPECT_FALSE(source.has_perf_map());
  auto warnings = source.TakeWarnings();
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("symbolic link"), std::string::npos);
}

TEST(JitProcessSource, CorruptDumpStopsWithOneWarning) {
  FakeProc proc;
  std::string bad = CodeLoad(2, 0x2000, 0x10, 2, "B");
  uint32_t size = 3;
  memcpy(bad.data() + 4, &size, 4);
  proc.Write("4242/root/tmp/jit-7.dump", JitdumpHeader(7) + CodeLoad(1, 0x1000, 0x10, 1, "A") + bad);
  JitProcessSource source(proc.info(), proc.options());
  source.Poll(1);
  EXPECT_EQ(source.Find(0x1004, 5)->name, "A");
  EXPECT_TRUE(source.stats().corrupt);
  EXPECT_EQ(source.TakeWarnings().size(), 1u);
}

// Issue: a user's own 457 MB perf map (12 M entries) cost root's whole-machine
// recording 43 s and 2.9 GB. Reading is now bounded per read and per map.
TEST(JitProcessSource, HostileBigPerfMapIsReadInBoundedStepsAndCapped) {
  FakeProc proc;
  const std::string map = "4242/root/tmp/perf-7.map";
  {
    // 3 M lines, 72 MiB: over the per-map byte and entry caps.
    std::ofstream out(proc.path(map), std::ios::binary);
    std::string chunk;
    char line[64];
    for (uint64_t i = 0; i < 3'000'000; ++i) {
      const int n = snprintf(line, sizeof(line), "%llx 10 hostile_symbol_%07llu\n",
                             static_cast<unsigned long long>(0x10000000 + i * 16),
                             static_cast<unsigned long long>(i));
      chunk.append(line, static_cast<size_t>(n));
      if (chunk.size() > (1u << 20)) {
        out << chunk;
        chunk.clear();
      }
    }
    out << chunk;
  }
  if (geteuid() == 0) ASSERT_EQ(chown(proc.path(map).c_str(), 1000, 1000), 0);
  const JitSourceOptions options = proc.options();
  JitProcessSource source(proc.info(), options);
  source.Poll(1000);
  // One read parses at most perf_map_bytes_per_read: about 80,000 lines here.
  const uint64_t first = source.stats().perf_map_entries;
  EXPECT_GT(first, 10'000u);
  EXPECT_LE(first * 24, options.perf_map_bytes_per_read);
  EXPECT_EQ(source.Find(0x10000000, 2000)->name, "hostile_symbol_0000000");
  for (int i = 0; i < 1000 && !source.stats().perf_map_capped; ++i) source.Poll(3000 + i);
  EXPECT_TRUE(source.stats().perf_map_capped);
  EXPECT_EQ(source.stats().perf_map_entries, options.perf_map_max_entries);
  const std::vector<std::string> warnings = source.TakeWarnings();
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("stopped reading"), std::string::npos) << warnings[0];
  // Further reads cost nothing and add nothing.
  source.Poll(1'000'000);
  EXPECT_EQ(source.stats().perf_map_entries, options.perf_map_max_entries);
  EXPECT_TRUE(source.TakeWarnings().empty());
}

TEST(JitProcessSource, PerfMapLineLongerThanOneReadStopsTheMap) {
  FakeProc proc;
  const std::string map = "4242/root/tmp/perf-7.map";
  proc.Write(map, "1000 10 ok\n2000 10 " + std::string(300'000, 'x'));
  if (geteuid() == 0) ASSERT_EQ(chown(proc.path(map).c_str(), 1000, 1000), 0);
  JitSourceOptions options = proc.options();
  options.perf_map_bytes_per_read = 100'000;
  JitProcessSource source(proc.info(), options);
  for (int i = 0; i < 10; ++i) source.Poll(1000 + i);
  EXPECT_EQ(source.Find(0x1000, 2000)->name, "ok");
  EXPECT_TRUE(source.stats().perf_map_capped);
  EXPECT_EQ(source.stats().perf_map_entries, 1u);
}

}  // namespace
}  // namespace arcprof::testing
