#include "spaces/timeline.h"

#include <gtest/gtest.h>
#include "tests/layer_names.h"

namespace arcprof {
namespace {

TimelineMapping Map(uint64_t start, uint64_t end, std::string_view module) {
  TimelineMapping m;
  m.start = start;
  m.end = end;
  m.module = module;
  return m;
}

std::string_view ModuleAt(const Timeline& timeline, uint32_t pid, uint64_t addr, uint64_t t) {
  const TimelineProcess* p = timeline.Find(pid);
  if (!p) return "<no process>";
  const TimelineMapping* m = Timeline::Lookup(*p, addr, t).mapping;
  return m ? m->module : "<unmapped>";
}

TEST(Timeline, TimeVersionedLookupAndValidity) {
  Timeline timeline;
  timeline.AddMapping(1, 100, Map(0x1000, 0x2000, "a"), false);
  timeline.AddMapping(1, 200, Map(0x1000, 0x2000, "b"), false);
  const TimelineProcess& p = *timeline.Find(1);

  Timeline::Hit hit = Timeline::Lookup(p, 0x1800, 150);
  ASSERT_NE(hit.mapping, nullptr);
  EXPECT_EQ(hit.mapping->module, "a");
  EXPECT_EQ(hit.valid_from, 100u);
  EXPECT_EQ(hit.valid_until, 200u);

  hit = Timeline::Lookup(p, 0x1800, 250);
  ASSERT_NE(hit.mapping, nullptr);
  EXPECT_EQ(hit.mapping->module, "b");
  EXPECT_EQ(hit.valid_from, 200u);
  EXPECT_EQ(hit.valid_until, UINT64_MAX);

  // A sample older than every mapping (it raced its mmap record): the earliest later one.
  hit = Timeline::Lookup(p, 0x1800, 50);
  ASSERT_NE(hit.mapping, nullptr);
  EXPECT_EQ(hit.mapping->module, "a");
  EXPECT_EQ(hit.valid_from, 0u);
  EXPECT_EQ(hit.valid_until, 100u);

  // Same time: the one added last wins.
  timeline.AddMapping(1, 200, Map(0x1000, 0x2000, "c"), false);
  EXPECT_EQ(ModuleAt(timeline, 1, 0x1800, 200), "c");

  EXPECT_EQ(ModuleAt(timeline, 1, 0x2000, 250), "<unmapped>");
  EXPECT_EQ(ModuleAt(timeline, 1, 0xfff, 250), "<unmapped>");
}

TEST(Timeline, OverlapsUseTheLongestMappingBound) {
  Timeline timeline;
  timeline.AddMapping(1, 10, Map(0x100000, 0x900000, "big"), false);
  for (uint64_t i = 0; i < 16; ++i)
    timeline.AddMapping(1, 20, Map(0x200000 + i * 0x1000, 0x200800 + i * 0x1000, "small"), false);
  EXPECT_EQ(ModuleAt(timeline, 1, 0x200100, 30), "small");
  EXPECT_EQ(ModuleAt(timeline, 1, 0x200900, 30), "big");  // between two small ones
  EXPECT_EQ(ModuleAt(timeline, 1, 0x8fffff, 30), "big");
  EXPECT_EQ(ModuleAt(timeline, 1, 0x900000, 30), "<unmapped>");
  // Before the small ones existed.
  EXPECT_EQ(ModuleAt(timeline, 1, 0x200100, 15), "big");
}

TEST(Timeline, ExecReplacesTheAddressSpace) {
  Timeline timeline;
  timeline.AddMapping(7, 100, Map(0x1000, 0x2000, "old"), false);
  timeline.Exec(7, 300);
  timeline.AddMapping(7, 310, Map(0x5000, 0x6000, "new"), false);

  EXPECT_EQ(ModuleAt(timeline, 7, 0x1800, 250), "old");
  // While execve runs (20 ms grace) the registers still point into the old image.
  EXPECT_EQ(ModuleAt(timeline, 7, 0x1800, 350), "old");
  EXPECT_EQ(ModuleAt(timeline, 7, 0x1800, 300 + 20'000'001), "<unmapped>");
  EXPECT_EQ(ModuleAt(timeline, 7, 0x5800, 350), "new");
  // After exec but before the mmap record: the race fallback within the new generation.
  EXPECT_EQ(ModuleAt(timeline, 7, 0x5800, 305), "new");
  // Before exec, the new program's mapping does not exist.
  EXPECT_EQ(ModuleAt(timeline, 7, 0x5800, 250), "<unmapped>");

  Timeline::Hit hit = Timeline::Lookup(*timeline.Find(7), 0x5800, 400);
  EXPECT_EQ(hit.valid_from, 310u);
  hit = Timeline::Lookup(*timeline.Find(7), 0x1800, 250);
  EXPECT_EQ(hit.valid_until, 300u);
}

TEST(Timeline, ForkCopiesTheParentAtForkTime) {
  Timeline timeline;
  timeline.AddMapping(1, 100, Map(0x1000, 0x2000, "shared"), false);
  timeline.Fork(1, 2, 150);
  timeline.AddMapping(1, 200, Map(0x3000, 0x4000, "parent_late"), false);
  timeline.AddMapping(2, 210, Map(0x5000, 0x6000, "child_own"), false);

  EXPECT_EQ(ModuleAt(timeline, 2, 0x1800, 300), "shared");
  EXPECT_EQ(ModuleAt(timeline, 2, 0x3800, 300), "<unmapped>");
  EXPECT_EQ(ModuleAt(timeline, 2, 0x5800, 300), "child_own");
  EXPECT_EQ(ModuleAt(timeline, 1, 0x3800, 300), "parent_late");
  EXPECT_EQ(ModuleAt(timeline, 1, 0x5800, 300), "<unmapped>");

  // The child then execs: the inherited mappings are gone afterwards.
  timeline.Exec(2, 400);
  EXPECT_EQ(ModuleAt(timeline, 2, 0x1800, 400 + 25'000'000), "<unmapped>");
  EXPECT_EQ(ModuleAt(timeline, 2, 0x1800, 300), "shared");
}

TEST(Timeline, ForkBeforeAnyParentMappingCopiesAll) {
  Timeline timeline;
  timeline.AddMapping(1, 500, Map(0x1000, 0x2000, "lagging"), false);
  timeline.Fork(1, 2, 150);
  EXPECT_EQ(ModuleAt(timeline, 2, 0x1800, 600), "lagging");
}

TEST(Timeline, DedupeAndVersions) {
  Timeline timeline;
  timeline.AddMapping(3, 100, Map(0x1000, 0x2000, "a"), true);
  const uint64_t v = timeline.Find(3)->version;
  timeline.AddMapping(3, 200, Map(0x1000, 0x2000, "a"), true);
  EXPECT_EQ(timeline.Find(3)->version, v);
  EXPECT_EQ(timeline.Find(3)->generations[0].mappings.size(), 1u);
  timeline.AddMapping(3, 200, Map(0x1000, 0x2000, "a"), false);
  EXPECT_GT(timeline.Find(3)->version, v);
}

TEST(Timeline, ExitKeepsTheData) {
  Timeline timeline;
  timeline.AddMapping(9, 100, Map(0x1000, 0x2000, "a"), false);
  timeline.Exit(9, 200);
  EXPECT_TRUE(timeline.Find(9)->exited);
  EXPECT_EQ(ModuleAt(timeline, 9, 0x1800, 150), "a");
  // pid reuse: a fork creates a fresh generation.
  timeline.Fork(1, 9, 300);
  EXPECT_FALSE(timeline.Find(9)->exited);
  EXPECT_EQ(ModuleAt(timeline, 9, 0x1800, 350), "<unmapped>");
  EXPECT_EQ(ModuleAt(timeline, 9, 0x1800, 150), "a");
}

}  // namespace
}  // namespace arcprof
