// V8/Node named with no flag: this machine's node (with its v8dbg_*
// constants) recorded with `record -- node split.js` and as a whole machine,
// its JavaScript frames read in BPF from V8's frame-pointer chain and put in
// place of the trampoline, handler and JIT frames that ran them.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <map>
#include <set>
#include <thread>

#include "runtimes/node/node_runtime.h"
#include "tests/loader/runtime_util.h"
#include "tests/runtimes/runtime_stacks.h"
#include "tests/layer_names.h"

namespace arcprof::testing {
namespace {

const std::string kArcprof = ARCPROF_BIN;
const std::string kProgram = std::string(ARCPROF_NODE_PROGRAMS) + "/split.js";
const std::string kNode = "/usr/bin/node";

std::vector<SampledStack> UserStacks(const Profile& p, uint32_t pid = 0) {
  return ProgramStacks(p, "split.js", "split.js", FrameKind::kJs, pid);
}

SplitMeasures Measure(const Profile& p, uint32_t pid = 0) { return MeasureSplit(UserStacks(p, pid), "(top level)"); }

std::string Describe(const Profile& p, uint32_t pid = 0) {
  return DescribeStacks(p, UserStacks(p, pid), "[js]", {"node.", "runtimes."});
}

// A process's CPU time so far (user + system), -1 once it is gone.
double CpuSeconds(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat;
  std::getline(in, stat);
  const size_t close = stat.rfind(')');
  if (close == std::string::npos) return -1;
  std::istringstream rest(stat.substr(close + 2));
  std::string field;
  unsigned long long utime = 0, stime = 0;
  for (int i = 3; i <= 15 && rest >> field; ++i) {
    if (i == 14) utime = std::stoull(field);
    if (i == 15) stime = std::stoull(field);
  }
  return static_cast<double>(utime + stime) / static_cast<double>(sysconf(_SC_CLK_TCK));
}

#define REQUIRE_NODE()                                                                          \
  do {                                                                                          \
    ARCPROF_REQUIRE_RECORD_CAPABLE();                                                           \
    ARCPROF_REQUIRE_TOOL(kNode, "nodejs");                                                      \
  } while (0)

// `record -- node [flags] split.js SECONDS [thread]`.
Profile RecordCommand(const TempDir& tmp, const std::vector<std::string>& flags, const std::vector<std::string>& args) {
  const std::string db = tmp.path("node.db");
  std::vector<std::string> argv = {kArcprof, "record", "-q", "-o", db, "--", kNode};
  argv.insert(argv.end(), flags.begin(), flags.end());
  argv.push_back(kProgram);
  argv.insert(argv.end(), args.begin(), args.end());
  Subprocess rec(argv);
  EXPECT_EQ(rec.Wait(), 0) << rec.stderr_text();
  return LoadCapture(db);
}

// `record -- node PROGRAM 3` (one of the test programs).
Profile RecordProgram(const TempDir& tmp, const std::string& program) {
  const std::string db = tmp.path("program.db");
  Subprocess rec({kArcprof, "record", "-q", "-o", db, "--", kNode, program, "3"});
  EXPECT_EQ(rec.Wait(), 0) << rec.stderr_text();
  return LoadCapture(db);
}

// The whole machine while node runs split.js (started first, so that it is
// recognized from its mappings as an existing process), from when arcprof
// records until node has used `cpu_seconds` more of CPU time: as many
// samples of node at load 14 as on an idle machine (a fixed wall time gave
// too few: the test failed 3 runs in 4 at load 14). Sets *pid to node's.
Profile RecordMachine(const TempDir& tmp, double cpu_seconds, uint32_t* pid) {
  const std::string db = tmp.path("machine.db");
  Subprocess node({kNode, kProgram, "120"}, false);
  *pid = static_cast<uint32_t>(node.pid());
  std::this_thread::sleep_for(std::chrono::milliseconds(1000));
  // A whole loaded machine: a ring large enough that node's samples are kept.
  Subprocess rec({kArcprof, "record", "-a", "--buffer-mb", "64", "-o", db});
  EXPECT_TRUE(rec.WaitForStderr("recording system", 120)) << rec.stderr_text();
  const double from = CpuSeconds(node.pid());
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(90);
  while (std::chrono::steady_clock::now() < deadline) {
    const double now = CpuSeconds(node.pid());
    if (now < 0 || now - from >= cpu_seconds) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  kill(rec.pid(), SIGINT);
  EXPECT_EQ(rec.Wait(), 0) << rec.stderr_text();
  return LoadCapture(db);
}

void ExpectSplitAndChains(const Profile& p, const char* mode, uint32_t pid = 0) {
  const SplitMeasures m = Measure(p, pid);
  printf("measured %s split %.4f full %.4f js %llu\n", mode, m.split(), m.full_share(),
         static_cast<unsigned long long>(m.main));
  ASSERT_GT(m.main, 150u) << Describe(p, pid);
  // 10 runs of each mode on the loaded build machine (load 16-20 on 2
  // cores, 160-740 samples a run): split 0.703-0.810 (pooled 0.751-0.762),
  // full chains 0.984-0.998. The goals are 2 points (pooled) and 97%
  // (docs/performance.md); these thresholds guard against regressions with
  // margin below the worst run.
  EXPECT_NEAR(m.split(), 0.75, 0.12) << m.alpha << " alpha, " << m.beta << " beta\n" << Describe(p, pid);
  EXPECT_GE(m.full_share(), 0.95) << m.full << " of " << m.main << "\n" << Describe(p, pid);
}

// Off CPU: block.js's alpha and beta block alike in Atomics.wait, three
// times for one; the time off CPU splits 3:1 under the same complete chains
// as CPU samples (the off-CPU program runs the sampler's walk at the switch;
// glibc's futex wait holds no frame pointer, the walk finds the saved one).
TEST(NodeNoFlag, OffCpuSplitAndFullChains) {
  REQUIRE_NODE();
  TempDir tmp;
  const std::string db = tmp.path("node-offcpu.db");
  Subprocess rec({kArcprof, "record", "-q", "--off-cpu", "-o", db, "--", kNode,
                  std::string(ARCPROF_NODE_PROGRAMS) + "/block.js", "2"});
  ASSERT_EQ(rec.Wait(), 0) << rec.stderr_text();
  Profile p = LoadCapture(db);
  const auto stacks = ProgramStacks(p, "block.js", "block.js", FrameKind::kJs, 0, "offcpu");
  const SplitMeasures m = MeasureSplit(stacks, "(top level)");
  printf("measured node offcpu split %.4f full %.4f js %.3f s\n", m.split(), m.full_share(),
         static_cast<double>(m.main) / 1e9);
  const std::string described = DescribeStacks(p, stacks, "[js]", {"node.", "runtimes.", "offcpu"});
  // Of 2 s, most is spent in Atomics.wait.
  ASSERT_GT(m.main, 1'000'000'000u) << described;
  // 20 runs on the loaded build machine (load 12-20 on 2 cores): split
  // 0.701-0.771, full chains 0.998-1.000. The time off CPU includes the wait
  // for a CPU after each wakeup, which a loaded machine makes uneven; these
  // thresholds guard against regressions with margin beyond the worst run.
  EXPECT_NEAR(m.split(), 0.75, 0.10) << m.alpha << " ns alpha, " << m.beta << " ns beta\n" << described;
  EXPECT_GE(m.full_share(), 0.95) << m.full << " of " << m.main << " ns\n" << described;
}

TEST(NodeNoFlag, SplitAndFullChains) {
  REQUIRE_NODE();
  TempDir tmp;
  ExpectSplitAndChains(RecordCommand(tmp, {}, {"3"}), "command");
}

TEST(NodeNoFlag, WholeMachine) {
  REQUIRE_NODE();
  TempDir tmp;
  uint32_t pid = 0;
  // Only the test's node: other node processes may run split.js meanwhile.
  const Profile p = RecordMachine(tmp, 2.0, &pid);
  ExpectSplitAndChains(p, "machine", pid);
}

// --perf-basic-prof: JIT code is named by the perf map, and interpreted
// frames still do not collapse into the trampoline: the same chains.
TEST(NodePerfBasicProf, SameChains) {
  REQUIRE_NODE();
  TempDir tmp;
  ExpectSplitAndChains(RecordCommand(tmp, {"--perf-basic-prof"}, {"3"}), "perf-basic-prof");
}

// A worker_threads Worker has its own chain (side -> gamma from its own
// thread start), with nothing of the main thread's in it.
TEST(NodeNoFlag, WorkerHasItsOwnChain) {
  REQUIRE_NODE();
  TempDir tmp;
  Profile p = RecordCommand(tmp, {}, {"4", "thread"});
  const SplitMeasures m = Measure(p);
  printf("measured worker side %.4f full %.4f side %llu\n", m.side_share(), m.full_share(),
         static_cast<unsigned long long>(m.side));
  ASSERT_GT(m.main, 100u) << Describe(p);
  ASSERT_GT(m.side, 100u) << Describe(p);
  // 12 runs: the worker's own chain 0.983-1.000.
  EXPECT_GE(m.side_share(), 0.95) << m.side_full << " of " << m.side << "\n" << Describe(p);
  EXPECT_EQ(m.side_with_main, 0u) << Describe(p);
  // The main thread's chains beside a busy worker: 0.956-0.997 in 12 runs.
  EXPECT_GE(m.full_share(), 0.90) << m.full << " of " << m.main << "\n" << Describe(p);
}

// Names carry the file and the line running: within the function's body,
// and a caller at its call: drive() at the line that calls beta() whenever
// beta() runs (a return address into drive's code, optimized on stack).
TEST(NodeNoFlag, NamesCarryFileAndLine) {
  REQUIRE_NODE();
  TempDir tmp;
  Profile p = RecordCommand(tmp, {}, {"2"});
  const uint32_t beta_call = LineOf(kProgram, "sink += beta(30000);");
  ASSERT_GT(beta_call, 0u);
  std::map<std::string, std::set<uint32_t>> lines;
  for (const FrameRecord& f : p.frames.all()) {
    if (f.kind == FrameKind::kJs && p.frames.module_of(f) == kProgram) lines[f.symbol].insert(SourceLine(f.address));
  }
  auto within = [&](const std::string& fn, uint32_t first, uint32_t last) {
    EXPECT_FALSE(lines[fn].empty()) << fn << "\n" << Describe(p);
    for (uint32_t line : lines[fn]) EXPECT_TRUE(line >= first && line <= last) << fn << " at " << line;
  };
  within("alpha", 13, 44);
  within("beta", 47, 78);
  within("drive", 115, 131);
  uint64_t at_call = 0, beta = 0;
  for (const SampledStack& s : UserStacks(p)) {
    const auto f = ProgramFrames(s);
    if (f.size() < 2 || f.back() != "beta") continue;
    beta += s.n;
    for (const StackFrame& fr : s.frames) {
      if (fr.runtime && fr.name == "drive" && fr.line == beta_call) at_call += s.n;
    }
  }
  printf("measured caller line %.4f (%llu of %llu)\n", beta ? static_cast<double>(at_call) / beta : 0.0,
         static_cast<unsigned long long>(at_call), static_cast<unsigned long long>(beta));
  ASSERT_GT(beta, 20u) << Describe(p);
  // 10 runs at load 11-15: 1.000 every time (82-144 samples of beta).
  EXPECT_GE(at_call, beta * 9 / 10) << Describe(p);
}

// Line numbers: hot()'s two lines (three calls of work() and one) each get
// their own share, from the position of the return address in hot's code:
// its bytecode offset (interpreted), the bytecode of its pc (baseline), the
// source position of its pc (TurboFan).
TEST(NodeNoFlag, TwoHotLinesEachGetTheirShare) {
  REQUIRE_NODE();
  TempDir tmp;
  const std::string program = std::string(ARCPROF_NODE_PROGRAMS) + "/lines.js";
  const uint32_t line_a = LineOf(program, "// line A"), line_b = LineOf(program, "// line B");
  ASSERT_GT(line_a, 0u);
  Profile p = RecordProgram(tmp, program);
  const auto stacks = ProgramStacks(p, "lines.js", "lines.js", FrameKind::kJs);
  uint64_t a = 0, b = 0, other = 0;
  for (const SampledStack& s : stacks) {
    // hot's frame under work's (the leaf).
    const StackFrame* caller = nullptr;
    const StackFrame* leaf = nullptr;
    for (const StackFrame& f : s.frames) {
      if (!f.runtime) continue;
      caller = leaf;
      leaf = &f;
    }
    if (leaf == nullptr || leaf->name != "work" || caller == nullptr || caller->name != "hot") continue;
    (caller->line == line_a ? a : caller->line == line_b ? b : other) += s.n;
  }
  const double share = a + b ? static_cast<double>(a) / (a + b) : 0;
  printf("measured lines A %.4f (%llu A, %llu B, %llu other)\n", share, static_cast<unsigned long long>(a),
         static_cast<unsigned long long>(b), static_cast<unsigned long long>(other));
  const std::string why = DescribeStacks(p, stacks, "[js]", {"node.", "runtimes."});
  ASSERT_GT(a + b, 200u) << why;
  // 20 runs at load 9-15, 557-992 samples: 0.725-0.776 (pooled 0.740 over
  // the last 10), no other line. The goal is 3 points; this guards with
  // margin beyond the worst run.
  EXPECT_NEAR(share, 0.75, 0.10) << why;
  EXPECT_LE(other, (a + b) / 10) << why;
}

// Inlined functions: ta() and tb() are small enough that TurboFan inlines
// them into outer() (outer into drive's on-stack-replaced code): each is
// still a frame of its own under outer, from the inlining positions of the
// optimized code's deoptimization data, and ta() has its 3:1 share.
TEST(NodeNoFlag, InlinedFunctionsAreFramesOfTheirOwn) {
  REQUIRE_NODE();
  TempDir tmp;
  const std::string program = std::string(ARCPROF_NODE_PROGRAMS) + "/inline.js";
  Profile p = RecordProgram(tmp, program);
  const auto stacks = ProgramStacks(p, "inline.js", "inline.js", FrameKind::kJs);
  uint64_t outer = 0, ta = 0, tb = 0, misplaced = 0;
  for (const SampledStack& s : stacks) {
    const auto f = ProgramFrames(s);
    const auto at = std::find(f.begin(), f.end(), "outer");
    if (at == f.end()) {
      if (!f.empty() && (f.back() == "ta" || f.back() == "tb")) misplaced += s.n;
      continue;
    }
    outer += s.n;
    if (at + 2 != f.end()) continue;
    if (*(at + 1) == "ta") ta += s.n;
    if (*(at + 1) == "tb") tb += s.n;
  }
  const double inlined = outer ? static_cast<double>(ta + tb) / outer : 0;
  const double split = ta + tb ? static_cast<double>(ta) / (ta + tb) : 0;
  printf("measured inlined %.4f split %.4f (%llu ta, %llu tb, %llu outer)\n", inlined, split,
         static_cast<unsigned long long>(ta), static_cast<unsigned long long>(tb),
         static_cast<unsigned long long>(outer));
  const std::string why = DescribeStacks(p, stacks, "[js]", {"node.", "runtimes."});
  ASSERT_GT(outer, 150u) << why;
  // 20 runs at load 9-15: inlined 0.35-0.79 of outer's samples (less when
  // TurboFan, slowed by the load, leaves outer longer in baseline code whose
  // own loop costs more), split 0.79-0.88: between two calls optimized code
  // has no positions (docs/node.md, "Lines"), and what follows an inlined
  // body goes to it.
  EXPECT_GE(inlined, 0.15) << why;
  EXPECT_NEAR(split, 0.75, 0.20) << why;
  EXPECT_EQ(misplaced, 0u) << why;
  EXPECT_GT(Counter(p, "node.frames_inlined"), 0) << why;
}

// A "node" exporting V8's constants over crafted frame chains: a chain that
// loops, one deeper than the walk's bound, one into unmapped memory, functions
// whose shared info is not a SharedFunctionInfo, a 100,000-character name,
// and frames in crafted JIT code (lying headers, endless and oversized
// position tables, inlining ids that go round). The walk stops at its bound with a counted reason, nothing is
// misnamed, the huge name is cut and counted, the recording ends on time.
class HostileNodeChains : public ::testing::TestWithParam<std::string> {};

TEST_P(HostileNodeChains, BoundedAndCounted) {
  ARCPROF_REQUIRE_RECORD_CAPABLE();
  TempDir tmp;
  const std::string db = tmp.path("fake.db");
  const auto t0 = std::chrono::steady_clock::now();
  Subprocess rec({kArcprof, "record", "-q", "-o", db, "--", ARCPROF_FAKE_NODE, GetParam(), "2"});
  ASSERT_EQ(rec.Wait(), 0) << rec.stderr_text();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(30));
  Profile p = LoadCapture(db);
  const std::string& mode = GetParam();
  EXPECT_EQ(Counter(p, "node.processes_recognized"), 1) << Describe(p);
  const int64_t samples = Counter(p, "runtimes.samples");
  EXPECT_GT(samples, 100) << Describe(p);
  // Most samples are taken in the spin loop, on the crafted chain.
  if (mode == "loop") EXPECT_GT(Counter(p, "runtimes.truncated_walks.bad chain"), samples / 2) << Describe(p);
  if (mode == "deep") EXPECT_GT(Counter(p, "runtimes.truncated_walks.max depth"), samples / 2) << Describe(p);
  if (mode == "fault") EXPECT_GT(Counter(p, "runtimes.truncated_walks.read fault"), samples / 2) << Describe(p);
  if (mode == "code") {
    // Frames in crafted JIT code: named (their function is well formed),
    // their lines not: each lie counted.
    printf("measured code named %lld tables_bad %lld code_not_found %lld function_start %lld\n",
           static_cast<long long>(Counter(p, "node.frames_named")),
           static_cast<long long>(Counter(p, "node.position_tables_bad")),
           static_cast<long long>(Counter(p, "node.code_not_found")),
           static_cast<long long>(Counter(p, "node.lines_function_start")));
    EXPECT_GT(Counter(p, "node.frames_named"), 0) << Describe(p);
    EXPECT_GT(Counter(p, "node.position_tables_bad"), 0) << Describe(p);
    EXPECT_GT(Counter(p, "node.code_not_found"), 0) << Describe(p);
    EXPECT_EQ(Counter(p, "node.frames_inlined"), 0) << Describe(p);
    return;
  }
  if (mode == "huge") {
    EXPECT_GT(Counter(p, "node.frames_named"), 0) << Describe(p);
    EXPECT_GT(Counter(p, "node.names_truncated"), 0) << Describe(p);
    for (const FrameRecord& f : p.frames.all()) {
      if (f.kind == FrameKind::kJs) EXPECT_LE(f.symbol.size(), 1024u + 3);
    }
    return;
  }
  // Frames it could not name are counted, not invented.
  EXPECT_EQ(Counter(p, "node.frames_named"), 0) << Describe(p);
  EXPECT_GT(Counter(p, "node.frames_function_gone"), 0) << Describe(p);
  for (const FrameRecord& f : p.frames.all()) {
    if (f.kind == FrameKind::kJs) EXPECT_TRUE(f.symbol.empty()) << f.symbol;
  }
}

INSTANTIATE_TEST_SUITE_P(Chains, HostileNodeChains,
                         ::testing::Values("loop", "deep", "fault", "garbage", "huge", "code"));

// A binary named node that is not node (a copy of dash): not recognized,
// recorded as any program.
TEST(HostileNode, NotNodeIsLeftAlone) {
  ARCPROF_REQUIRE_RECORD_CAPABLE();
  ExpectImpostorLeftAlone(kArcprof, "node", "node.processes_recognized");
}

// The constants a build must export; a missing one, pointer compression, or
// frame slots out of the walker's reach: not recognized.
TEST(V8Layout, FromTheBinaryOrNothing) {
  std::map<std::string, int64_t> c = {
      {"TaggedSize", 8}, {"HeapObjectTag", 1}, {"SmiTagMask", 1}, {"SmiShiftSize", 31},
      {"off_fp_function", -16}, {"off_fp_context", -8}, {"off_fp_bytecode_offset", -40},
      {"class_JSFunction__shared__SharedFunctionInfo", 24},
      {"class_SharedFunctionInfo__name_or_scope_info__Object", 16},
      {"class_SharedFunctionInfo__script_or_debug_info__HeapObject", 32}, {"class_HeapObject__map__Map", 0},
      {"class_Map__instance_type__uint16_t", 12}, {"class_Script__name__Object", 16},
      {"class_Script__source__Object", 8}, {"class_String__length__int32_t", 12},
      {"class_SeqOneByteString__chars__char", 16}, {"class_SeqTwoByteString__chars__char", 16},
      {"class_ConsString__first__String", 16}, {"class_ConsString__second__String", 24},
      {"class_SlicedString__parent__String", 16}, {"class_SlicedString__offset__SMI", 24},
      {"class_ThinString__actual__String", 16}, {"type_SharedFunctionInfo__SHARED_FUNCTION_INFO_TYPE", 262},
      {"type_ScopeInfo__SCOPE_INFO_TYPE", 261}, {"type_Script__SCRIPT_TYPE", 167}, {"FirstNonstringType", 128},
      {"StringRepresentationMask", 7}, {"StringEncodingMask", 8}, {"SeqStringTag", 0}, {"ConsStringTag", 1},
      {"SlicedStringTag", 3}, {"ThinStringTag", 5}, {"OneByteStringTag", 8}, {"scopeinfo_idx_first_vars", 3},
      {"scopeinfo_idx_ncontextlocals", 2}};
  auto read = [](const std::map<std::string, int64_t>& m) {
    return runtimes::V8Layout::Read([&m](std::string_view n) -> std::optional<int64_t> {
      auto it = m.find(std::string(n));
      if (it == m.end()) return std::nullopt;
      return it->second;
    });
  };
  auto l = read(c);
  ASSERT_TRUE(l);
  EXPECT_EQ(l->fp_function, 16);
  EXPECT_EQ(l->fp_bytecode_offset, 40);
  EXPECT_EQ(l->smi_shift, 32u);
  // Lines need more constants (this machine's node exports them all): the
  // names do not.
  EXPECT_FALSE(l->lines);
  auto lines = c;
  for (const auto& [k, v] : std::map<std::string, int64_t>{
           {"class_SharedFunctionInfo__function_data__Object", 8}, {"class_FixedArrayBase__length__SMI", 8},
           {"class_FixedArray__data__uintptr_t", 16}, {"class_BytecodeArray__data__uintptr_t", 54},
           {"class_Code__deoptimization_data__FixedArray", 16}, {"class_Code__source_position_table__ByteArray", 24},
           {"class_InstructionStream__instruction_start__uintptr_t", 16}, {"type_Code__CODE_TYPE", 245},
           {"type_InstructionStream__INSTRUCTION_STREAM_TYPE", 252}, {"type_BytecodeArray__BYTECODE_ARRAY_TYPE", 191},
           {"type_ByteArray__BYTE_ARRAY_TYPE", 190}, {"type_FixedArray__FIXED_ARRAY_TYPE", 175},
           {"type_WeakFixedArray__WEAK_FIXED_ARRAY_TYPE", 240}, {"CodeKindFieldMask", 15}, {"CodeKindFieldShift", 0},
           {"CodeKindBaseline", 11}, {"CodeKindInterpretedFunction", 10},
           {"DeoptimizationDataInlinedFunctionCountIndex", 1}, {"DeoptimizationDataLiteralArrayIndex", 2},
           {"DeoptimizationDataSharedFunctionInfoIndex", 6}, {"DeoptimizationDataInliningPositionsIndex", 7}}) {
    lines[k] = v;
  }
  auto with_lines = read(lines);
  ASSERT_TRUE(with_lines);
  EXPECT_TRUE(with_lines->lines);
  EXPECT_EQ(with_lines->bytecode_positions, 32);  // V8 11.x's, derived
  EXPECT_EQ(with_lines->code_start, 40);
  EXPECT_EQ(with_lines->code_size, 56);
  lines["class_Code__source_position_table__ByteArray"] = 4000;  // the Code's fields beyond what is read
  EXPECT_FALSE(read(lines)->lines);
  auto without = c;
  without.erase("class_JSFunction__shared__SharedFunctionInfo");
  EXPECT_FALSE(read(without));
  auto compressed = c;
  compressed["TaggedSize"] = 4;
  EXPECT_FALSE(read(compressed));
  auto far = c;
  far["off_fp_bytecode_offset"] = -4096;
  EXPECT_FALSE(read(far));
  auto odd = c;
  odd["off_fp_function"] = -12;
  EXPECT_FALSE(read(odd));
  EXPECT_TRUE(runtimes::MayBeNode("/usr/bin/node"));
  EXPECT_TRUE(runtimes::MayBeNode("/usr/lib/x86_64-linux-gnu/libnode.so.115"));
  EXPECT_TRUE(runtimes::MayBeNode("/opt/node20"));
  EXPECT_FALSE(runtimes::MayBeNode("/usr/bin/nodemon"));
  EXPECT_FALSE(runtimes::MayBeNode("/usr/bin/python3"));
}

}  // namespace
}  // namespace arcprof::testing
