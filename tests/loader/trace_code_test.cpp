// `arcprof trace`'s code decoding (loader/trace_code.h) on hand-assembled x86-64.
#include <gtest/gtest.h>

#include <vector>

#include "loader/trace_code.h"

namespace arcprof {
namespace {

TEST(TraceCode, CallsRetsAndTailJumps) {
  // 0x1000: push %rbp; mov %rsp,%rbp; call 0x2000; call *%rax; test %eax,%eax;
  //         je 0x1016 (in the function); pop %rbp; ret; pop %rbp; jmp 0x3000
  const std::vector<uint8_t> code = {
      0x55,                          // 1000 push %rbp
      0x48, 0x89, 0xe5,              // 1001 mov %rsp,%rbp
      0xe8, 0xf7, 0x0f, 0x00, 0x00,  // 1004 call 0x2000
      0xff, 0xd0,                    // 1009 call *%rax
      0x85, 0xc0,                    // 100b test %eax,%eax
      0x74, 0x02,                    // 100d je 0x1011
      0x5d,                          // 100f pop %rbp
      0xc3,                          // 1010 ret
      0x5d,                          // 1011 pop %rbp
      0xe9, 0xe9, 0x1f, 0x00, 0x00,  // 1012 jmp 0x3000
  };
  const DecodedFunction d = DecodeFunction(code, 0x1000);
  EXPECT_TRUE(d.complete);
  EXPECT_EQ(d.call_targets, std::vector<uint64_t>({0x2000}));
  EXPECT_EQ(d.indirect_calls, 1u);
  EXPECT_EQ(d.exits, std::vector<uint64_t>({0x1010, 0x1012}));
  EXPECT_EQ(d.exit_targets, std::vector<uint64_t>({0, 0x3000}));
}

TEST(TraceCode, GarbageStopsTheSweep) {
  const std::vector<uint8_t> code = {0xc3, 0x06, 0x06, 0xc3};  // ret; then no valid x86-64 instruction
  const DecodedFunction d = DecodeFunction(code, 0x1000);
  EXPECT_FALSE(d.complete);
  EXPECT_EQ(d.exits, std::vector<uint64_t>({0x1000}));
}

TEST(TraceCode, FunctionsByName) {
  CodeModule module;
  module.functions = {{0x10, 0x20, "ns::f(int)", "_ZN2ns1fEi"}, {0x20, 0x30, "g", "g"}};
  EXPECT_EQ(FindFunctions(module, "ns::f").size(), 1u);
  EXPECT_EQ(FindFunctions(module, "ns::f(int)").size(), 1u);
  EXPECT_EQ(FindFunctions(module, "_ZN2ns1fEi").size(), 1u);
  EXPECT_EQ(FindFunctions(module, "ns::").size(), 0u);
  EXPECT_EQ(module.At(0x20)->name, "g");
  EXPECT_EQ(module.At(0x21), nullptr);
}

}  // namespace
}  // namespace arcprof
