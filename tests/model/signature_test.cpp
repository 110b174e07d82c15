// --no-params: C++ signatures without parameter lists (model/signature.h).
#include "model/signature.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "tests/model/test_profiles.h"
#include "tests/layer_names.h"

namespace arcprof {
namespace {

TEST(WithoutParams, CutsTheLastParameterListAndItsQualifiers) {
  EXPECT_EQ(model::WithoutParams("push_to_top_level()"), "push_to_top_level");
  EXPECT_EQ(model::WithoutParams("gt_ggc_mx_lang_tree_node(void*)"), "gt_ggc_mx_lang_tree_node");
  EXPECT_EQ(model::WithoutParams("ns::Foo<int>::bar(std::vector<int, std::allocator<int> > const&) const"),
            "ns::Foo<int>::bar");
  EXPECT_EQ(model::WithoutParams("Foo::operator()(int) const &&"), "Foo::operator()");
  EXPECT_EQ(model::WithoutParams("f(void (*)(int), char) [clone .isra.0] [clone .cold]"),
            "f [clone .isra.0] [clone .cold]");
  EXPECT_EQ(model::WithoutParams("(anonymous namespace)::g(int)"), "(anonymous namespace)::g");
  EXPECT_EQ(model::WithoutParams("main::{lambda(int)#1}::operator()(int) const"),
            "main::{lambda(int)#1}::operator()");
  // Nothing to cut: C names, kernel symbols, PLT stubs, unbalanced text.
  EXPECT_EQ(model::WithoutParams("do_syscall_64"), "do_syscall_64");
  EXPECT_EQ(model::WithoutParams("memcpy@plt"), "memcpy@plt");
  EXPECT_EQ(model::WithoutParams("broken)"), "broken)");
  EXPECT_EQ(model::WithoutParams("(x)"), "(x)");
  EXPECT_EQ(model::WithoutParams(""), "");
}

TEST(DropParams, RenamesNativeFramesOnly) {
  Profile p;
  auto frame = [&](const std::string& symbol, FrameKind kind, uint64_t address) {
    FrameRecord f;
    f.module = p.frames.InternModule("/usr/bin/app");
    f.symbol = symbol;
    f.kind = kind;
    f.address = address;
    return p.frames.Intern(f);
  };
  const uint32_t a = frame("app::run(int)", FrameKind::kNative, 0x10);
  const uint32_t j = frame("Lfoo;bar(I)V", FrameKind::kJit, 0x20);
  p.ThreadIndex(1, 1);
  p.threads[0].tree.AddStack(std::vector<uint32_t>{a, j}, 3);
  model::DropParams(p);
  std::vector<std::string> symbols;
  for (const FrameRecord& f : p.frames.all()) symbols.push_back(f.symbol);
  EXPECT_NE(std::find(symbols.begin(), symbols.end(), "app::run"), symbols.end());
  EXPECT_NE(std::find(symbols.begin(), symbols.end(), "Lfoo;bar(I)V"), symbols.end());
  EXPECT_EQ(p.total_samples(), 3u);
}

}  // namespace
}  // namespace arcprof
