// V8/Node named with no flag: this machine's node (with its v8dbg_*
// constants) recorded with `record -- node split.js` and as a whole machine,
// its JavaScript frames read in BPF from V8's frame-pointer chain and put in
// place of the trampoline, handler and JIT frames that ran them.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
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

std::vector<SampledStack> UserStacks(const Profile& p) { return ProgramStacks(p, "split.js", "split.js", FrameKind::kJs); }

SplitMeasures Measure(const Profile& p) { return MeasureSplit(UserStacks(p), "(top level)"); }

std::string Describe(const Profile& p) { return DescribeStacks(p, UserStacks(p), "[js]", {"node.", "runtimes."}); }

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

// The whole machine for `seconds` while node runs split.js (started first,
// so that it is recognized from its mappings as an existing process).
Profile RecordMachine(const TempDir& tmp, double seconds) {
  const std::string db = tmp.path("machine.db");
  Subprocess node({kNode, kProgram, std::to_string(seconds + 6)});
  std::this_thread::sleep_for(std::chrono::milliseconds(1000));
  // A whole loaded machine: a ring large enough that node's samples are kept.
  Subprocess rec({kArcprof, "record", "-q", "-a", "-d", std::to_string(seconds), "--buffer-mb", "64", "-o", db});
  EXPECT_EQ(rec.Wait(), 0) << rec.stderr_text();
  return LoadCapture(db);
}

void ExpectSplitAndChains(const Profile& p, const char* mode) {
  const SplitMeasures m = Measure(p);
  printf("measured %s split %.4f full %.4f js %llu\n", mode, m.split(), m.full_share(),
         static_cast<unsigned long long>(m.main));
  ASSERT_GT(m.main, 150u) << Describe(p);
  // 10 runs of each mode on the loaded build machine (load 16-20 on 2
  // cores, 160-740 samples a run): split 0.703-0.810 (pooled 0.751-0.762),
  // full chains 0.984-0.998. The goals are 2 points (pooled) and 97%
  // (docs/performance.md); these thresholds guard against regressions with
  // margin below the worst run.
  EXPECT_NEAR(m.split(), 0.75, 0.12) << m.alpha << " alpha, " << m.beta << " beta\n" << Describe(p);
  EXPECT_GE(m.full_share(), 0.95) << m.full << " of " << m.main << "\n" << Describe(p);
}

TEST(NodeNoFlag, SplitAndFullChains) {
  REQUIRE_NODE();
  TempDir tmp;
  ExpectSplitAndChains(RecordCommand(tmp, {}, {"3"}), "command");
}

TEST(NodeNoFlag, WholeMachine) {
  REQUIRE_NODE();
  TempDir tmp;
  ExpectSplitAndChains(RecordMachine(tmp, 3), "machine");
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

// Names carry the file and the function's line.
TEST(NodeNoFlag, NamesCarryFileAndLine) {
  REQUIRE_NODE();
  TempDir tmp;
  Profile p = RecordCommand(tmp, {}, {"2"});
  std::map<std::string, uint64_t> lines;
  for (const FrameRecord& f : p.frames.all()) {
    if (f.kind == FrameKind::kJs && p.frames.module_of(f) == kProgram) lines[f.symbol] = SourceLine(f.address);
  }
  EXPECT_EQ(lines["alpha"], 13u) << Describe(p);
  EXPECT_EQ(lines["beta"], 47u) << Describe(p);
  EXPECT_EQ(lines["drive"], 115u) << Describe(p);
  EXPECT_EQ(lines["(top level)"], 1u) << Describe(p);
}

// A "node" exporting V8's constants over crafted frame chains: a chain that
// loops, one deeper than the walk's bound, one into unmapped memory, functions
// whose shared info is not a SharedFunctionInfo, and a 100,000-character
// name. The walk stops at its bound with a counted reason, nothing is
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

INSTANTIATE_TEST_SUITE_P(Chains, HostileNodeChains, ::testing::Values("loop", "deep", "fault", "garbage", "huge"));

// A binary named node that is not node (a copy of dash): not recognized,
// recorded as any program.
TEST(HostileNode, NotNodeIsLeftAlone) {
  ARCPROF_REQUIRE_RECORD_CAPABLE();
  TempDir tmp;
  const std::string fake = tmp.path("node");
  std::filesystem::copy_file("/bin/dash", fake);
  std::filesystem::permissions(fake, std::filesystem::perms::owner_all);
  const std::string db = tmp.path("dash.db");
  Subprocess rec({kArcprof, "record", "-q", "-o", db, "--", fake, "-c",
                  "i=0; while [ $i -lt 400000 ]; do i=$((i+1)); done"});
  ASSERT_EQ(rec.Wait(), 0) << rec.stderr_text();
  Profile p = LoadCapture(db);
  EXPECT_EQ(Counter(p, "node.processes_recognized"), 0);
  EXPECT_EQ(Counter(p, "runtimes.samples"), 0);
  EXPECT_GT(Counter(p, "samples_total"), 50);
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
