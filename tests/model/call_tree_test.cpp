// The one call tree's walks and transforms (model/profile.h), which every
// view reads: child lists, depths, cumulative values, re-rooting (also under
// a kept top level, as arcflow's threads), pruning into a bucket, and the
// open-addressing child index; the name pool and the one fold by name.
#include <gtest/gtest.h>

#include <map>
#include <optional>
#include <vector>

#include "model/fold_by_name.h"
#include "model/metric.h"
#include "model/frame_name.h"
#include "model/profile.h"
#include "model/profile_merge.h"
#include "model/value_types.h"
#include "tests/layer_names.h"

namespace arcprof {
namespace {

// 0 -> a(1) -> b(2) -> c(3); 0 -> d(4); a -> c(5). Values: c 5, b 1, d 2, c' 3.
CallTree SmallTree() {
  CallTree tree;
  const uint32_t abc[] = {1, 2, 3};
  const uint32_t abd[] = {1, 2};
  const uint32_t d[] = {4};
  const uint32_t ac[] = {1, 3};
  tree.AddStack(abc, 5);
  tree.AddStack(abd, 1);
  tree.AddStack(d, 2);
  tree.AddStack(ac, 3);
  return tree;
}

std::vector<uint32_t> Frames(const CallTree& tree, std::span<const uint32_t> nodes) {
  std::vector<uint32_t> out;
  for (uint32_t n : nodes) out.push_back(tree.nodes()[n].frame);
  return out;
}

TEST(CallTree, ChildListsDepthsAndCumulative) {
  const CallTree tree = SmallTree();
  ASSERT_EQ(tree.size(), 6u);  // root, a, b, c, d, c under a
  ChildLists children(tree);
  EXPECT_EQ(Frames(tree, children.of(0)), (std::vector<uint32_t>{1, 4}));  // creation order
  const uint32_t a = tree.FindChild(0, 1);
  EXPECT_EQ(Frames(tree, children.of(a)), (std::vector<uint32_t>{2, 3}));
  children.Sort([&](uint32_t x, uint32_t y) { return tree.nodes()[x].frame > tree.nodes()[y].frame; });
  EXPECT_EQ(Frames(tree, children.of(0)), (std::vector<uint32_t>{4, 1}));

  const auto depth = tree.Depths();
  EXPECT_EQ(depth[0], 0u);
  EXPECT_EQ(depth[a], 1u);
  EXPECT_EQ(depth[tree.FindChild(tree.FindChild(a, 2), 3)], 3u);
  const auto cum = tree.Cumulative();
  EXPECT_EQ(cum[0], 11u);
  EXPECT_EQ(cum[a], 9u);
  EXPECT_EQ(cum[tree.FindChild(0, 4)], 2u);
  EXPECT_EQ(tree.FindChild(0, 3), CallTree::kNoNode);
}

TEST(CallTree, RerootedUnderTopKeepsTheTopLevel) {
  // Two "threads" (frames 100, 101) above the same stacks.
  CallTree tree;
  const uint32_t t1[] = {100, 1, 2, 3};
  const uint32_t t2[] = {101, 1, 3};
  const uint32_t t3[] = {101, 4};
  tree.AddStack(t1, 5);
  tree.AddStack(t2, 3);
  tree.AddStack(t3, 2);
  tree.Add(tree.FindChild(0, 100), 7, kSamplesValue, 7);  // the thread's own samples
  const auto is_c = [](uint32_t frame) { return frame == 3; };
  const CallTree flat = tree.Rerooted(is_c);
  EXPECT_EQ(Frames(flat, ChildLists(flat).of(0)), (std::vector<uint32_t>{3}));
  EXPECT_EQ(flat.total(), 8u);
  const CallTree kept = tree.Rerooted(is_c, /*under_top=*/true);
  EXPECT_EQ(Frames(kept, ChildLists(kept).of(0)), (std::vector<uint32_t>{100, 101}));
  EXPECT_EQ(kept.total(), 8u);  // the threads keep none of their own
  const uint32_t t = kept.FindChild(0, 100);
  EXPECT_EQ(kept.nodes()[t].n, 0u);
  EXPECT_EQ(kept.value(kept.FindChild(t, 3), kSamplesValue), 5u);
  // A thread with no match below is not copied.
  const CallTree none = tree.Rerooted([](uint32_t frame) { return frame == 2; }, true);
  EXPECT_EQ(Frames(none, ChildLists(none).of(0)), (std::vector<uint32_t>{100}));
}

TEST(CallTree, PrunedBucketsAndTheirN) {
  CallTree tree = SmallTree();  // a: cum 9 (b 6, c' 3), d: 2
  const uint32_t zero[] = {5, 6};
  tree.AddStack(zero, 0, 0);  // a subtree holding nothing at all
  const auto cum = tree.Cumulative();
  const auto keep = [&](uint32_t node) { return cum[node] >= 5; };
  constexpr uint32_t kBucket = 99;
  const CallTree subtree_n = tree.Pruned(keep, kBucket);
  const CallTree top_n = tree.Pruned(keep, kBucket, CallTree::BucketN::kTopNodes);
  for (const CallTree* pruned : {&subtree_n, &top_n}) {
    EXPECT_EQ(pruned->total(), tree.total());
    // Under the root: a kept, d (2) in a bucket; the empty subtree left no bucket.
    EXPECT_EQ(Frames(*pruned, ChildLists(*pruned).of(0)), (std::vector<uint32_t>{1, kBucket}));
    const uint32_t a = pruned->FindChild(0, 1);
    const uint32_t bucket = pruned->FindChild(a, kBucket);  // c' (3) under a
    ASSERT_NE(bucket, CallTree::kNoNode);
    EXPECT_EQ(pruned->value(bucket, kSamplesValue), 3u);
  }
  // b (cum 6) is kept; its child c (5) too. Pruned under b: nothing.
  const uint32_t b = subtree_n.FindChild(subtree_n.FindChild(0, 1), 2);
  EXPECT_NE(subtree_n.FindChild(b, 3), CallTree::kNoNode);
  // The bucket's n: the whole subtree's, or the cut top nodes' own.
  CallTree deep;
  const uint32_t x[] = {1, 2};
  deep.AddStack(x, 4);
  const uint32_t big[] = {3};
  deep.AddStack(big, 100);
  const auto deep_cum = deep.Cumulative();
  const auto keep_big = [&](uint32_t node) { return deep_cum[node] >= 50; };
  const CallTree s = deep.Pruned(keep_big, kBucket);
  const CallTree t = deep.Pruned(keep_big, kBucket, CallTree::BucketN::kTopNodes);
  EXPECT_EQ(s.nodes()[s.FindChild(0, kBucket)].n, 4u);  // frame 2's samples
  EXPECT_EQ(t.nodes()[t.FindChild(0, kBucket)].n, 0u);  // frame 1 had none of its own
  EXPECT_EQ(t.value(t.FindChild(0, kBucket), kSamplesValue), 4u);
}

TEST(CallTree, ChildIndexGrowsPastItsFirstSlots) {
  CallTree tree;
  for (uint32_t f = 0; f < 5000; ++f) tree.Child(f % 7 == 0 ? 0 : tree.Child(0, 0), f);
  for (uint32_t f = 0; f < 5000; ++f) {
    const uint32_t parent = f % 7 == 0 ? 0 : tree.FindChild(0, 0);
    const uint32_t node = tree.FindChild(parent, f);
    ASSERT_NE(node, CallTree::kNoNode) << f;
    EXPECT_EQ(tree.nodes()[node].frame, f);
    EXPECT_EQ(tree.Child(parent, f), node);  // found, not added again
  }
  EXPECT_EQ(tree.FindChild(0, 5001), CallTree::kNoNode);
}

// A node is 16 bytes, 8 a value column and 8-16 its child index slots (4
// bytes each, at most half used): a tree of a million nodes, with its
// vectors' spare capacity, stays under 40 bytes a node (the index of 16-byte
// slots before took it to ~59).
TEST(CallTree, AMillionNodesTakeUnder40BytesEach) {
  CallTree tree;
  uint32_t node = 0;
  for (uint32_t i = 0; i < 1'000'000; ++i) {
    node = tree.Child(i % 1000 == 0 ? 0 : node, i);
    tree.Add(node, 1, kSamplesValue, 1);
  }
  ASSERT_EQ(tree.size(), 1'000'001u);
  EXPECT_LT(tree.MemoryBytes(), 40u * tree.size());
  EXPECT_EQ(tree.total(), 1'000'000u);
  EXPECT_EQ(tree.FindChild(0, 1000), 1001u);
}

TEST(NamePool, NamesInternedOnceByNameAndKind) {
  NamePool names;
  const uint32_t work = names.Intern("work", NameKind::kNative);
  EXPECT_EQ(names.Intern("work", NameKind::kNative), work);
  EXPECT_NE(names.Intern("work", NameKind::kKernel), work);
  EXPECT_EQ(names.Find("work", NameKind::kKernel), work + 1);
  EXPECT_EQ(names.Find("work", NameKind::kGroup), NamePool::kNoName);
  EXPECT_EQ(names.name(work), "work");
  EXPECT_EQ(names.kind(work), NameKind::kNative);
  EXPECT_EQ(names.size(), 2u);
}

// The one fold by name: frames that share a display name under one parent are
// one node, told apart by kind unless asked not to; the levels put threads
// together; node 0 of a thread counts on its innermost level.
TEST(FoldByName, FramesSharingADisplayNameAreOneNode) {
  Profile p;
  FrameRecord a;
  a.symbol = "work";
  a.kind = FrameKind::kNative;
  FrameRecord b = a;
  b.address = 0x40;  // another record, same display name
  FrameRecord k = a;
  k.kind = FrameKind::kKernel;  // same name, another kind
  const uint32_t fa = p.frames.Intern(a), fb = p.frames.Intern(b), fk = p.frames.Intern(k);
  ASSERT_NE(fa, fb);
  const uint32_t sa[] = {fa}, sb[] = {fb}, sk[] = {fk};
  p.threads.resize(3);
  p.threads[0].process_comm = "java";
  p.threads[0].tree.AddStack(sa, 2);
  p.threads[0].tree.Add(0, 1, kSamplesValue, 1);  // a sample without frames
  p.threads[1].process_comm = "java";
  p.threads[1].tree.AddStack(sb, 3);
  p.threads[1].tree.AddStack(sk, 4);
  p.threads[2].process_comm = "idle";  // nothing sampled

  FoldOptions by_process;
  by_process.levels = [](const ThreadRecord& t, std::vector<std::string>& levels) {
    levels.push_back(t.process_comm);
  };
  const NameFold fold = FoldByName(p, {}, Metric(), by_process);
  const uint32_t java = fold.tree.FindChild(0, fold.names.Find("java", NameKind::kGroup));
  ASSERT_NE(java, CallTree::kNoNode);
  EXPECT_EQ(fold.tree.FindChild(0, fold.names.Find("idle", NameKind::kGroup)), CallTree::kNoNode);
  EXPECT_EQ(fold.tree.value(java, kSamplesValue), 1u);
  const uint32_t native = fold.tree.FindChild(java, fold.names.Find("work", NameKind::kNative));
  const uint32_t kernel = fold.tree.FindChild(java, fold.names.Find("work", NameKind::kKernel));
  ASSERT_NE(native, CallTree::kNoNode);
  ASSERT_NE(kernel, CallTree::kNoNode);
  EXPECT_EQ(fold.tree.value(native, kSamplesValue), 5u);
  EXPECT_EQ(fold.tree.nodes()[native].n, 5u);
  EXPECT_EQ(fold.tree.value(kernel, kSamplesValue), 4u);
  EXPECT_EQ(fold.tree.size(), 4u);  // root, java, work, work [k]

  FoldOptions names_only = by_process;
  names_only.kinds = false;
  names_only.empty_threads = true;
  const NameFold merged = FoldByName(p, {}, Metric(), names_only);
  const uint32_t java2 = merged.tree.FindChild(0, merged.names.Find("java", NameKind::kGroup));
  const uint32_t work = merged.tree.FindChild(java2, merged.names.Find("work", NameKind::kFunction));
  ASSERT_NE(work, CallTree::kNoNode);
  EXPECT_EQ(merged.tree.value(work, kSamplesValue), 9u);
  EXPECT_NE(merged.tree.FindChild(0, merged.names.Find("idle", NameKind::kGroup)), CallTree::kNoNode);
  EXPECT_EQ(merged.tree.size(), 4u);  // root, java, work, idle
}

// A one-shot record folds exited threads (Profile::FoldThreads): the folded
// threads' trees are summed node by node into their group, groups found again
// by pid and tid (an existing group record takes more), the kept threads keep
// their trees and are found by ThreadIndex; every total stays.
TEST(CallTree, FoldThreadsSumsTreesAndKeepsTotals) {
  Profile p;
  const uint32_t ab[] = {1, 2};
  const uint32_t ac[] = {1, 3};
  for (uint32_t tid = 10; tid < 16; ++tid) {
    ThreadRecord& t = p.threads[p.ThreadIndex(7, tid)];
    t.comm = "worker";
    t.process_comm = "prog";
    t.tree.AddStack(tid % 2 ? ab : ac, tid);
  }
  const uint64_t total = p.total_samples();
  auto fold_odd = [](const ThreadRecord& t) -> std::optional<ThreadRecord> {
    if (t.tid % 2 == 0 || t.tid == 0xffffffffu) return std::nullopt;
    ThreadRecord g;
    g.pid = t.pid;
    g.tid = 0xffffffffu;
    g.comm = "[exited threads]";
    g.process_comm = t.process_comm;
    return g;
  };
  EXPECT_EQ(p.FoldThreads(fold_odd), 3u);
  ASSERT_EQ(p.threads.size(), 4u);
  EXPECT_EQ(p.total_samples(), total);
  const ThreadRecord& g = p.threads[p.ThreadIndex(7, 0xffffffffu)];
  EXPECT_EQ(g.comm, "[exited threads]");
  EXPECT_EQ(g.process_comm, "prog");
  EXPECT_EQ(g.tree.total(), 11u + 13u + 15u);
  EXPECT_EQ(g.tree.size(), 3u);  // root, 1, 1 -> 2: the three stacks were one
  EXPECT_EQ(p.threads[p.ThreadIndex(7, 12)].tree.total(), 12u);
  EXPECT_EQ(p.threads.size(), 4u);  // ThreadIndex found them all

  // A later fold adds to the existing group record.
  p.threads[p.ThreadIndex(7, 17)].tree.AddStack(ab, 100);
  EXPECT_EQ(p.FoldThreads(fold_odd), 1u);
  EXPECT_EQ(p.threads.size(), 4u);
  EXPECT_EQ(p.threads[p.ThreadIndex(7, 0xffffffffu)].tree.total(), 139u);
  EXPECT_EQ(p.threads[p.ThreadIndex(7, 0xffffffffu)].tree.size(), 3u);
  EXPECT_EQ(p.total_samples(), total + 100);
  EXPECT_EQ(p.FoldThreads([](const ThreadRecord&) { return std::optional<ThreadRecord>(); }), 0u);
}

// A pid two processes held (two process starts): ThreadIndex with the start
// keeps a record of each; without it, the latest record of the ids (a
// recording's window holds one process per pid at a time). Folding keeps
// both, and a group takes its own process's start.
TEST(CallTree, AReusedPidsProcessesAreRecordsOfTheirOwn) {
  Profile p;
  const uint32_t ab[] = {1, 2};
  const uint32_t first = p.ThreadIndex("", 7, 7, 1000);
  p.threads[first].tree.AddStack(ab, 3);
  const uint32_t second = p.ThreadIndex("", 7, 7, 2000);
  EXPECT_NE(first, second);
  p.threads[second].tree.AddStack(ab, 5);
  EXPECT_EQ(p.ThreadIndex("", 7, 7, 1000), first);
  EXPECT_EQ(p.ThreadIndex(7, 7), second);  // the latest
  const uint32_t other = p.ThreadIndex("", 7, 8, 2000);
  p.threads[other].tree.AddStack(ab, 1);
  EXPECT_EQ(p.threads.size(), 3u);
  // A record whose start is learned after it was made (the recorder's) is
  // found by it.
  const uint32_t late = p.ThreadIndex(9, 9);
  p.threads[late].process_start_ns = 3000;
  EXPECT_EQ(p.ThreadIndex("", 9, 9, 3000), late);
  EXPECT_EQ(p.ThreadIndex(9, 9), late);
  EXPECT_EQ(p.threads.size(), 4u);
  // Thread 7/8 folds into its process's "[exited threads]": found again by
  // (pid, tid, start), the records of 7/7 stay two.
  auto fold_8 = [](const ThreadRecord& t) -> std::optional<ThreadRecord> {
    if (t.tid != 8) return std::nullopt;
    ThreadRecord g;
    g.pid = t.pid;
    g.tid = 0xffffffffu;
    g.process_start_ns = t.process_start_ns;
    return g;
  };
  EXPECT_EQ(p.FoldThreads(fold_8), 1u);
  ASSERT_EQ(p.threads.size(), 4u);
  EXPECT_EQ(p.threads[p.ThreadIndex("", 7, 7, 1000)].tree.total(), 3u);
  EXPECT_EQ(p.threads[p.ThreadIndex("", 7, 7, 2000)].tree.total(), 5u);
  EXPECT_EQ(p.threads[p.ThreadIndex("", 7, 0xffffffffu, 2000)].tree.total(), 1u);
  EXPECT_EQ(p.threads.size(), 4u);
  // Merged into another profile: the same process adds up, the other stays.
  Profile sum = p;
  MergeProfile(sum, p);
  EXPECT_EQ(sum.threads.size(), 4u);
  EXPECT_EQ(sum.threads[sum.ThreadIndex("", 7, 7, 1000)].tree.total(), 6u);
  EXPECT_EQ(sum.threads[sum.ThreadIndex("", 7, 7, 2000)].tree.total(), 10u);
}

// Per-thread time of two processes that held one pid (in two windows, or one
// after the other in one): a row of each, summed only with rows of the same
// process, and the CPU time per sample of each thread record is its own
// process's row's (Metric "cpu" joins rows and records by pid, tid and start).
TEST(CallTree, AReusedPidsPttRowsStayApartAndJoinTheirRecords) {
  auto window = [](uint64_t start, uint64_t samples, uint64_t cpu_ns) {
    Profile p;
    p.meta.frequency_hz = 100;
    const uint32_t ab[] = {1, 2};
    ThreadRecord& t = p.threads[p.ThreadIndex("", 7, 7, start)];
    t.tree.AddStack(ab, samples);
    p.ptt.recorded = true;
    PttThread row;
    row.pid = 7;
    row.tid = 7;
    row.process_start_ns = start;
    row.cpu_ns = cpu_ns;
    row.dispatches = 1;
    p.ptt.threads.push_back(row);
    return p;
  };
  Profile sum = window(1000, 10, 100'000'000);
  MergeProfile(sum, window(2000, 10, 300'000'000));
  MergeProfile(sum, window(1000, 10, 100'000'000));
  ASSERT_EQ(sum.ptt.threads.size(), 2u);
  std::map<uint64_t, uint64_t> cpu_by_start;
  for (const PttThread& t : sum.ptt.threads) cpu_by_start[t.process_start_ns] += t.cpu_ns;
  EXPECT_EQ(cpu_by_start[1000], 200'000'000u);
  EXPECT_EQ(cpu_by_start[2000], 300'000'000u);
  auto cpu = Metric::Select(sum, "cpu");
  ASSERT_TRUE(cpu.ok()) << cpu.error().message;
  const ThreadRecord& first = sum.threads[sum.ThreadIndex("", 7, 7, 1000)];
  const ThreadRecord& second = sum.threads[sum.ThreadIndex("", 7, 7, 2000)];
  EXPECT_TRUE(cpu->CpuMeasured(first));
  EXPECT_EQ(cpu->Total(first), 200'000u);   // µs: its process's 200 ms over its 20 samples
  EXPECT_EQ(cpu->Total(second), 300'000u);  // 300 ms over 10 samples
  // A record whose process PTT did not measure keeps the sampling interval.
  Profile other = window(3000, 10, 0);
  other.ptt.threads[0].process_start_ns = 4000;
  other.ptt.threads[0].cpu_ns = 50'000'000;
  auto interval = Metric::Select(other, "cpu");
  ASSERT_TRUE(interval.ok());
  EXPECT_FALSE(interval->CpuMeasured(other.threads[0]));
  EXPECT_EQ(interval->Total(other.threads[0]), 100'000u);  // 10 samples at 100 Hz
  // A row without a start (a capture before schema 9) joins its (pid, tid)'s record.
  Profile legacy = window(5000, 10, 70'000'000);
  legacy.ptt.threads[0].process_start_ns = 0;
  auto old = Metric::Select(legacy, "cpu");
  ASSERT_TRUE(old.ok());
  EXPECT_TRUE(old->CpuMeasured(legacy.threads[0]));
  EXPECT_EQ(old->Total(legacy.threads[0]), 70'000u);
}

// Two windows merged into one (continuous, while the store cannot be
// written): allocations sum, memory in use is the later window's.
TEST(ValueTypes, InUseOfMergedWindowsIsTheLaterOnes) {
  auto window = [](uint64_t allocated, uint64_t in_use) {
    Profile p;
    const size_t alloc = p.DeclareValue(model::kAllocBytes.type());
    const size_t inuse = p.DeclareValue(model::kInuseBytes.type());
    const uint32_t stack[] = {1, 2};
    ThreadRecord& t = p.threads[p.ThreadIndex(7, 7)];
    const uint32_t leaf = t.tree.AddStack(stack, 0);
    t.tree.Add(leaf, 0, alloc, allocated);
    t.tree.Add(leaf, 0, inuse, in_use);
    return p;
  };
  Profile earlier = window(100, 60);
  model::DropValuesAsOfEnd(earlier);
  MergeProfile(earlier, window(10, 50));
  const ThreadRecord& t = earlier.threads[earlier.ThreadIndex(7, 7)];
  EXPECT_EQ(t.tree.total(*earlier.ValueIndex(model::kAllocBytes.name)), 110u);
  EXPECT_EQ(t.tree.total(*earlier.ValueIndex(model::kInuseBytes.name)), 50u);
}

}  // namespace
}  // namespace arcprof
