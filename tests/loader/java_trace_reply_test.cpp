// The Java trace's outside input (loader/java_trace_reply.h): root names and
// the agent's result lines.
#include <gtest/gtest.h>

#include "loader/java_trace_reply.h"

namespace arcprof {
namespace {

TEST(JavaTraceReply, RootNamesAClassAndAMethod) {
  auto r = ParseJavaRoot("com.example.Cache.get");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->klass, "com/example/Cache");
  EXPECT_EQ(r->method, "get");
  r = ParseJavaRoot("Outer$Inner.run_1");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->klass, "Outer$Inner");
  for (const char* bad : {"main", ".run", "a..b", "a.b(", "a.1b", "a.b c", "a.", "ns::f", ""}) {
    EXPECT_FALSE(ParseJavaRoot(bad)) << bad;
  }
}

TEST(JavaTraceReply, LinesAreCheckedOneByOne) {
  JavaTraceReply reply;
  ParseJavaTraceLine("n 12 0 0 3 10 10 2 5000 4000 0", &reply);
  ParseJavaTraceLine("n 12 1 1 4 10 9 0 1000 1000 1", &reply);
  ParseJavaTraceLine("m 3 com.example.Cache.get", &reply);
  ParseJavaTraceLine("c methods_probed 2", &reply);
  ParseJavaTraceLine("c last_skip 0 Foo: bad \x1b[31m", &reply);
  EXPECT_FALSE(reply.end);
  ParseJavaTraceLine("end", &reply);
  EXPECT_TRUE(reply.end);
  ASSERT_EQ(reply.nodes.size(), 2u);
  EXPECT_EQ(reply.nodes[1].parent, 1u);
  EXPECT_EQ(reply.nodes[0].thrown, 2u);
  EXPECT_EQ(reply.names.at(3), "com.example.Cache.get");
  EXPECT_EQ(reply.counters.at("methods_probed"), 2);
  EXPECT_EQ(reply.last_skip.find('\x1b'), std::string::npos);
  EXPECT_EQ(reply.bad_lines, 0u);
  // A parent after its child, more ends than calls, self over inclusive,
  // words missing or too many, numbers out of range: each refused.
  for (const char* bad : {"n 1 0 1 3 1 1 0 1 1 0", "n 1 5 0 3 1 2 0 1 1 0", "n 1 5 0 3 1 1 0 1 2 0",
                          "n 1 5 0 3 1 1 0 1 1", "n 1 5 0 3 1 1 0 1 1 0 0", "n 1 99999999999 0 3 1 1 0 1 1 0",
                          "n 1 5 0 3 -1 1 0 1 1 0", "m x name", "c x", "zzz"}) {
    ParseJavaTraceLine(bad, &reply);
  }
  EXPECT_EQ(reply.nodes.size(), 2u);
  EXPECT_EQ(reply.bad_lines, 10u);
}

}  // namespace
}  // namespace arcprof
