// `arcprof merge`: captures of two machines into one file. The host is the top
// level of every view, totals are the sums, --merge-hosts folds the hosts.
#include <gtest/gtest.h>

#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "store/capture_merge.h"
#include "store/capture_store.h"
#include "reports/folded.h"
#include "reports/tprof.h"
#include "store/window_store.h"
#include "tests/loader/subprocess.h"
#include "tests/model/test_profiles.h"
#include "tests/layer_names.h"

namespace arcprof::testing {
namespace {

const std::string kArcprof = ARCPROF_BIN;

// Two machines: web1 runs the sample profile, web2 the same processes (the
// same pids) with the busy loop's samples doubled, so a merge that mixed the
// hosts' threads would show.
struct TwoHosts {
  TempDir tmp;
  std::string a = tmp.File("web1.db");
  std::string b = tmp.File("web2.db");
  uint64_t total_a = 0;
  uint64_t total_b = 0;
  TwoHosts() {
    Profile p1 = SampleProfile();
    p1.meta.host = "web1";
    Profile p2 = SampleProfile();
    p2.meta.host = "web2";
    for (size_t t = 0; t < p2.threads.size(); ++t) {
      if (p2.threads[t].pid != 900) continue;
      p2.threads[t].tree.TransformValues(kSamplesValue, [](uint32_t, uint64_t v) { return v * 2; });
    }
    p1.counters["lost_samples"] = 3;
    p2.counters["lost_samples"] = 4;
    total_a = p1.total_samples();
    total_b = p2.total_samples();
    EXPECT_TRUE(WriteCapture(a, p1).ok());
    EXPECT_TRUE(WriteCapture(b, p2).ok());
  }
};

TEST(Merge, TwoHostsSumAndTheHostIsTheTopLevel) {
  TwoHosts in;
  auto merged = MergeCaptures({in.a, in.b}, false);
  ASSERT_TRUE(merged.ok()) << merged.error().message;
  const std::string out = in.tmp.File("fleet.db");
  ASSERT_TRUE(WriteCapture(out, merged->profile).ok());
  auto fleet = ReadCapture(out);
  ASSERT_TRUE(fleet.ok()) << fleet.error().message;

  EXPECT_EQ(fleet->total_samples(), in.total_a + in.total_b);
  EXPECT_EQ(fleet->counters.at("lost_samples"), 7);
  EXPECT_EQ(fleet->meta.host, "web1,web2");
  EXPECT_TRUE(fleet->multi_host());
  // Same pids on both machines stay apart: 4 threads per host.
  EXPECT_EQ(fleet->threads.size(), 8u);

  // tprof: hosts first, each with its own total.
  TprofOptions options;
  const TprofReport report = BuildTprof(*fleet, options);
  ASSERT_EQ(report.rows.size(), 2u);
  std::map<std::string, uint64_t> by_host;
  for (const TprofRow& row : report.rows) {
    EXPECT_EQ(row.level, TprofLevel::kHost);
    by_host[row.name] = row.ticks;
    ASSERT_FALSE(row.children.empty());
    EXPECT_EQ(row.children[0].level, TprofLevel::kPid);
  }
  EXPECT_EQ(by_host["web1"], in.total_a);
  EXPECT_EQ(by_host["web2"], in.total_b);

  // Folded stacks (and so flame graphs and diff): the host is the first element.
  uint64_t folded_web2 = 0;
  for (const auto& [stack, count] : FoldStacks(*fleet, ThreadFilter{})) {
    const std::string first = stack.substr(0, stack.find(';'));
    EXPECT_TRUE(first == "web1" || first == "web2") << stack;
    if (first == "web2") folded_web2 += count;
  }
  EXPECT_EQ(folded_web2, in.total_b);
}

// A merged fleet keeps every process's identity (container, pod, service):
// --by container and the folded --group-by see it per host.
TEST(Merge, KeepsContainersPodsAndServices) {
  TempDir tmp;
  Profile p1 = SampleProfile();
  p1.meta.host = "web1";
  Profile p2 = SampleProfile();
  p2.meta.host = "web2";
  for (ThreadRecord& t : p1.threads) {
    t.identity.container_id = std::string(64, '1');
    t.identity.service_name = "checkout";
  }
  for (ThreadRecord& t : p2.threads) {
    t.identity.pod_uid = "12345678-90ab-cdef-1234-567890abcdef";
    t.identity.service_name = "cart";
  }
  const std::string a = tmp.File("a.db"), b = tmp.File("b.db"), out = tmp.File("fleet.db");
  ASSERT_TRUE(WriteCapture(a, p1).ok());
  ASSERT_TRUE(WriteCapture(b, p2).ok());
  auto merged = MergeCaptures({a, b}, false);
  ASSERT_TRUE(merged.ok()) << merged.error().message;
  ASSERT_TRUE(WriteCapture(out, merged->profile).ok());
  auto fleet = ReadCapture(out);
  ASSERT_TRUE(fleet.ok()) << fleet.error().message;
  for (const ThreadRecord& t : fleet->threads) {
    if (t.host == "web1") {
      EXPECT_EQ(t.identity.container_id, std::string(64, '1'));
      EXPECT_EQ(t.identity.service_name, "checkout");
    } else {
      EXPECT_EQ(t.identity.pod_uid, "12345678-90ab-cdef-1234-567890abcdef");
      EXPECT_EQ(t.identity.service_name, "cart");
    }
  }
  TprofOptions options;
  options.levels = {TprofLevel::kService};
  const TprofReport report = BuildTprof(*fleet, options);
  std::map<std::string, uint64_t> by_service;
  for (const TprofRow& host : report.rows) {
    for (const TprofRow& row : host.children) by_service[host.name + "/" + row.service] = row.ticks;
  }
  EXPECT_EQ(by_service["web1/checkout"], p1.total_samples());
  EXPECT_EQ(by_service["web2/cart"], p2.total_samples());
  for (const auto& [stack, count] : FoldStacks(*fleet, ThreadFilter{}, {}, "container")) {
    EXPECT_TRUE(stack.starts_with("web1;111111111111;") || stack.starts_with("web2;[no_container];")) << stack;
  }
}

TEST(Merge, MergeHostsFoldsThem) {
  TwoHosts in;
  auto merged = MergeCaptures({in.a, in.b}, true);
  ASSERT_TRUE(merged.ok()) << merged.error().message;
  const std::string out = in.tmp.File("folded.db");
  ASSERT_TRUE(WriteCapture(out, merged->profile).ok());
  auto fleet = ReadCapture(out);
  ASSERT_TRUE(fleet.ok()) << fleet.error().message;
  EXPECT_FALSE(fleet->multi_host());
  EXPECT_EQ(fleet->threads.size(), 4u);
  EXPECT_EQ(fleet->total_samples(), in.total_a + in.total_b);
  const TprofReport report = BuildTprof(*fleet, TprofOptions{});
  ASSERT_FALSE(report.rows.empty());
  EXPECT_EQ(report.rows[0].level, TprofLevel::kPid);
  EXPECT_EQ(report.rows[0].name, "busy loop_900");
  EXPECT_EQ(report.rows[0].ticks, 1090u * 3);
}

// Two one-shot recordings of one machine whose "[exited processes]" records
// (one per name of the processes folded away under thread churn) hold the
// same names in other orders, so under other tids: the merge sums each name's
// samples, never one name's with another's (also with --merge-hosts).
TEST(Merge, ExitedProcessesRecordsSumByName) {
  TempDir tmp;
  auto recording = [&](const std::string& host, const std::vector<std::pair<std::string, uint64_t>>& names) {
    Profile p = SampleProfile();
    p.meta.host = host;
    const uint32_t frames[] = {p.frames.Intern("/usr/bin/cc", FrameRecord{0, "main", 0x1000, FrameKind::kNative}),
                               p.frames.Intern("/usr/bin/cc", FrameRecord{0, "compile", 0x2000, FrameKind::kNative})};
    uint32_t tid = 1;  // the order the names were folded in (tids of recordings before they were the name's)
    for (const auto& [name, samples] : names) {
      const uint32_t i = p.ThreadIndex("", kExitedProcessesPid, tid++, 0);
      p.threads[i].comm = name;
      p.threads[i].process_comm = "[exited processes]";
      p.threads[i].tree.AddStack(frames, samples);
    }
    const std::string path = tmp.File(host + std::to_string(names.size()) + names[0].first + ".db");
    EXPECT_TRUE(WriteCapture(path, p).ok());
    return path;
  };
  const std::string a = recording("build1", {{"cc1plus", 3}, {"as", 5}});
  const std::string b = recording("build1", {{"as", 7}, {"ld", 2}, {"cc1plus", 11}});
  const std::string c = recording("build2", {{"ld", 13}, {"cc1plus", 17}});
  auto exited = [](const Profile& p) {
    std::map<std::string, uint64_t> by_name;
    std::set<std::pair<std::string, uint32_t>> ids;
    for (const ThreadRecord& t : p.threads) {
      if (t.pid != kExitedProcessesPid) continue;
      by_name[t.host + "/" + t.comm] += t.tree.total(kSamplesValue);
      EXPECT_TRUE(ids.emplace(t.host, t.tid).second) << t.comm;
    }
    return by_name;
  };
  auto merged = MergeCaptures({a, b, c}, false);
  ASSERT_TRUE(merged.ok()) << merged.error().message;
  const std::string out = tmp.File("merged.db");
  ASSERT_TRUE(WriteCapture(out, merged->profile).ok());
  auto back = ReadCapture(out);
  ASSERT_TRUE(back.ok()) << back.error().message;
  const std::map<std::string, uint64_t> want = {{"build1/cc1plus", 14}, {"build1/as", 12}, {"build1/ld", 2},
                                                {"build2/ld", 13},      {"build2/cc1plus", 17}};
  EXPECT_EQ(exited(merged->profile), want);
  EXPECT_EQ(exited(*back), want);
  auto one = MergeCaptures({a, b, c}, true);
  ASSERT_TRUE(one.ok()) << one.error().message;
  const std::map<std::string, uint64_t> want_one = {{"/cc1plus", 31}, {"/as", 12}, {"/ld", 15}};
  EXPECT_EQ(exited(one->profile), want_one);
}

// The tid of a name's "[exited processes]" record is the name's, in every
// recording: never 0 ("[other processes]") or 0xffffffff ("[exited threads]").
TEST(Merge, ExitedProcessesTidIsTheNames) {
  EXPECT_EQ(ExitedProcessesTid("cc1plus"), ExitedProcessesTid(std::string("cc1") + "plus"));
  EXPECT_NE(ExitedProcessesTid("cc1plus"), ExitedProcessesTid("as"));
  std::set<uint32_t> tids;
  for (int i = 0; i < 100000; ++i) {
    const uint32_t tid = ExitedProcessesTid("p" + std::to_string(i));
    EXPECT_NE(tid, 0u);
    EXPECT_NE(tid, 0xffffffffu);
    tids.insert(tid);
  }
  EXPECT_GE(tids.size(), 99990u);
  EXPECT_EQ(NextExitedProcessesTid(0xfffffffeu), 1u);
  EXPECT_EQ(NextExitedProcessesTid(7), 8u);
}

TEST(Merge, CommandLine) {
  TwoHosts in;
  const std::string out = in.tmp.File("fleet.db");
  auto [code, text] = RunCapture({kArcprof, "merge", in.a, in.b, "-o", out});
  ASSERT_EQ(code, 0) << text;
  auto [rc, json] = RunCapture({kArcprof, "report", "-i", out, "--by", "pid", "--format", "json"});
  ASSERT_EQ(rc, 0);
  const auto report = nlohmann::json::parse(json);
  EXPECT_EQ(report["header"]["total_samples"].get<uint64_t>(), in.total_a + in.total_b);
  std::set<std::string> hosts;
  for (const auto& row : report["rows"]) {
    EXPECT_EQ(row["level"], "host");
    hosts.insert(row["host"].get<std::string>());
  }
  EXPECT_EQ(hosts, (std::set<std::string>{"web1", "web2"}));

  // A merge is an input like any other.
  const std::string again = in.tmp.File("again.db");
  ASSERT_EQ(RunCapture({kArcprof, "merge", out, in.a, "-o", again}).first, 0);
  auto twice = ReadCapture(again);
  ASSERT_TRUE(twice.ok()) << twice.error().message;
  EXPECT_EQ(twice->total_samples(), 2 * in.total_a + in.total_b);

  EXPECT_EQ(RunCapture({kArcprof, "merge", in.a, in.tmp.File("missing.db"), "-o", again}).first,
            2);  // cli/exit_codes.h kExitCaptureError
  EXPECT_EQ(RunCapture({kArcprof, "merge", in.a}).first, 1);  // no -o
}

// A continuous store directory is an input too: all its windows, one host.
TEST(Merge, StoreDirectoryAndCapture) {
  TwoHosts in;
  const std::string dir = in.tmp.File("store");
  auto store = WindowStore::OpenForWriting(dir);
  ASSERT_TRUE(store.ok()) << store.error().message;
  uint64_t store_total = 0;
  for (int w = 0; w < 2; ++w) {
    Profile window = SampleProfile();
    window.meta.host = "db1";
    window.meta.start_unix_ns += static_cast<uint64_t>(w) * 10'000'000'000ull;
    store_total += window.total_samples();
    ASSERT_TRUE(store->Append(window).ok());
  }
  auto merged = MergeCaptures({in.a, dir}, false);
  ASSERT_TRUE(merged.ok()) << merged.error().message;
  EXPECT_EQ(merged->profile.total_samples(), in.total_a + store_total);
  const TprofReport report = BuildTprof(merged->profile, TprofOptions{});
  std::map<std::string, uint64_t> by_host;
  for (const TprofRow& row : report.rows) by_host[row.name] = row.ticks;
  EXPECT_EQ(by_host, (std::map<std::string, uint64_t>{{"web1", in.total_a}, {"db1", store_total}}));
}

TEST(Merge, RefusesMixedFrequencies) {
  TwoHosts in;
  Profile p = SampleProfile();
  p.meta.frequency_hz = 49;
  const std::string c = in.tmp.File("49hz.db");
  ASSERT_TRUE(WriteCapture(c, p).ok());
  auto merged = MergeCaptures({in.a, c}, false);
  ASSERT_FALSE(merged.ok());
  EXPECT_NE(merged.error().message.find("one event and frequency"), std::string::npos);
}

}  // namespace
}  // namespace arcprof::testing
