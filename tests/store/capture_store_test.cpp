#include "store/capture_store.h"

#include <gtest/gtest.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <tuple>
#include <fstream>
#include <random>

#include "model/metric.h"
#include "model/profile_merge.h"
#include "tests/model/test_profiles.h"
#include "tests/layer_names.h"
#include "tests/store/capture_sql.h"

namespace arcprof {
namespace {

using testing::LargeProfile;
using testing::SampleProfile;
using testing::TempDir;
using testing::ExecSql;
using testing::Restamp;

std::string ReadBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void WriteBytes(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << bytes;
}

// Every capture error is one line that names the file, with exit code 2.
void ExpectCaptureError(const std::string& path, const std::string& expected_part) {
  auto result = ReadCapture(path);
  ASSERT_FALSE(result.ok()) << "expected an error containing: " << expected_part;
  const Error& error = result.error();
  EXPECT_EQ(error.kind, ErrorKind::kCapture);
  EXPECT_EQ(error.message.find('\n'), std::string::npos) << error.message;
  EXPECT_EQ(error.message.rfind(path + ": ", 0), 0u) << error.message;
  EXPECT_NE(error.message.find(expected_part), std::string::npos) << error.message;
}

// A tree as {stack of frame contents, root first} -> (n, base, offcpu): equal
// for equal trees whatever their node and frame ids.
std::map<std::vector<std::string>, std::tuple<uint64_t, uint64_t, uint64_t>> TreeByPath(const Profile& p, size_t t) {
  std::map<std::vector<std::string>, std::tuple<uint64_t, uint64_t, uint64_t>> out;
  const auto& nodes = p.threads[t].tree.nodes();
  std::vector<std::vector<std::string>> paths(nodes.size());
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (i > 0) {
      const FrameRecord& f = p.frames.at(nodes[i].frame);
      paths[i] = paths[nodes[i].parent];
      paths[i].push_back(p.frames.module_of(f) + "|" + f.symbol + "|" + std::to_string(f.address) + "|" +
                         std::to_string(static_cast<int>(f.kind)) + "|" +
                         std::to_string(static_cast<int>(f.reason)) + "|" + (f.inlined ? "i" : ""));
    }
    const auto offcpu = p.ValueIndex("offcpu");
    out[paths[i]] = {nodes[i].n, p.threads[t].tree.value(static_cast<uint32_t>(i), kSamplesValue),
                     offcpu ? p.threads[t].tree.value(static_cast<uint32_t>(i), *offcpu) : 0};
  }
  return out;
}

void ExpectSameProfile(const Profile& a, const Profile& b) {
  EXPECT_EQ(a.meta.host, b.meta.host);
  EXPECT_EQ(a.meta.kernel, b.meta.kernel);
  EXPECT_EQ(a.meta.start_monotonic_ns, b.meta.start_monotonic_ns);
  EXPECT_EQ(a.meta.end_monotonic_ns, b.meta.end_monotonic_ns);
  EXPECT_EQ(a.meta.start_unix_ns, b.meta.start_unix_ns);
  EXPECT_EQ(a.meta.event, b.meta.event);
  EXPECT_EQ(a.meta.frequency_hz, b.meta.frequency_hz);
  EXPECT_EQ(a.meta.command_line, b.meta.command_line);
  EXPECT_EQ(a.meta.target, b.meta.target);
  EXPECT_EQ(a.meta.call_graph, b.meta.call_graph);
  EXPECT_EQ(a.meta.arcprof_version, b.meta.arcprof_version);
  // Ids are the file's to choose (schema 2 orders frames by module and
  // address, nodes depth-first): compare contents, not positions.
  auto sorted_frames = [](const Profile& p) {
    std::vector<std::tuple<std::string, uint64_t, std::string, int, int, bool>> out;
    for (const FrameRecord& f : p.frames.all()) {
      out.emplace_back(p.frames.module_of(f), f.address, f.symbol, static_cast<int>(f.kind), static_cast<int>(f.reason), f.inlined);
    }
    std::sort(out.begin(), out.end());
    return out;
  };
  EXPECT_EQ(sorted_frames(a), sorted_frames(b));
  ASSERT_EQ(a.threads.size(), b.threads.size());
  for (size_t i = 0; i < a.threads.size(); ++i) {
    EXPECT_EQ(a.threads[i].pid, b.threads[i].pid);
    EXPECT_EQ(a.threads[i].tid, b.threads[i].tid);
    EXPECT_EQ(a.threads[i].comm, b.threads[i].comm);
    EXPECT_EQ(a.threads[i].process_comm, b.threads[i].process_comm);
    EXPECT_EQ(a.threads[i].cmdline, b.threads[i].cmdline);
    EXPECT_EQ(a.threads[i].process_start_ns, b.threads[i].process_start_ns);
  }
  ASSERT_EQ(a.threads.size(), b.threads.size());
  for (size_t t = 0; t < a.threads.size(); ++t) {
    EXPECT_EQ(a.threads[t].tree.nodes().size(), b.threads[t].tree.nodes().size()) << "thread " << t;
    EXPECT_EQ(TreeByPath(a, t), TreeByPath(b, t)) << "thread " << t;
  }
  EXPECT_EQ(a.counters, b.counters);
}

TEST(CaptureStore, RoundTripKeepsEverything) {
  TempDir dir;
  const Profile original = SampleProfile();
  const std::string path = dir.File("arcprof.db");
  ASSERT_TRUE(WriteCapture(path, original).ok());
  auto read = ReadCapture(path);
  ASSERT_TRUE(read.ok()) << read.error().message;
  ExpectSameProfile(original, *read);
  EXPECT_EQ(read->meta.schema_version, kCaptureSchemaVersion);
  EXPECT_EQ(read->total_samples(), 1995u);
  // Kernel addresses do not fit a signed 64-bit column and must survive anyway.
  bool kernel_address = false;
  for (const FrameRecord& f : read->frames.all()) kernel_address = kernel_address || f.address == 0xffffffff81a00000ull;
  EXPECT_TRUE(kernel_address);
  // Nothing but the capture is left in the directory.
  EXPECT_EQ(dir.Entries(), std::vector<std::string>{"arcprof.db"});
}

// Schema 1 (a row per frame and node) is still read.
// A value type the reader has never heard of (a PMU counter, say) is declared
// in the capture by name and unit, read back as is, merges by name and is a
// --metric of its own.
TEST(CaptureStore, AnyDeclaredValueTypeRoundTripsAndIsAMetric) {
  TempDir dir;
  Profile original = SampleProfile();
  const size_t cycles = original.DeclareValue(ValueType{"cycles", "count"});
  ASSERT_EQ(cycles, 1u);
  uint64_t total = 0;
  for (ThreadRecord& thread : original.threads) {
    for (uint32_t i = 1; i < thread.tree.size(); i += 2) {
      thread.tree.Add(i, 0, cycles, 1000 + i);
      total += 1000 + i;
    }
  }
  const std::string path = dir.File("arcprof.db");
  ASSERT_TRUE(WriteCapture(path, original).ok());
  auto read = ReadCapture(path);
  ASSERT_TRUE(read.ok()) << read.error().message;
  ASSERT_EQ(read->value_types.size(), 2u);
  EXPECT_EQ(read->value_types[1], (ValueType{"cycles", "count"}));
  uint64_t read_total = 0;
  for (const ThreadRecord& thread : read->threads) read_total += thread.tree.total(1);
  EXPECT_EQ(read_total, total);
  EXPECT_EQ(read->total_samples(), original.total_samples());

  auto metric = Metric::Select(*read, "cycles");
  ASSERT_TRUE(metric.ok()) << metric.error().message;
  EXPECT_EQ(metric->unit(), "count");
  uint64_t metric_total = 0;
  for (const ThreadRecord& thread : read->threads) metric_total += metric->Total(thread);
  EXPECT_EQ(metric_total, total);
  // Unknown names list the declared ones.
  auto bogus = Metric::Select(*read, "bogus");
  ASSERT_FALSE(bogus.ok());
  EXPECT_NE(bogus.error().message.find("cycles"), std::string::npos) << bogus.error().message;

  // A merge with a profile that declares types in another order matches them by name.
  Profile other;
  other.DeclareValue(ValueType{"offcpu", "nanoseconds"});
  other.DeclareValue(ValueType{"cycles", "count"});
  const uint32_t leaf = other.threads[other.ThreadIndex(1, 1)].tree.AddStack(
      std::vector<uint32_t>{other.frames.Intern("m", FrameRecord{0, "f", 0, FrameKind::kNative})}, 1);
  other.threads[0].tree.Add(leaf, 0, 2, 7);
  Profile merged = *read;
  MergeProfile(merged, other);
  ASSERT_EQ(merged.value_types.size(), 3u);
  uint64_t merged_cycles = 0;
  for (const ThreadRecord& thread : merged.threads) merged_cycles += thread.tree.total(1);
  EXPECT_EQ(merged_cycles, total + 7);
}

TEST(CaptureStore, Schema1RoundTrips) {
  TempDir dir;
  const Profile original = SampleProfile();
  const std::string path = dir.File("old.db");
  testing::CopyFixture("schema1.db", path);
  auto read = ReadCapture(path);
  ASSERT_TRUE(read.ok()) << read.error().message;
  ExpectSameProfile(original, *read);
  EXPECT_EQ(read->meta.schema_version, 1);
}

// The profile of the fixtures large-schema{1..7}.db: 3,000 stacks of 20
// frames and off-CPU time on every fifth node.
Profile LargeFixtureProfile() {
  Profile profile = testing::LargeProfile(100'000, 3'000, 20);
  const size_t offcpu = profile.DeclareValue(ValueType{"offcpu", "nanoseconds"});
  for (auto& thread : profile.threads) {
    for (uint32_t i = 0; i < thread.tree.size(); i += 5) thread.tree.Add(i, 0, offcpu, 1000 * i + 1);
  }
  return profile;
}

// Captures of every older schema still read, to the same profile (schema 4
// changed only how tree blocks code their nodes). The older ones are the
// committed fixtures written by the writers of their time; the current one is
// written now.
TEST(CaptureStore, OlderSchemasReadTheSame) {
  TempDir dir;
  const Profile original = LargeFixtureProfile();
  std::vector<uintmax_t> sizes;
  for (int version = 1; version <= kCaptureSchemaVersion; ++version) {
    const std::string path = dir.File("v" + std::to_string(version) + ".db");
    if (version < kCaptureSchemaVersion) {
      testing::CopyFixture("large-schema" + std::to_string(version) + ".db", path);
    } else {
      ASSERT_TRUE(WriteCapture(path, original).ok());
    }
    auto read = ReadCapture(path);
    ASSERT_TRUE(read.ok()) << read.error().message;
    EXPECT_EQ(read->meta.schema_version, version);
    ExpectSameProfile(original, *read);
    sizes.push_back(std::filesystem::file_size(path));
  }
  EXPECT_LT(sizes[3], sizes[2]);  // schema 4's trees are smaller than schema 3's
  EXPECT_LT(sizes[4], sizes[3]);  // schema 5: sparse off-CPU values, NUL-ended symbols, small tables as blocks
}

// Schema 7: python and js frames keep their kind, file, function and line
// (and column). A file of an older schema that holds them is refused: no
// writer of those schemas had the kinds.
TEST(CaptureStore, RuntimeFrameKindsRoundTrip) {
  TempDir dir;
  Profile original = SampleProfile();
  FrameRecord py;
  py.symbol = "Server.handle";
  py.kind = FrameKind::kPython;
  py.address = SourceAddress(42);
  FrameRecord js;
  js.symbol = "render";
  js.kind = FrameKind::kJs;
  js.address = SourceAddress(7, 15);
  const uint32_t py_id = original.frames.Intern("/srv/app.py", py);
  const uint32_t js_id = original.frames.Intern("/srv/app.js", js);
  original.threads[0].tree.AddStack(std::vector<uint32_t>{py_id, js_id}, 5);
  const std::string path = dir.File("rt.db");
  ASSERT_TRUE(WriteCapture(path, original).ok());
  auto read = ReadCapture(path);
  ASSERT_TRUE(read.ok()) << read.error().message;
  ExpectSameProfile(original, *read);
  int found = 0;
  for (const FrameRecord& f : read->frames.all()) {
    if (f.symbol == "Server.handle") {
      ++found;
      EXPECT_EQ(f.kind, FrameKind::kPython);
      EXPECT_EQ(read->frames.module_of(f), "/srv/app.py");
      EXPECT_EQ(SourceLine(f.address), 42u);
    } else if (f.symbol == "render") {
      ++found;
      EXPECT_EQ(f.kind, FrameKind::kJs);
      EXPECT_EQ(read->frames.module_of(f), "/srv/app.js");
      EXPECT_EQ(SourceLine(f.address), 7u);
      EXPECT_EQ(SourceColumn(f.address), 15u);
    }
  }
  EXPECT_EQ(found, 2);
  // The schema before: its fixture (written by the schema 6 writer) reads the
  // same; the same capture written by the schema 7 writer reads the same, and
  // relabelled as schema 6 (whose thread rows it has) is refused.
  const std::string v6 = dir.File("v6.db");
  testing::CopyFixture("schema6.db", v6);
  auto six = ReadCapture(v6);
  ASSERT_TRUE(six.ok()) << six.error().message;
  ExpectSameProfile(SampleProfile(), *six);
  EXPECT_EQ(six->meta.schema_version, 6);
  const std::string v7 = dir.File("v7.db");
  testing::CopyFixture("runtime-kinds-schema7.db", v7);
  auto seven = ReadCapture(v7);
  ASSERT_TRUE(seven.ok()) << seven.error().message;
  ExpectSameProfile(original, *seven);
  ExecSql(v7, "PRAGMA user_version = 6; UPDATE meta SET value = '6' WHERE capture_id = 0 AND key = 'schema_version'");
  Restamp(v7);
  auto old = ReadCapture(v7);
  ASSERT_FALSE(old.ok());
  EXPECT_NE(old.error().message.find(" frame, which schema 6 does not have"), std::string::npos)
      << old.error().message;
}

// Schema 6: each thread keeps its process's identity (container, pod,
// service, cgroup, namespaced pid); older schemas read with none.
TEST(CaptureStore, ProcessIdentityRoundTrips) {
  TempDir dir;
  Profile original = SampleProfile();
  ASSERT_GE(original.threads.size(), 2u);
  model::ProcessIdentity& id = original.threads[0].identity;
  id.container_id = std::string(64, 'a');
  id.container_runtime = "containerd";
  id.pod_uid = "12345678-90ab-cdef-1234-567890abcdef";
  id.qos_class = "burstable";
  id.service_name = "checkout";
  id.cgroup = "/kubepods.slice/x/cri-containerd-" + std::string(64, 'a') + ".scope";
  id.ns_pid = 1;
  original.threads[1].identity.service_name = "nginx";
  original.threads[1].identity.cgroup = "/system.slice/nginx.service";
  const std::string path = dir.File("identity.db");
  ASSERT_TRUE(WriteCapture(path, original).ok());
  auto read = ReadCapture(path);
  ASSERT_TRUE(read.ok()) << read.error().message;
  for (const ThreadRecord& t : original.threads) {
    bool found = false;
    for (const ThreadRecord& r : read->threads) {
      if (r.pid != t.pid || r.tid != t.tid) continue;
      found = true;
      EXPECT_EQ(r.identity, t.identity) << t.pid << "/" << t.tid;
    }
    EXPECT_TRUE(found);
  }
  const std::string old = dir.File("v5.db");
  testing::CopyFixture("schema5.db", old);
  auto v5 = ReadCapture(old);
  ASSERT_TRUE(v5.ok()) << v5.error().message;
  for (const ThreadRecord& t : v5->threads) EXPECT_TRUE(t.identity.empty());
}

// Schema 8: each thread keeps its process's start, and two processes that
// held one pid (two starts) stay two records when captures are read or
// merged; the same process in two windows is one. Older schemas read with
// start 0.
TEST(CaptureStore, ProcessStartKeepsAReusedPidsProcessesApart) {
  TempDir dir;
  Profile first = SampleProfile();
  ASSERT_FALSE(first.threads.empty());
  for (ThreadRecord& t : first.threads) t.process_start_ns = 1'000'000'000 + 10'000'000ull * t.pid;
  Profile second = first;
  // The first thread's pid, later held by another program (every thread of
  // it).
  const ThreadRecord reused = first.threads[0];
  size_t threads_of_reused = 0;
  for (ThreadRecord& t : second.threads) {
    if (t.pid != reused.pid) continue;
    ++threads_of_reused;
    t.process_start_ns += 60'000'000'000;
    t.comm = t.process_comm = "second";
  }
  ASSERT_TRUE(WriteCapture(dir.File("a.db"), first).ok());
  ASSERT_TRUE(WriteCapture(dir.File("b.db"), second).ok());
  auto a = ReadCapture(dir.File("a.db"));
  ASSERT_TRUE(a.ok()) << a.error().message;
  ExpectSameProfile(first, *a);
  for (const ThreadRecord& t : a->threads) EXPECT_EQ(t.process_start_ns, 1'000'000'000 + 10'000'000ull * t.pid);
  auto b = ReadCapture(dir.File("b.db"));
  ASSERT_TRUE(b.ok()) << b.error().message;
  Profile merged = *a;
  model::MergeProfile(merged, *b);
  size_t of_reused_pid = 0;
  for (const ThreadRecord& t : merged.threads) {
    ThreadRecord like = t;
    like.process_start_ns = 1'000'000'000 + 10'000'000ull * t.pid;
    const uint64_t once = first.threads[first.ThreadIndex(like)].tree.total();
    if (t.pid != reused.pid) {
      // Every other thread is the same process in both: one record of both.
      EXPECT_EQ(t.tree.total(), 2 * once) << t.pid << "/" << t.tid;
      continue;
    }
    // Two processes held the pid: a record of each, each with its samples.
    ++of_reused_pid;
    EXPECT_EQ(t.tree.total(), once) << t.pid << "/" << t.tid;
    if (t.process_start_ns != like.process_start_ns) EXPECT_EQ(t.comm, "second");
  }
  EXPECT_EQ(of_reused_pid, 2 * threads_of_reused);
  EXPECT_EQ(merged.total_samples(), 2 * first.total_samples());
  // The merge written and read again: still two.
  ASSERT_TRUE(WriteCapture(dir.File("m.db"), merged).ok());
  auto m = ReadCapture(dir.File("m.db"));
  ASSERT_TRUE(m.ok()) << m.error().message;
  EXPECT_EQ(m->threads.size(), merged.threads.size());
  // Schema 7 (the fixture of its writer): every start is 0 (unknown).
  const std::string v7 = dir.File("v7.db");
  testing::CopyFixture("schema7.db", v7);
  auto seven = ReadCapture(v7);
  ASSERT_TRUE(seven.ok()) << seven.error().message;
  ExpectSameProfile(SampleProfile(), *seven);
  for (const ThreadRecord& t : seven->threads) EXPECT_EQ(t.process_start_ns, 0u);
}

// Schema 2 is a fraction of schema 1 for deep, bushy trees (the point of it).
TEST(CaptureStore, Schema2IsSmallerThanSchema1) {
  TempDir dir;
  const Profile profile = LargeFixtureProfile();
  testing::CopyFixture("large-schema1.db", dir.File("1.db"));
  ASSERT_TRUE(WriteCapture(dir.File("2.db"), profile).ok());
  const auto v1 = std::filesystem::file_size(dir.File("1.db"));
  const auto v2 = std::filesystem::file_size(dir.File("2.db"));
  EXPECT_LT(v2 * 4, v1) << v1 << " vs " << v2 << " bytes";
  auto read = ReadCapture(dir.File("2.db"));
  ASSERT_TRUE(read.ok()) << read.error().message;
  ExpectSameProfile(profile, *read);
}

TEST(CaptureStore, EmptyProfileRoundTrips) {
  TempDir dir;
  Profile empty;
  ASSERT_TRUE(WriteCapture(dir.File("empty.db"), empty).ok());
  auto read = ReadCapture(dir.File("empty.db"));
  ASSERT_TRUE(read.ok()) << read.error().message;
  ExpectSameProfile(empty, *read);
}

TEST(CaptureStore, FileIsMode0600EvenWithAPermissiveUmask) {
  TempDir dir;
  const mode_t old_umask = ::umask(0);
  const auto result = WriteCapture(dir.File("arcprof.db"), SampleProfile());
  ::umask(old_umask);
  ASSERT_TRUE(result.ok()) << result.error().message;
  struct stat st {};
  ASSERT_EQ(::stat(dir.File("arcprof.db").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0600u);
}

TEST(CaptureStore, SymlinkAtTheTargetIsNeitherFollowedNorReplaced) {
  TempDir dir;
  const std::string victim = dir.File("victim");
  WriteBytes(victim, "precious");
  const std::string path = dir.File("arcprof.db");
  ASSERT_EQ(::symlink(victim.c_str(), path.c_str()), 0);
  auto written = WriteCapture(path, SampleProfile());
  ASSERT_FALSE(written.ok());
  EXPECT_NE(written.error().message.find("symbolic link"), std::string::npos) << written.error().message;
  EXPECT_EQ(ReadBytes(victim), "precious");
  struct stat st {};
  ASSERT_EQ(::lstat(path.c_str(), &st), 0);
  EXPECT_TRUE(S_ISLNK(st.st_mode));
  EXPECT_EQ(dir.Entries(), (std::vector<std::string>{"arcprof.db", "victim"}));
}

TEST(CaptureStore, OverwritesAnOlderCapture) {
  TempDir dir;
  const std::string path = dir.File("arcprof.db");
  Profile first = SampleProfile();
  first.meta.host = "first";
  ASSERT_TRUE(WriteCapture(path, first).ok());
  ASSERT_TRUE(WriteCapture(path, SampleProfile()).ok());
  auto read = ReadCapture(path);
  ASSERT_TRUE(read.ok());
  EXPECT_EQ(read->meta.host, "testhost");
}

TEST(CaptureStore, FailedWriteLeavesNoFile) {
  TempDir dir;
  // The target is a directory: rename() fails after the data was written.
  ASSERT_EQ(::mkdir(dir.File("adir").c_str(), 0700), 0);
  auto result = WriteCapture(dir.File("adir"), SampleProfile());
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.error().kind, ErrorKind::kCapture);
  EXPECT_EQ(dir.Entries(), std::vector<std::string>{"adir"});
  // A directory that does not exist.
  result = WriteCapture(dir.File("missing/arcprof.db"), SampleProfile());
  ASSERT_FALSE(result.ok());
  EXPECT_NE(result.error().message.find("cannot create"), std::string::npos) << result.error().message;
}

TEST(CaptureStore, RejectsAnInconsistentProfileBeforeWriting) {
  TempDir dir;
  Profile broken = SampleProfile();
  broken.threads[0].tree.AddStack(std::vector<uint32_t>{999}, 1);  // no such frame
  auto result = WriteCapture(dir.File("arcprof.db"), broken);
  ASSERT_FALSE(result.ok());
  EXPECT_TRUE(dir.Entries().empty());
}

TEST(CaptureStore, MillionSamplesCostFarLessThanTenBytesEach) {
  TempDir dir;
  constexpr uint64_t kSamples = 1'000'000;
  const Profile profile = LargeProfile(kSamples, 300, 20);
  ASSERT_EQ(profile.total_samples(), kSamples);
  ASSERT_TRUE(WriteCapture(dir.File("big.db"), profile).ok());
  const auto size = std::filesystem::file_size(dir.File("big.db"));
  EXPECT_LE(size, 10 * kSamples);
  // Only tree nodes are stored: a few hundred stacks stay well under 1 MB.
  EXPECT_LT(size, 1'000'000u) << size << " bytes";
  auto read = ReadCapture(dir.File("big.db"));
  ASSERT_TRUE(read.ok()) << read.error().message;
  EXPECT_EQ(read->total_samples(), kSamples);
}

TEST(CaptureStore, WindowsAreMergedNodeByNodeAndCountersSummed) {
  TempDir dir;
  const std::string path = dir.File("arcprof.db");
  const Profile original = SampleProfile();
  // Schema 1 (a row per node), so that SQL can append a window.
  testing::CopyFixture("schema1.db", path);
  // A second window with the same trees, as continuous capture appends them.
  ExecSql(path,
          "INSERT INTO windows (id, capture_id, start_ns, end_ns) VALUES (2, 1, 11000000000, "
          "21000000000);"
          "INSERT INTO nodes SELECT 2, thread_id, node_id, parent_id, frame_id, n, base FROM nodes "
          "WHERE window_id = 1;"
          "INSERT INTO counters SELECT 2, name, value FROM counters WHERE window_id = 1;");
  Restamp(path);
  auto read = ReadCapture(path);
  ASSERT_TRUE(read.ok()) << read.error().message;
  EXPECT_EQ(read->total_samples(), 2 * 1995u);
  EXPECT_EQ(read->counters.at("lost_samples"), 14);
  ASSERT_EQ(read->threads.size(), original.threads.size());
  for (size_t t = 0; t < original.threads.size(); ++t) {
    ASSERT_EQ(read->threads[t].tree.nodes().size(), original.threads[t].tree.nodes().size());
    for (size_t i = 0; i < original.threads[t].tree.nodes().size(); ++i) {
      EXPECT_EQ(read->threads[t].tree.nodes()[i].n, 2 * original.threads[t].tree.nodes()[i].n);
    }
  }
}

TEST(CaptureStore, WindowWithADifferentTreeShapeMergesByFrame) {
  TempDir dir;
  const std::string path = dir.File("arcprof.db");
  testing::CopyFixture("schema1.db", path);
  // Window 2 of thread 3 (systemd): only the kernel entry frame (frame 0), 4 samples,
  // stored with node id 1 as the first window stored it.
  ExecSql(path,
          "INSERT INTO windows VALUES (2, 1, 0, 0);"
          "INSERT INTO nodes VALUES (2, 3, 0, NULL, NULL, 0, 0);"
          "INSERT INTO nodes VALUES (2, 3, 1, 0, 0, 4, 4);");
  Restamp(path);
  auto read = ReadCapture(path);
  ASSERT_TRUE(read.ok()) << read.error().message;
  const CallTree& tree = read->threads[3].tree;
  const auto& nodes = tree.nodes();
  ASSERT_EQ(nodes.size(), 3u);  // root, entry_SYSCALL_64, _raw_spin_unlock_irqrestore
  EXPECT_EQ(nodes[1].frame, 0u);
  EXPECT_EQ(tree.value(1, kSamplesValue), 4u);
  EXPECT_EQ(tree.value(2, kSamplesValue), 15u);
  EXPECT_EQ(read->total_samples(), 1999u);
}

// ----------------------------------------------------------- bad captures

TEST(CaptureErrors, MissingFile) {
  TempDir dir;
  ExpectCaptureError(dir.File("nope.db"), "no such capture file");
}

TEST(CaptureErrors, EmptyFile) {
  TempDir dir;
  WriteBytes(dir.File("empty.db"), "");
  ExpectCaptureError(dir.File("empty.db"), "not an arcprof capture (empty file)");
}

TEST(CaptureErrors, Directory) {
  TempDir dir;
  ExpectCaptureError(dir.path(), "not a regular file");
}

TEST(CaptureErrors, RandomBytes) {
  TempDir dir;
  std::mt19937 random(42);
  std::string bytes(8192, '\0');
  for (char& c : bytes) c = static_cast<char>(random());
  WriteBytes(dir.File("random.db"), bytes);
  ExpectCaptureError(dir.File("random.db"), "not an arcprof capture (not a SQLite file)");
}

TEST(CaptureErrors, TextFile) {
  TempDir dir;
  WriteBytes(dir.File("text.db"), "main;f_heavy 750\n");
  ExpectCaptureError(dir.File("text.db"), "not an arcprof capture (not a SQLite file)");
}

TEST(CaptureErrors, TruncatedToHalf) {
  TempDir dir;
  const std::string path = dir.File("arcprof.db");
  ASSERT_TRUE(WriteCapture(path, LargeProfile(100'000, 3000, 20)).ok());
  const auto size = std::filesystem::file_size(path);
  ASSERT_GT(size, 16384u);
  std::filesystem::resize_file(path, size / 2);
  ExpectCaptureError(path, "corrupt capture");
}

TEST(CaptureErrors, TruncatedAtEveryPage) {
  TempDir dir;
  const std::string good = dir.File("good.db");
  ASSERT_TRUE(WriteCapture(good, SampleProfile()).ok());
  const std::string bytes = ReadBytes(good);
  // Any cut must give an error, never a crash and never a silently short profile.
  for (size_t cut = 512; cut < bytes.size(); cut += 4096) {
    WriteBytes(dir.File("cut.db"), bytes.substr(0, cut));
    auto result = ReadCapture(dir.File("cut.db"));
    ASSERT_FALSE(result.ok()) << "cut at " << cut;
    EXPECT_EQ(result.error().kind, ErrorKind::kCapture);
  }
}

TEST(CaptureErrors, ForeignSqliteFile) {
  TempDir dir;
  const std::string path = dir.File("other.db");
  ExecSql(path, "CREATE TABLE meta (key TEXT, value TEXT); INSERT INTO meta VALUES ('a', 'b');");
  ExpectCaptureError(path, "not an arcprof capture (foreign SQLite file)");
}

TEST(CaptureErrors, NewerSchemaVersionInTheHeader) {
  TempDir dir;
  const std::string path = dir.File("arcprof.db");
  ASSERT_TRUE(WriteCapture(path, SampleProfile()).ok());
  const std::string newer = std::to_string(kCaptureSchemaVersion + 1);
  ExecSql(path, "PRAGMA user_version = " + newer + ";");
  ExpectCaptureError(path, "capture schema version " + newer + " is newer than this arcprof reads (" +
                               std::to_string(kCaptureSchemaVersion) + "); upgrade arcprof");
}

TEST(CaptureErrors, NewerSchemaVersionInMeta) {
  TempDir dir;
  const std::string path = dir.File("arcprof.db");
  ASSERT_TRUE(WriteCapture(path, SampleProfile()).ok());
  const std::string newer = std::to_string(kCaptureSchemaVersion + 1);
  ExecSql(path, "UPDATE meta SET value = '" + newer + "' WHERE capture_id = 0 AND key = 'schema_version';");
  ExpectCaptureError(path, "capture schema version " + newer + " is newer");
}

TEST(CaptureErrors, MissingTable) {
  TempDir dir;
  const std::string path = dir.File("arcprof.db");
  ASSERT_TRUE(WriteCapture(path, SampleProfile()).ok());
  ExecSql(path, "DROP TABLE row_blocks;");
  ExpectCaptureError(path, "table 'row_blocks' is missing");
  testing::CopyFixture("schema4.db", path);
  ExecSql(path, "DROP TABLE counters;");
  ExpectCaptureError(path, "table 'counters' is missing");
}

TEST(CaptureErrors, TableReplacedByAView) {
  TempDir dir;
  const std::string path = dir.File("arcprof.db");
  testing::CopyFixture("schema4.db", path);
  ExecSql(path,
          "DROP TABLE counters; CREATE VIEW counters AS WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL "
          "SELECT x + 1 FROM c) SELECT 1 AS window_id, 'n' AS name, x AS value FROM c;");
  ExpectCaptureError(path, "unexpected view 'counters'");
}

struct BrokenReference {
  const char* name;
  const char* sql;
  const char* expected;
};

// Stable, readable test names for ctest (the default prints raw bytes).
void PrintTo(const BrokenReference& b, std::ostream* out) { *out << b.name; }

class CaptureReferences : public ::testing::TestWithParam<BrokenReference> {};

TEST_P(CaptureReferences, AreRejected) {
  TempDir dir;
  const std::string path = dir.File("arcprof.db");
  // Schema 1 keeps a row per frame and node, which SQL can break one by one;
  // schema 2's blocks have their own cases in capture_hostile_test.cpp.
  testing::CopyFixture("schema1.db", path);
  ExecSql(path, GetParam().sql);
  ExpectCaptureError(path, GetParam().expected);
}

INSTANTIATE_TEST_SUITE_P(
    CaptureErrors, CaptureReferences,
    ::testing::Values(
        BrokenReference{"NodeFrameOutOfRange", "UPDATE nodes SET frame_id = 999 WHERE thread_id = 0 AND node_id = 2",
                        "invalid parent or frame"},
        BrokenReference{"NodeParentIsLater", "UPDATE nodes SET parent_id = 5 WHERE thread_id = 0 AND node_id = 2",
                        "invalid parent or frame"},
        BrokenReference{"NodeParentNegative", "UPDATE nodes SET parent_id = -1 WHERE thread_id = 0 AND node_id = 2",
                        "invalid parent or frame"},
        BrokenReference{"NodeWithoutFrame", "UPDATE nodes SET frame_id = NULL WHERE thread_id = 0 AND node_id = 2",
                        "invalid parent or frame"},
        BrokenReference{"RootWithFrame", "UPDATE nodes SET frame_id = 1 WHERE thread_id = 0 AND node_id = 0",
                        "root node has a parent or frame"},
        BrokenReference{"NodesOfUnknownThread", "UPDATE nodes SET thread_id = 40 WHERE thread_id = 3", "thread 40"},
        BrokenReference{"NodesOfUnknownWindow", "UPDATE nodes SET window_id = 9 WHERE thread_id = 3", "window 9"},
        BrokenReference{"NodeIdsWithAGap", "DELETE FROM nodes WHERE thread_id = 0 AND node_id = 1", "not dense"},
        BrokenReference{"NegativeCount", "UPDATE nodes SET n = -5 WHERE thread_id = 0 AND node_id = 3",
                        "negative count"},
        BrokenReference{"FrameOfUnknownModule", "UPDATE frames SET module_id = 99 WHERE id = 1", "names module 99"},
        BrokenReference{"UnknownFrameKind", "UPDATE frames SET kind = 9 WHERE id = 1", "invalid kind"},
        BrokenReference{"UnknownReason", "UPDATE frames SET reason = 200 WHERE id = 1", "invalid kind"},
        BrokenReference{"FrameIdsWithAGap", "DELETE FROM frames WHERE id = 3", "frame ids are not dense"},
        BrokenReference{"ThreadIdsWithAGap", "UPDATE threads SET id = 10 WHERE id = 2", "thread ids are not dense"},
        BrokenReference{"NegativePid", "UPDATE threads SET pid = -3 WHERE id = 2", "invalid pid"},
        BrokenReference{"CounterOfUnknownWindow", "UPDATE counters SET window_id = 5", "counter of a window"},
        BrokenReference{"NonNumericMeta", "UPDATE meta SET value = 'soon' WHERE key = 'start_unix_ns'",
                        "meta start_unix_ns is not a number"},
        BrokenReference{"NoSchemaVersion", "DELETE FROM meta WHERE capture_id = 0", "schema_version is missing"},
        BrokenReference{"NoCapture", "DELETE FROM captures", "holds no capture"}),
    [](const ::testing::TestParamInfo<BrokenReference>& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace arcprof
