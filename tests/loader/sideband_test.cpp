#include "loader/sideband.h"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>
#include "tests/layer_names.h"

namespace arcprof {
namespace {

// Builds a record: header, body, then the sample_id {pid, tid, time}.
std::vector<uint8_t> Record(uint32_t type, uint16_t misc, const std::vector<uint8_t>& body,
                            uint64_t time) {
  std::vector<uint8_t> r(sizeof(perf_event_header));
  r.insert(r.end(), body.begin(), body.end());
  const uint32_t sid[2] = {1, 1};
  const auto* s = reinterpret_cast<const uint8_t*>(sid);
  r.insert(r.end(), s, s + 8);
  const auto* t = reinterpret_cast<const uint8_t*>(&time);
  r.insert(r.end(), t, t + 8);
  perf_event_header h{type, misc, static_cast<uint16_t>(r.size())};
  memcpy(r.data(), &h, sizeof(h));
  return r;
}

template <typename T>
void Put(std::vector<uint8_t>& v, T x) {
  const auto* p = reinterpret_cast<const uint8_t*>(&x);
  v.insert(v.end(), p, p + sizeof(T));
}

void PutString(std::vector<uint8_t>& v, const std::string& s) {
  v.insert(v.end(), s.begin(), s.end());
  v.push_back(0);
  while (v.size() % 8) v.push_back(0);
}

// pid 42, tid 43, [0x400000, +0x2000) at offset 0x1000, build-id abcdef.
std::vector<uint8_t> MmapWithBuildId(const std::string& path, uint64_t time) {
  std::vector<uint8_t> body;
  Put<uint32_t>(body, 42);
  Put<uint32_t>(body, 43);
  Put<uint64_t>(body, 0x400000);
  Put<uint64_t>(body, 0x2000);
  Put<uint64_t>(body, 0x1000);
  uint8_t idblock[24] = {3, 0, 0, 0, 0xab, 0xcd, 0xef};
  body.insert(body.end(), idblock, idblock + 24);
  Put<uint32_t>(body, 5);  // PROT_READ|PROT_EXEC
  Put<uint32_t>(body, 2);  // MAP_PRIVATE
  PutString(body, path);
  return Record(PERF_RECORD_MMAP2, PERF_RECORD_MISC_MMAP_BUILD_ID, body, time);
}

// pid 7, [0x1000, +0x1000), device 8:1, inode 1234.
std::vector<uint8_t> MmapWithInode(const std::string& path, uint64_t time) {
  std::vector<uint8_t> body;
  Put<uint32_t>(body, 7);
  Put<uint32_t>(body, 7);
  Put<uint64_t>(body, 0x1000);
  Put<uint64_t>(body, 0x1000);
  Put<uint64_t>(body, 0);
  Put<uint32_t>(body, 8);     // maj
  Put<uint32_t>(body, 1);     // min
  Put<uint64_t>(body, 1234);  // ino
  Put<uint64_t>(body, 0);     // ino generation
  Put<uint32_t>(body, 5);
  Put<uint32_t>(body, 2);
  PutString(body, path);
  return Record(PERF_RECORD_MMAP2, 0, body, time);
}

TEST(Sideband, DecodesMmap2WithBuildId) {
  auto rec = MmapWithBuildId("/usr/bin/true", 777);
  auto ev = DecodeSidebandRecord(rec.data(), rec.size());
  ASSERT_TRUE(ev.has_value());
  EXPECT_EQ(ev->kind, SidebandEvent::Kind::kMmap);
  EXPECT_EQ(ev->pid, 42u);
  EXPECT_EQ(ev->time_ns, 777u);
  EXPECT_EQ(ev->mapping.start, 0x400000u);
  EXPECT_EQ(ev->mapping.len, 0x2000u);
  EXPECT_EQ(ev->mapping.pgoff, 0x1000u);
  EXPECT_EQ(ev->mapping.prot, 5u);
  EXPECT_EQ(ev->mapping.build_id, "abcdef");
  EXPECT_EQ(ev->mapping.path, "/usr/bin/true");
}

TEST(Sideband, DecodesMmap2WithInode) {
  auto rec = MmapWithInode("/lib/x.so", 1);
  auto ev = DecodeSidebandRecord(rec.data(), rec.size());
  ASSERT_TRUE(ev.has_value());
  EXPECT_EQ(ev->mapping.maj, 8u);
  EXPECT_EQ(ev->mapping.min, 1u);
  EXPECT_EQ(ev->mapping.ino, 1234u);
  EXPECT_TRUE(ev->mapping.build_id.empty());
}

TEST(Sideband, DecodesCommExecForkExit) {
  std::vector<uint8_t> body;
  Put<uint32_t>(body, 9);
  Put<uint32_t>(body, 9);
  PutString(body, "worker");
  auto exec = Record(PERF_RECORD_COMM, PERF_RECORD_MISC_COMM_EXEC, body, 5);
  auto ev = DecodeSidebandRecord(exec.data(), exec.size());
  ASSERT_TRUE(ev);
  EXPECT_EQ(ev->kind, SidebandEvent::Kind::kExec);
  EXPECT_EQ(ev->comm, "worker");
  auto comm = Record(PERF_RECORD_COMM, 0, body, 5);
  EXPECT_EQ(DecodeSidebandRecord(comm.data(), comm.size())->kind, SidebandEvent::Kind::kComm);

  std::vector<uint8_t> fork;
  Put<uint32_t>(fork, 20);  // pid
  Put<uint32_t>(fork, 10);  // ppid
  Put<uint32_t>(fork, 20);  // tid
  Put<uint32_t>(fork, 10);  // ptid
  Put<uint64_t>(fork, 99);
  auto f = Record(PERF_RECORD_FORK, 0, fork, 99);
  ev = DecodeSidebandRecord(f.data(), f.size());
  ASSERT_TRUE(ev);
  EXPECT_EQ(ev->kind, SidebandEvent::Kind::kFork);
  EXPECT_EQ(ev->parent_pid, 10u);
  auto x = Record(PERF_RECORD_EXIT, 0, fork, 100);
  EXPECT_EQ(DecodeSidebandRecord(x.data(), x.size())->kind, SidebandEvent::Kind::kExit);

  std::vector<uint8_t> thread;
  Put<uint32_t>(thread, 20);
  Put<uint32_t>(thread, 20);
  Put<uint32_t>(thread, 21);
  Put<uint32_t>(thread, 20);
  Put<uint64_t>(thread, 99);
  auto t = Record(PERF_RECORD_FORK, 0, thread, 99);
  EXPECT_EQ(DecodeSidebandRecord(t.data(), t.size())->kind, SidebandEvent::Kind::kThreadStart);
}

// A session following some processes applies only their events and those
// of the children they fork; a pid reused after an exit is someone else.
TEST(Sideband, FollowAppliesOnlyTheFollowedTree) {
  AddressSpacesOptions options;
  options.proc_root = "/nonexistent-proc";  // no snapshots from the real /proc
  AddressSpaces spaces(options);
  SidebandQueue queue;
  queue.Follow({10});
  auto fork = [](uint32_t parent, uint32_t child, uint64_t t) {
    SidebandEvent e;
    e.kind = SidebandEvent::Kind::kFork;
    e.pid = e.tid = child;
    e.parent_pid = parent;
    e.time_ns = t;
    return e;
  };
  auto exec = [](uint32_t pid, uint64_t t) {
    SidebandEvent e;
    e.kind = SidebandEvent::Kind::kExec;
    e.pid = e.tid = pid;
    e.comm = "child";
    e.time_ns = t;
    return e;
  };
  SidebandEvent exit;
  exit.kind = SidebandEvent::Kind::kExit;
  exit.pid = exit.tid = 20;
  exit.time_ns = 5;
  queue.Push(fork(10, 20, 1));  // a child of the followed process
  queue.Push(fork(30, 40, 2));  // someone else's
  queue.Push(exec(40, 3));
  queue.Push(exec(20, 4));
  queue.Push(exit);
  queue.Push(fork(50, 20, 6));  // pid 20 reused by another process's child
  queue.Push(exec(20, 7));
  queue.ApplyTo(spaces);
  EXPECT_TRUE(queue.follows(10));
  EXPECT_FALSE(queue.follows(20));
  EXPECT_FALSE(queue.follows(40));
  EXPECT_FALSE(spaces.KnowsProcess(40));
  ASSERT_TRUE(spaces.KnowsProcess(20));
  EXPECT_TRUE(spaces.ProcessExited(20));  // the reuse at t=6 was not applied
  EXPECT_EQ(queue.skipped(), 4u);
  EXPECT_EQ(queue.applied(), 3u);
  queue.FollowAll();
  queue.Push(exec(40, 8));
  queue.ApplyTo(spaces);
  EXPECT_TRUE(queue.follows(40));
  EXPECT_EQ(queue.applied(), 4u);
}

// A followed child exits and another followed child takes its pid in the
// same batch: the pid stays followed (the BPF filter holds the new one), and
// samples tell the two processes apart by their incarnation.
TEST(Sideband, FollowedPidReusedByAFollowedChildStays) {
  AddressSpacesOptions options;
  options.proc_root = "/nonexistent-proc";
  AddressSpaces spaces(options);
  SidebandQueue queue;
  queue.Follow({10});
  auto event = [](SidebandEvent::Kind kind, uint32_t pid, uint64_t t) {
    SidebandEvent e;
    e.kind = kind;
    e.pid = e.tid = pid;
    e.parent_pid = 10;
    e.comm = "child";
    e.time_ns = t;
    return e;
  };
  queue.Push(event(SidebandEvent::Kind::kFork, 20, 100));
  queue.Push(event(SidebandEvent::Kind::kExec, 20, 110));
  queue.Push(event(SidebandEvent::Kind::kExit, 20, 200));
  queue.Push(event(SidebandEvent::Kind::kFork, 20, 300));  // the same pid again
  queue.Push(event(SidebandEvent::Kind::kExec, 20, 310));
  queue.ApplyTo(spaces);
  EXPECT_TRUE(queue.follows(20));
  EXPECT_TRUE(queue.TakeExited().empty());
  EXPECT_EQ(spaces.Incarnation(20, 150), 100u);  // after its exec: still the first
  EXPECT_EQ(spaces.Incarnation(20, 350), 300u);
  EXPECT_EQ(spaces.Incarnation(99, 350), 0u);  // unknown
  queue.Push(event(SidebandEvent::Kind::kExit, 20, 400));
  queue.ApplyTo(spaces);
  EXPECT_EQ(queue.TakeExited(), std::vector<uint32_t>{20});
}

// The queue decodes into slots it reuses from batch to batch: nothing of an
// earlier event stays in a slot (a build-id, an inode, a name).
TEST(Sideband, ReusedSlotKeepsNothingOfTheEventBefore) {
  auto mmap_id = MmapWithBuildId("/usr/lib/x86_64-linux-gnu/libsomething-long.so.1", 1);
  std::vector<uint8_t> comm;
  Put<uint32_t>(comm, 9);
  Put<uint32_t>(comm, 9);
  PutString(comm, "a-rather-long-command-name");
  auto exec = Record(PERF_RECORD_COMM, PERF_RECORD_MISC_COMM_EXEC, comm, 2);
  auto mmap_inode = MmapWithInode("/x", 3);

  SidebandEvent slot;
  ASSERT_TRUE(DecodeSidebandRecord(mmap_id.data(), mmap_id.size(), slot));
  EXPECT_EQ(slot.mapping.build_id, "abcdef");
  ASSERT_TRUE(DecodeSidebandRecord(exec.data(), exec.size(), slot));
  EXPECT_EQ(slot.kind, SidebandEvent::Kind::kExec);
  EXPECT_EQ(slot.comm, "a-rather-long-command-name");
  EXPECT_TRUE(slot.mapping.path.empty());
  EXPECT_TRUE(slot.mapping.build_id.empty());
  EXPECT_EQ(slot.mapping.start, 0u);
  ASSERT_TRUE(DecodeSidebandRecord(mmap_id.data(), mmap_id.size(), slot));
  ASSERT_TRUE(DecodeSidebandRecord(mmap_inode.data(), mmap_inode.size(), slot));
  EXPECT_TRUE(slot.comm.empty());
  EXPECT_TRUE(slot.mapping.build_id.empty());
  EXPECT_EQ(slot.mapping.path, "/x");
  EXPECT_EQ(slot.mapping.ino, 1234u);
  EXPECT_EQ(slot.mapping.maj, 8u);
  EXPECT_EQ(slot.pid, 7u);
  EXPECT_EQ(slot.time_ns, 3u);
}

// Records arrive per CPU, out of time order; the queue applies them in time
// order, records of one time in arrival order, and drops what it cannot
// decode without losing a slot.
TEST(Sideband, QueueAppliesRecordsInTimeOrder) {
  AddressSpacesOptions options;
  options.proc_root = "/nonexistent-proc";
  AddressSpaces spaces(options);
  SidebandQueue queue;
  auto fork_exit = [](uint32_t type, uint32_t pid, uint32_t parent, uint64_t t) {
    std::vector<uint8_t> body;
    Put<uint32_t>(body, pid);
    Put<uint32_t>(body, parent);
    Put<uint32_t>(body, pid);
    Put<uint32_t>(body, parent);
    Put<uint64_t>(body, t);
    return Record(type, 0, body, t);
  };
  for (int round = 0; round < 3; ++round) {  // the second and third reuse the slots
    const uint32_t pid = 20 + round;
    const uint64_t t0 = 1000 * (round + 1);
    auto exit = fork_exit(PERF_RECORD_EXIT, pid, pid, t0 + 5);
    auto fork = fork_exit(PERF_RECORD_FORK, pid, 10, t0 + 1);
    auto unknown = fork_exit(PERF_RECORD_LOST, pid, 10, t0 + 2);
    queue.PushRecord(exit.data(), exit.size());  // the other CPU's, drained first
    queue.PushRecord(unknown.data(), unknown.size());
    queue.PushRecord(fork.data(), fork.size());
    queue.ApplyTo(spaces);
    ASSERT_TRUE(spaces.KnowsProcess(pid));
    EXPECT_TRUE(spaces.ProcessExited(pid)) << "round " << round;  // the fork came first
    EXPECT_EQ(spaces.Incarnation(pid, t0 + 2), t0 + 1);
    EXPECT_EQ(queue.applied(), 2u * (round + 1));
  }
}

TEST(Sideband, RejectsTruncatedAndUnterminated) {
  std::vector<uint8_t> body;
  Put<uint32_t>(body, 9);
  Put<uint32_t>(body, 9);
  body.insert(body.end(), 8, 'x');  // no NUL
  auto rec = Record(PERF_RECORD_COMM, 0, body, 5);
  EXPECT_FALSE(DecodeSidebandRecord(rec.data(), rec.size()));
  EXPECT_FALSE(DecodeSidebandRecord(rec.data(), 10));
  rec[6] = 0xff;  // header.size larger than the buffer
  rec[7] = 0xff;
  EXPECT_FALSE(DecodeSidebandRecord(rec.data(), rec.size()));
}

}  // namespace
}  // namespace arcprof
