// Off-CPU records without root: reason classification, folding a synthetic
// record with its key, the capture round trip and the metrics built on it.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <vector>

#include "events.h"
#include "loader/offcpu_reason.h"
#include "loader/offcpu_source.h"
#include "tests/loader/offcpu_records_only.h"
#include "loader/sample_processor.h"
#include "store/capture_store.h"
#include "model/metric.h"

#include "tests/layer_names.h"

namespace arcprof {
namespace {

TEST(OffCpuReason, FromStateAndSyscall) {
  EXPECT_EQ(ClassifyOffCpu(-1, 0), OffCpuReason::kPreempted);
  EXPECT_EQ(ClassifyOffCpu(0, 0), OffCpuReason::kPreempted);  // runnable beats the syscall
  EXPECT_EQ(ClassifyOffCpu(230, 1), OffCpuReason::kSleep);    // clock_nanosleep
  EXPECT_EQ(ClassifyOffCpu(35, 1), OffCpuReason::kSleep);     // nanosleep
  EXPECT_EQ(ClassifyOffCpu(202, 1), OffCpuReason::kLock);     // futex
  EXPECT_EQ(ClassifyOffCpu(0, 1), OffCpuReason::kIo);         // read
  EXPECT_EQ(ClassifyOffCpu(232, 1), OffCpuReason::kIo);       // epoll_wait
  EXPECT_EQ(ClassifyOffCpu(-1, 2), OffCpuReason::kIo);        // D state outside a syscall
  EXPECT_EQ(ClassifyOffCpu(61, 1), OffCpuReason::kOther);     // wait4
  EXPECT_EQ(OffCpuReasonFrame(OffCpuReason::kLock), "off-cpu:lock");
}

std::vector<uint8_t> OffCpuRecord(uint32_t pid, uint64_t key, int32_t syscall, uint32_t state) {
  sample_event e{};
  e.timestamp_ns = 1;
  e.pid = pid;
  e.tid = pid;
  e.flags = ARCPROF_SAMPLE_SOURCE;
  memcpy(e.comm, "blocker", 8);
  source_info info{key, ARCPROF_SOURCE_OFFCPU, syscall, {state, 0}};
  std::vector<uint8_t> r(sizeof(e) + sizeof(info));
  memcpy(r.data(), &e, sizeof(e));
  memcpy(r.data() + sizeof(e), &info, sizeof(info));
  return r;
}

TEST(OffCpuRecords, FoldTimeUnderTheReasonAndRoundTrip) {
  AddressSpaces spaces;
  Symbolizer symbolizer(spaces);
  SampleProcessor processor(symbolizer);
  OffCpuRecordsOnly source;
  processor.Route(ARCPROF_SOURCE_OFFCPU, &source);
  const auto sleep = OffCpuRecord(4242, 7, 35, 1);
  const auto lock = OffCpuRecord(4242, 8, 202, 1);
  ASSERT_TRUE(processor.Process(sleep.data(), sleep.size()));
  ASSERT_TRUE(processor.Process(lock.data(), lock.size()));
  // Cut short before its key: malformed, not folded.
  std::vector<uint8_t> cut(sleep.begin(), sleep.begin() + sizeof(sample_event) + 4);
  EXPECT_FALSE(processor.Process(cut.data(), cut.size()));
  EXPECT_TRUE(AddOffCpuTime(processor, 7, 3'000'000));
  EXPECT_TRUE(AddOffCpuTime(processor, 8, 1'000'000));
  EXPECT_FALSE(AddOffCpuTime(processor, 9, 500));  // a key whose record never came
  Profile profile = processor.TakeWindow();
  profile.meta.frequency_hz = 1000;
  EXPECT_EQ(processor.samples(), 0u);  // off-CPU records are not samples

  const std::string path =
      std::filesystem::temp_directory_path() / ("arcprof-offcpu-" + std::to_string(getpid()) + ".db");
  std::filesystem::remove(path);
  ASSERT_TRUE(WriteCapture(path, profile).ok());
  auto read = ReadCapture(path);
  std::filesystem::remove(path);
  ASSERT_TRUE(read.ok()) << read.error().message;
  ASSERT_EQ(read->threads.size(), 1u);
  std::map<std::string, uint64_t> by_leaf;
  ASSERT_EQ(read->value_types.size(), 2u);  // samples and offcpu, declared in the capture
  EXPECT_EQ(read->value_types[1], (ValueType{"offcpu", "nanoseconds"}));
  const CallTree& tree = read->threads[0].tree;
  for (uint32_t i = 1; i < tree.size(); ++i) {
    if (tree.value(i, 1) > 0) by_leaf[read->frames.at(tree.nodes()[i].frame).symbol] += tree.value(i, 1);
  }
  EXPECT_EQ(by_leaf["off-cpu:sleep"], 3'000'000u);
  EXPECT_EQ(by_leaf["off-cpu:lock"], 1'000'000u);

  auto wall = Metric::Select(*read, "wall");
  ASSERT_TRUE(wall.ok());
  EXPECT_EQ(wall->Total(read->threads[0]), 4000u);  // microseconds
  EXPECT_EQ(wall->unit(), "wall-us");
  auto offcpu = Metric::Select(*read, "offcpu");  // a declared type, in microseconds
  ASSERT_TRUE(offcpu.ok());
  EXPECT_EQ(offcpu->Total(read->threads[0]), 4000u);
  EXPECT_FALSE(Metric::Select(*read, "bogus").ok());
  Profile empty;
  EXPECT_FALSE(Metric::Select(empty, "offcpu").ok());  // no off-CPU time recorded

  // The next window: the stack comes back for the key's new time.
  EXPECT_TRUE(AddOffCpuTime(processor, 7, 2'000));
  Profile next = processor.TakeWindow();
  ASSERT_EQ(next.threads.size(), 1u);
  EXPECT_EQ(next.threads[0].comm, "blocker");
  uint64_t sleep_ns = 0;
  const size_t offcpu_type = next.ValueIndex("offcpu").value();
  const CallTree& next_tree = next.threads[0].tree;
  for (uint32_t i = 1; i < next_tree.size(); ++i) {
    if (next.frames.at(next_tree.nodes()[i].frame).symbol == "off-cpu:sleep") {
      sleep_ns += next_tree.value(i, offcpu_type);
    }
  }
  EXPECT_EQ(sleep_ns, 2'000u);

  // A long session forgets the stacks of keys whose thread exited: their
  // time later is unattributed, not kept forever.
  auto keys = processor.KeptKeys(ARCPROF_SOURCE_OFFCPU);
  std::sort(keys.begin(), keys.end(), [](const auto& a, const auto& b) { return a.key < b.key; });
  ASSERT_EQ(keys.size(), 2u);
  EXPECT_EQ(keys[0].key, 7u);
  EXPECT_EQ(keys[1].key, 8u);
  EXPECT_EQ(keys[0].pid, 4242u);
  EXPECT_EQ(keys[1].tid, 4242u);
  processor.Forget(ARCPROF_SOURCE_OFFCPU, 7);
  ASSERT_EQ(processor.KeptKeys(ARCPROF_SOURCE_OFFCPU).size(), 1u);
  EXPECT_FALSE(AddOffCpuTime(processor, 7, 900));
}

}  // namespace
}  // namespace arcprof
