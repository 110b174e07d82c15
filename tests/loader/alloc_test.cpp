// record --alloc without BPF: the unbiasing of a sampled allocation and the
// recognition of processes that bring their own allocator.
#include <gtest/gtest.h>

#include <cmath>

#include "loader/alloc_source.h"

namespace arcprof {
namespace {

TEST(AllocUnbias, AsPprofScalesHeapSamples) {
  // A block of the rate's size was sampled with probability 1 - 1/e.
  const AllocWeight w = UnbiasAllocation(512 * 1024, 512 * 1024);
  EXPECT_NEAR(w.count, 1.0 / (1.0 - std::exp(-1.0)), 1e-9);
  EXPECT_NEAR(w.bytes, w.count * 512 * 1024, 1e-3);
  // Small blocks stand for about rate / size blocks; huge ones for one.
  EXPECT_NEAR(UnbiasAllocation(64, 512 * 1024).count, 512.0 * 1024 / 64, 1.0);
  EXPECT_NEAR(UnbiasAllocation(uint64_t{1} << 40, 512 * 1024).count, 1.0, 1e-9);
  EXPECT_EQ(UnbiasAllocation(0, 512 * 1024).count, 0.0);
  EXPECT_EQ(UnbiasAllocation(100, 1).count, 1.0);  // every allocation sampled
}

TEST(AllocUnbias, LibcOfAProcess) {
  const auto libc = LibcMappingOf("7f00-7f01 r--p 0 08:01 12 /usr/lib/x86_64-linux-gnu/libc.so.6\n"
                                  "7f01-7f02 r-xp 0 08:01 12 /usr/lib/x86_64-linux-gnu/libc.so.6\n");
  ASSERT_TRUE(libc.has_value());
  EXPECT_EQ(libc->path, "/usr/lib/x86_64-linux-gnu/libc.so.6");
  EXPECT_EQ(libc->start, 0x7f00u);
  EXPECT_EQ(libc->end, 0x7f01u);
  EXPECT_EQ(libc->dev_major, 8u);
  EXPECT_EQ(libc->dev_minor, 1u);
  EXPECT_EQ(libc->inode, 12u);
  EXPECT_FALSE(LibcMappingOf("7f00-7f01 r-xp 0 08:01 12 /lib/libc.so.6.bak\n7f00-7f01 r-xp 0 0:0 0 [vdso]"));
  EXPECT_FALSE(LibcMappingOf("no newline /libc.so.6"));
  // Deleted since it was mapped: the path without the suffix, marked.
  const auto deleted = LibcMappingOf("7f00-7f01 r-xp 0 08:01 13 /tmp/x/libc.so.6 (deleted)\n");
  ASSERT_TRUE(deleted.has_value());
  EXPECT_EQ(deleted->path, "/tmp/x/libc.so.6");
  EXPECT_TRUE(deleted->deleted);
}

}  // namespace
}  // namespace arcprof
