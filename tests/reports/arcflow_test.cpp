// Tests of the arcflow model and its reports: the acceptance example of the
// arcflow paper, the xarc invariants on random (recursive) trees, the three
// input forms, pruning, --root, units and golden reports.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "reports/arcflow.h"
#include "tests/layer_names.h"

namespace arcprof {
namespace {

// Table 3 of Alexander et al., "A unifying approach to performance analysis in
// the Java environment", IBM Systems Journal 39(1), 2000: n = calls, Y = cpu-seconds.
constexpr std::string_view kPaperCallTree = R"(#! unit cpu-seconds
#! occurrences calls
context              n  Y
Main                 1  0
Main A               1  1
Main A B             2  2
Main A B C           1  1
Main B               1  1
Main B A             1  1
Main B A C           1  1
Main B A X           1  0
Main B A X E         1  1
Main B A X F         1  1
Main B A X G         1  1
)";

// The same program as start/end events stamped with cpu-seconds.
constexpr std::string_view kPaperTrace = R"(#! unit cpu-seconds
#! occurrences calls
0 > Main
0 > A
1 > B
2 > C
3 < C
3 < B
3 > B
4 < B
4 < A
4 > B
5 > A
6 > C
7 < C
7 > X
7 > E
8 < E
8 > F
9 < F
9 > G
10 < G
10 < X
10 < A
10 < B
10 < Main
)";

ArcflowProfile Parse(std::string_view text) {
  Result<ArcflowProfile> model = ParseArcflowText(text);
  EXPECT_TRUE(model.ok()) << model.error().message;
  return model.ok() ? std::move(model).value() : ArcflowProfile();
}

// Readers of the arcflow tree (node ids of ArcflowProfile::tree) for the tests.
std::vector<uint32_t> Children(const ArcflowProfile& model, uint32_t node) {
  const ChildLists lists(model.tree);
  const auto children = lists.of(node);
  return {children.begin(), children.end()};
}
struct NodeView {
  uint64_t n = 0;
  uint64_t base = 0;
  uint64_t cum = 0;
};
NodeView Node(const ArcflowProfile& model, uint32_t node) {
  return {model.tree.nodes()[node].n, model.tree.value(node, kSamplesValue), model.tree.Cumulative()[node]};
}
const std::string& NodeName(const ArcflowProfile& model, uint32_t node) {
  return model.name(model.consumer_of(node));
}

uint32_t ConsumerId(const ArcflowProfile& model, std::string_view name) {
  for (uint32_t c = 0; c < model.consumers.size(); ++c) {
    if (model.name(c) == name) return c;
  }
  ADD_FAILURE() << "no consumer " << name;
  return ArcflowProfile::kNone;
}

const XarcStanza& StanzaOf(const std::vector<XarcStanza>& stanzas, const ArcflowProfile& model,
                           std::string_view name) {
  const uint32_t id = ConsumerId(model, name);
  for (const auto& s : stanzas) {
    if (s.self.consumer == id) return s;
  }
  ADD_FAILURE() << "no stanza for " << name;
  static const XarcStanza kEmpty;
  return kEmpty;
}

const ArcflowLine* LineOf(const std::vector<ArcflowLine>& lines, const ArcflowProfile& model,
                          std::string_view name) {
  const uint32_t id = name == "[root]" ? ArcflowProfile::kNone : ConsumerId(model, name);
  for (const auto& l : lines) {
    if (l.consumer == id) return &l;
  }
  return nullptr;
}

// The four xarc invariants, for every stanza.
void ExpectInvariants(const ArcflowProfile& model, const std::string& context) {
  for (const XarcStanza& s : ComputeXarc(model)) {
    uint64_t n = 0, base = 0, cum = 0, child_cum = 0;
    for (const auto& p : s.parents) {
      n += p.n;
      base += p.base;
      cum += p.cum;
    }
    for (const auto& c : s.children) child_cum += c.cum;
    const std::string& name = model.name(s.self.consumer);
    ASSERT_EQ(n, s.self.n) << context << " consumer " << name;
    ASSERT_EQ(base, s.self.base) << context << " consumer " << name;
    ASSERT_EQ(cum, s.self.cum) << context << " consumer " << name;
    ASSERT_EQ(child_cum, s.self.cum - s.self.base) << context << " consumer " << name;
  }
}

std::string Render(const ArcflowProfile& model, const ArcflowOptions& options) {
  std::ostringstream out;
  Result<void> r = RenderArcflowProfile(model, options, out);
  EXPECT_TRUE(r.ok()) << r.error().message;
  return out.str();
}

std::string Render(const Profile& profile, const ArcflowOptions& options) {
  std::ostringstream out;
  Result<void> r = RenderArcflowView(profile, options, out);
  EXPECT_TRUE(r.ok()) << r.error().message;
  return out.str();
}

// ------------------------------------------------------------ the paper

TEST(ArcflowPaper, XtreeHasElevenNodesUnderTheThread) {
  const ArcflowProfile model = Parse(kPaperCallTree);
  EXPECT_EQ(model.total(), 10u);
  EXPECT_EQ(model.bindings.unit, "cpu-seconds");
  EXPECT_EQ(model.bindings.occurrences, "calls");
  const auto threads = Children(model, ArcflowProfile::kRootNode);
  ASSERT_EQ(threads.size(), 1u);
  EXPECT_EQ(model.tree.size(), 1u + 1u + 11u);  // root, thread, 11 contexts

  const uint32_t main = Children(model, threads[0]).at(0);
  EXPECT_EQ(NodeName(model, main), "Main");
  EXPECT_EQ(Node(model, main).base, 0u);
  EXPECT_EQ(Node(model, main).cum, 10u);
  std::map<std::string, uint64_t> children_cum;
  for (uint32_t c : Children(model, main)) children_cum[NodeName(model, c)] = Node(model, c).cum;
  EXPECT_EQ(children_cum, (std::map<std::string, uint64_t>{{"A", 4}, {"B", 6}}));

  // In the text: Main 100%, then B 60% before A 40%; X base 0%, cum 30%.
  ArcflowOptions options;
  options.units = ArcflowUnits::kPct;
  const std::string text = Render(model, options);
  EXPECT_NE(text.find("    1           1         0.00%       100.00%    Main\n"), std::string::npos) << text;
  EXPECT_NE(text.find("    2           1        10.00%        60.00%      B\n"), std::string::npos) << text;
  EXPECT_NE(text.find("    2           1        10.00%        40.00%      A\n"), std::string::npos) << text;
  EXPECT_NE(text.find("    4           1         0.00%        30.00%          X\n"), std::string::npos) << text;
  EXPECT_LT(text.find("      B\n"), text.find("      A\n"));
  // 11 rows at level >= 1.
  size_t rows = 0;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    if (line.size() > 5 && line[0] != '#' && line.substr(0, 5) != "level" && line.substr(0, 5) != "    0")
      ++rows;
  }
  EXPECT_EQ(rows, 11u);
}

TEST(ArcflowPaper, XarcNumbers) {
  const ArcflowProfile model = Parse(kPaperCallTree);
  const auto stanzas = ComputeXarc(model);

  const XarcStanza& a = StanzaOf(stanzas, model, "A");
  EXPECT_EQ(a.self.n, 2u);
  EXPECT_EQ(a.self.base, 2u);
  EXPECT_EQ(a.self.cum, 9u);
  ASSERT_EQ(a.parents.size(), 2u);
  EXPECT_EQ(a.parents[0].consumer, ConsumerId(model, "B"));
  EXPECT_EQ(a.parents[0].cum, 5u);
  EXPECT_EQ(a.parents[1].consumer, ConsumerId(model, "Main"));
  EXPECT_EQ(a.parents[1].cum, 4u);
  ASSERT_EQ(a.children.size(), 3u);
  EXPECT_EQ(LineOf(a.children, model, "B")->cum, 3u);
  EXPECT_EQ(LineOf(a.children, model, "X")->cum, 3u);
  EXPECT_EQ(LineOf(a.children, model, "C")->cum, 1u);

  const XarcStanza& b = StanzaOf(stanzas, model, "B");
  EXPECT_EQ(b.self.n, 3u);
  EXPECT_EQ(b.self.base, 3u);
  EXPECT_EQ(b.self.cum, 9u);
  EXPECT_EQ(LineOf(b.parents, model, "Main")->cum, 6u);
  EXPECT_EQ(LineOf(b.parents, model, "A")->cum, 3u);
  EXPECT_EQ(LineOf(b.parents, model, "A")->n, 2u);
  EXPECT_EQ(LineOf(b.children, model, "A")->cum, 5u);  // A under B, re-entries of B excluded
  EXPECT_EQ(LineOf(b.children, model, "C")->cum, 1u);

  const XarcStanza& c = StanzaOf(stanzas, model, "C");
  EXPECT_EQ(c.self.n, 2u);
  EXPECT_EQ(c.self.base, 2u);
  EXPECT_EQ(c.self.cum, 2u);
  EXPECT_TRUE(c.children.empty());

  const XarcStanza& x = StanzaOf(stanzas, model, "X");
  EXPECT_EQ(x.self.base, 0u);
  EXPECT_EQ(x.self.cum, 3u);
  EXPECT_EQ(x.children.size(), 3u);

  const XarcStanza& main = StanzaOf(stanzas, model, "Main");
  EXPECT_EQ(main.self.base, 0u);
  EXPECT_EQ(main.self.cum, 10u);
  ASSERT_EQ(main.parents.size(), 1u);
  EXPECT_EQ(main.parents[0].consumer, ConsumerId(model, "0_0_input"));
  ASSERT_EQ(main.children.size(), 2u);
  EXPECT_EQ(main.children[0].consumer, ConsumerId(model, "B"));
  EXPECT_EQ(main.children[0].cum, 6u);
  EXPECT_EQ(main.children[1].cum, 4u);

  const XarcStanza& thread = StanzaOf(stanzas, model, "0_0_input");
  ASSERT_EQ(thread.parents.size(), 1u);
  EXPECT_EQ(thread.parents[0].consumer, ArcflowProfile::kNone);  // the synthetic root
  EXPECT_EQ(thread.self.cum, 10u);

  ExpectInvariants(model, "paper");
}

TEST(ArcflowPaper, XprofSortedByBaseAndByCum) {
  const ArcflowProfile model = Parse(kPaperCallTree);
  const auto by_base = ComputeXprof(model, ArcflowSort::kBase);
  std::vector<std::string> names;
  for (const auto& l : by_base) names.push_back(model.name(l.consumer));
  // B base 3 first; then A (2, cum 9) before C (2, cum 2); E F G base 1.
  EXPECT_EQ(names, (std::vector<std::string>{"B", "A", "C", "E", "F", "G", "0_0_input", "Main", "X"}));
  const auto by_cum = ComputeXprof(model, ArcflowSort::kCum);
  EXPECT_EQ(model.name(by_cum[0].consumer), "0_0_input");
  EXPECT_EQ(by_cum[0].cum, 10u);
  EXPECT_EQ(model.name(by_cum[2].consumer), "B");  // cum 9, base 3
  EXPECT_EQ(model.name(by_cum[3].consumer), "A");  // cum 9, base 2
  EXPECT_EQ(LineOf(by_cum, model, "X")->cum, 3u);
}

TEST(ArcflowInputs, EventTraceEqualsCallTree) {
  const ArcflowProfile tree = Parse(kPaperCallTree);
  const ArcflowProfile trace = Parse(kPaperTrace);
  EXPECT_EQ(trace.total(), 10u);
  for (ArcflowView view : {ArcflowView::kXtree, ArcflowView::kXarc, ArcflowView::kXprof}) {
    for (ArcflowFormat format : {ArcflowFormat::kText, ArcflowFormat::kJson}) {
      ArcflowOptions options;
      options.view = view;
      options.format = format;
      EXPECT_EQ(Render(tree, options), Render(trace, options));
    }
  }
}

// ------------------------------------------------------------ invariants on random trees

// A random model: `threads` threads, consumers drawn from a small alphabet so
// that direct and mutual recursion are frequent.
ArcflowProfile RandomModel(std::mt19937_64& rng, int alphabet, int max_depth, int paths, int threads) {
  ArcflowProfile model;
  std::uniform_int_distribution<int> name_dist(0, alphabet - 1);
  std::uniform_int_distribution<int> depth_dist(0, max_depth);
  std::uniform_int_distribution<int> thread_dist(0, threads - 1);
  std::uniform_int_distribution<uint64_t> value_dist(0, 9);
  for (int p = 0; p < paths; ++p) {
    const int t = thread_dist(rng);
    uint32_t node = model.tree.Child(ArcflowProfile::kRootNode,
                                model.InternConsumer("1_" + std::to_string(t) + "_t", ConsumerKind::kThread));
    const int depth = depth_dist(rng);
    for (int d = 0; d < depth; ++d) {
      node = model.tree.Child(node, model.InternConsumer("f" + std::to_string(name_dist(rng)),
                                                    ConsumerKind::kFunction));
    }
    const uint64_t n = value_dist(rng);
    model.tree.Add(node, n, kSamplesValue, value_dist(rng));
  }
  return model;
}

// xarc from the definitions, by walking every node's ancestors.
std::map<uint32_t, XarcStanza> BruteForceXarc(const ArcflowProfile& model) {
  std::map<uint32_t, XarcStanza> out;
  std::map<std::pair<uint32_t, uint32_t>, ArcflowLine> parents, children;
  const auto& nodes = model.tree.nodes();
  const std::vector<uint64_t> cum = model.tree.Cumulative();
  auto base = [&](uint32_t v) { return model.tree.value(v, kSamplesValue); };
  for (uint32_t v = 1; v < nodes.size(); ++v) {
    std::vector<uint32_t> ancestors;  // nearest first
    for (uint32_t a = nodes[v].parent; a != ArcflowProfile::kRootNode; a = nodes[a].parent) ancestors.push_back(a);
    const uint32_t c = nodes[v].frame;
    const bool outermost = std::none_of(ancestors.begin(), ancestors.end(),
                                        [&](uint32_t a) { return nodes[a].frame == c; });
    auto& self = out[c].self;
    self.consumer = c;
    self.n += nodes[v].n;
    self.base += base(v);
    if (outermost) self.cum += cum[v];
    const uint32_t pc = nodes[v].parent == 0 ? ArcflowProfile::kNone : nodes[nodes[v].parent].frame;
    auto& pl = parents[{c, pc}];
    pl.consumer = pc;
    pl.n += nodes[v].n;
    pl.base += base(v);
    if (outermost) pl.cum += cum[v];
    if (pc != ArcflowProfile::kNone) {
      auto& cl = children[{pc, c}];
      cl.consumer = c;
      cl.n += nodes[v].n;
      cl.base += base(v);
    }
    // base(v) flows to consumer C through the child of v's nearest C ancestor.
    std::set<uint32_t> seen;
    uint32_t below = v;
    for (uint32_t a : ancestors) {
      const uint32_t ac = nodes[a].frame;
      if (ac != c && seen.insert(ac).second) {
        children[{ac, nodes[below].frame}].cum += base(v);
      }
      seen.insert(ac);
      below = a;
    }
  }
  for (auto& [key, line] : parents) out[key.first].parents.push_back(line);
  for (auto& [key, line] : children) {
    line.consumer = key.second;
    out[key.first].children.push_back(line);
  }
  return out;
}

bool SameLines(std::vector<ArcflowLine> a, std::vector<ArcflowLine> b) {
  auto key = [](const ArcflowLine& l) { return std::make_tuple(l.consumer, l.n, l.base, l.cum); };
  auto less = [&](const ArcflowLine& x, const ArcflowLine& y) { return key(x) < key(y); };
  std::sort(a.begin(), a.end(), less);
  std::sort(b.begin(), b.end(), less);
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [&](auto& x, auto& y) {
           return key(x) == key(y);
         });
}

TEST(ArcflowProperty, InvariantsHoldOnRandomRecursiveTrees) {
  std::mt19937_64 rng(20000101);
  for (int i = 0; i < 3000; ++i) {
    const int alphabet = 2 + i % 6;
    const ArcflowProfile model = RandomModel(rng, alphabet, 2 + i % 10, 1 + i % 40, 1 + i % 3);
    const std::string context = "tree " + std::to_string(i);
    ExpectInvariants(model, context);
    if (HasFatalFailure()) return;

    // The fast computation agrees with the definitions.
    const auto brute = BruteForceXarc(model);
    const auto stanzas = ComputeXarc(model);
    ASSERT_EQ(stanzas.size(), brute.size()) << context;
    for (const auto& s : stanzas) {
      const XarcStanza& b = brute.at(s.self.consumer);
      ASSERT_EQ(s.self.n, b.self.n) << context;
      ASSERT_EQ(s.self.cum, b.self.cum) << context;
      ASSERT_TRUE(SameLines(s.parents, b.parents)) << context;
      ASSERT_TRUE(SameLines(s.children, b.children)) << context;
    }

    // Transforms keep the invariants.
    ExpectInvariants(MergeThreads(model), context + " merged");
    ExpectInvariants(Prune(model, 1.0 + i % 30), context + " pruned");
    Result<ArcflowProfile> rooted = RestrictToRoot(model, "f1|f2");
    if (rooted) ExpectInvariants(*rooted, context + " rooted");
    if (HasFatalFailure()) return;
  }
}

TEST(ArcflowProperty, DeepDirectRecursionCountsOnce) {
  // main -> r -> r -> r -> leaf: r's cum is the outermost r's cum, not 3x.
  ArcflowProfile model = Parse("main 1 1\nmain r 1 1\nmain r r 1 1\nmain r r r 1 1\nmain r r r leaf 1 5\n");
  const auto stanzas = ComputeXarc(model);
  const XarcStanza& r = StanzaOf(stanzas, model, "r");
  EXPECT_EQ(r.self.n, 3u);
  EXPECT_EQ(r.self.base, 3u);
  EXPECT_EQ(r.self.cum, 8u);
  EXPECT_EQ(LineOf(r.parents, model, "main")->cum, 8u);
  EXPECT_EQ(LineOf(r.parents, model, "r")->cum, 0u);
  EXPECT_EQ(LineOf(r.parents, model, "r")->n, 2u);
  EXPECT_EQ(LineOf(r.children, model, "r")->cum, 0u);
  EXPECT_EQ(LineOf(r.children, model, "leaf")->cum, 5u);
  ExpectInvariants(model, "deep");
}

// ------------------------------------------------------------ from a Profile

// The ground-truth program of the foundation issue: main -> outer ->
// {f_heavy, f_light} with 75/25 of the samples.
Profile GroundTruthProfile() {
  Profile profile;
  profile.meta.frequency_hz = 1000;
  auto frame = [&](const char* name) {
    FrameRecord f;
    f.module = profile.frames.InternModule("/usr/bin/groundtruth");
    f.symbol = name;
    f.kind = FrameKind::kNative;
    return profile.frames.Intern(f);
  };
  const uint32_t main = frame("main"), outer = frame("outer"), heavy = frame("f_heavy"),
                 light = frame("f_light");
  const uint32_t t = profile.ThreadIndex(4242, 4242);
  profile.threads[t].comm = "groundtruth";
  profile.threads[t].process_comm = "groundtruth";
  const uint32_t heavy_stack[] = {main, outer, heavy};
  const uint32_t light_stack[] = {main, outer, light};
  for (int i = 0; i < 75; ++i) profile.threads[t].tree.AddStack(heavy_stack, 1);
  for (int i = 0; i < 25; ++i) profile.threads[t].tree.AddStack(light_stack, 1);
  return profile;
}

TEST(ArcflowProfile, GroundTruthShape) {
  const Profile profile = GroundTruthProfile();
  const ArcflowProfile model = ArcflowFromProfile(profile, {}, false);
  EXPECT_EQ(model.total(), 100u);
  const auto xprof = ComputeXprof(model, ArcflowSort::kBase);
  ASSERT_GE(xprof.size(), 5u);
  EXPECT_EQ(model.name(xprof[0].consumer), "f_heavy");
  EXPECT_EQ(xprof[0].base, 75u);
  EXPECT_EQ(model.name(xprof[1].consumer), "f_light");
  EXPECT_EQ(xprof[1].base, 25u);
  EXPECT_EQ(LineOf(xprof, model, "outer")->cum, 100u);
  EXPECT_EQ(LineOf(xprof, model, "outer")->base, 0u);
  EXPECT_EQ(LineOf(xprof, model, "4242_4242_groundtruth")->cum, 100u);
  const auto stanzas = ComputeXarc(model);
  const XarcStanza& outer = StanzaOf(stanzas, model, "outer");
  EXPECT_EQ(LineOf(outer.children, model, "f_heavy")->cum, 75u);
  EXPECT_EQ(LineOf(outer.children, model, "f_light")->cum, 25u);
  ExpectInvariants(model, "ground truth");

  ArcflowOptions options;
  options.view = ArcflowView::kXprof;
  options.units = ArcflowUnits::kMs;
  options.format = ArcflowFormat::kJson;
  const auto json = nlohmann::json::parse(Render(profile, options));
  EXPECT_EQ(json["rows"][0]["name"], "f_heavy");
  EXPECT_DOUBLE_EQ(json["rows"][0]["base_ms"].get<double>(), 75.0);  // 75 samples at 1000 Hz
  EXPECT_DOUBLE_EQ(json["rows"][0]["base_pct"].get<double>(), 75.0);
  EXPECT_EQ(json["bindings"]["unit"], "samples");
}

TEST(ArcflowProfile, ThreadsFiltersAndMerge) {
  Profile profile = GroundTruthProfile();
  FrameRecord worker;
  worker.symbol = "worker_loop";
  const uint32_t w = profile.frames.Intern(worker);
  const uint32_t t = profile.ThreadIndex(4242, 4243);
  profile.threads[t].comm = "worker";
  profile.threads[t].process_comm = "groundtruth";
  const uint32_t stack[] = {w};
  profile.threads[t].tree.AddStack(stack, 20);

  const ArcflowProfile all = ArcflowFromProfile(profile, {}, false);
  EXPECT_EQ(all.total(), 120u);
  EXPECT_EQ(Children(all, ArcflowProfile::kRootNode).size(), 2u);

  model::ThreadFilter by_comm;
  by_comm.comms = {"worker"};
  EXPECT_EQ(ArcflowFromProfile(profile, by_comm, false).total(), 20u);
  model::ThreadFilter by_process;
  by_process.comms = {"groundtruth"};
  EXPECT_EQ(ArcflowFromProfile(profile, by_process, false).total(), 120u);
  model::ThreadFilter by_tid;
  by_tid.tids = {4242};
  EXPECT_EQ(ArcflowFromProfile(profile, by_tid, false).total(), 100u);

  const ArcflowProfile merged = ArcflowFromProfile(profile, {}, true);
  const auto threads = Children(merged, ArcflowProfile::kRootNode);
  ASSERT_EQ(threads.size(), 1u);
  EXPECT_EQ(NodeName(merged, threads[0]), "all_threads");
  EXPECT_EQ(Node(merged, threads[0]).cum, 120u);
  EXPECT_EQ(Children(merged, threads[0]).size(), 2u);  // main and worker_loop

  ArcflowOptions options;
  options.filter.pids = {1};
  std::ostringstream out;
  Result<void> r = RenderArcflowView(profile, options, out);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("filter"), std::string::npos);
}

TEST(ArcflowProfile, UnknownFramesAndSameNamesMerge) {
  Profile profile;
  FrameRecord a1;
  a1.module = profile.frames.InternModule("/lib/a.so");
  a1.symbol = "dup";
  FrameRecord a2 = a1;
  a2.address = 0x40;  // another frame record, same function name
  FrameRecord stripped;
  stripped.module = profile.frames.InternModule("/usr/bin/stripped");
  stripped.reason = UnknownReason::kStripped;
  const uint32_t f1 = profile.frames.Intern(a1), f2 = profile.frames.Intern(a2),
                 fs = profile.frames.Intern(stripped);
  const uint32_t t = profile.ThreadIndex(1, 1);
  const uint32_t s1[] = {f1, fs};
  const uint32_t s2[] = {f2, fs};
  profile.threads[t].tree.AddStack(s1, 3);
  profile.threads[t].tree.AddStack(s2, 4);
  const ArcflowProfile model = ArcflowFromProfile(profile, {}, false);
  const uint32_t thread = Children(model, ArcflowProfile::kRootNode)[0];
  ASSERT_EQ(Children(model, thread).size(), 1u);
  const uint32_t dup = Children(model, thread)[0];
  EXPECT_EQ(NodeName(model, dup), "dup");
  EXPECT_EQ(Node(model, dup).cum, 7u);
  // The one display name (model/frame_name.h): the module's base name, as in every view.
  EXPECT_EQ(NodeName(model, Children(model, dup)[0]), "[stripped]");
}

// ------------------------------------------------------------ pruning and --root

TEST(ArcflowTransforms, PruneKeepsCumAndFoldsTheRest) {
  const ArcflowProfile model = Parse(kPaperCallTree);
  const ArcflowProfile pruned = Prune(model, 15);  // keeps cum >= 1.5
  ExpectInvariants(pruned, "pruned");
  EXPECT_EQ(pruned.total(), 10u);
  // Kept: thread, Main(10), B(6), A under B(5), X(3), A(4), B under A(3). Every
  // other node had cum 1.
  size_t functions = 0, pruned_nodes = 0;
  for (const auto& node : pruned.tree.nodes()) {
    if (node.frame == ArcflowProfile::kNone) continue;  // the root
    const auto kind = pruned.kind(node.frame);
    functions += kind == ConsumerKind::kFunction;
    pruned_nodes += kind == ConsumerKind::kPruned;
  }
  EXPECT_EQ(functions, 6u);
  EXPECT_EQ(pruned_nodes, 3u);  // under X (E F G), under B/A (C), under A/B (C)
  const auto xprof = ComputeXprof(pruned, ArcflowSort::kBase);
  EXPECT_EQ(LineOf(xprof, pruned, "[pruned]")->base, 5u);
  EXPECT_EQ(LineOf(xprof, pruned, "A")->cum, 9u);
  // Pruning never removes a node whose ancestors... are kept: every kept
  // node's parent is kept, and cum did not change for any kept node.
  for (size_t v = 1; v < pruned.tree.size(); ++v) {
    const auto& node = Node(pruned, static_cast<uint32_t>(v));
    if (pruned.kind(pruned.consumer_of(static_cast<uint32_t>(v))) == ConsumerKind::kPruned) continue;
    EXPECT_GE(node.cum * 100, 15u * 10u);
  }
}

TEST(ArcflowTransforms, RootRestrictsToTheTask) {
  const ArcflowProfile model = Parse(kPaperCallTree);
  Result<ArcflowProfile> rooted = RestrictToRoot(model, "A");
  ASSERT_TRUE(rooted.ok()) << rooted.error().message;
  EXPECT_EQ(rooted->total(), 9u);
  const uint32_t thread = Children(*rooted, ArcflowProfile::kRootNode)[0];
  ASSERT_EQ(Children(*rooted, thread).size(), 1u);
  const uint32_t a = Children(*rooted, thread)[0];
  EXPECT_EQ(NodeName(*rooted, a), "A");
  EXPECT_EQ(Node(*rooted, a).n, 2u);
  EXPECT_EQ(Node(*rooted, a).base, 2u);
  EXPECT_EQ(Node(*rooted, a).cum, 9u);

  // A regex over whole names: E|F|G is the work under X.
  Result<ArcflowProfile> leaves = RestrictToRoot(model, "[EFG]");
  ASSERT_TRUE(leaves.ok());
  EXPECT_EQ(leaves->total(), 3u);
  // "X" matches exactly; "Ma" matches no whole name.
  EXPECT_EQ(RestrictToRoot(model, "X")->total(), 3u);
  Result<ArcflowProfile> none = RestrictToRoot(model, "Ma");
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.error().message.find("matches no frame"), std::string::npos);
  // An invalid regex still matches an exact name.
  ArcflowProfile odd = Parse("main 0 0\nmain operator()( 1 4\nmain other 1 1\n");
  Result<ArcflowProfile> exact = RestrictToRoot(odd, "operator()(");
  ASSERT_TRUE(exact.ok());
  EXPECT_EQ(exact->total(), 4u);
  // Huge template names and backtracking-prone patterns stay fast and safe.
  const std::string huge(200000, 'a');
  ArcflowProfile long_names = Parse("main 0 0\nmain " + huge + " 1 7\nmain b 1 1\n");
  Result<ArcflowProfile> long_match = RestrictToRoot(long_names, "(a*)*");
  ASSERT_TRUE(long_match.ok());
  EXPECT_EQ(long_match->total(), 7u);
  EXPECT_FALSE(RestrictToRoot(long_names, "(a|aa)*c").ok());
}

// ------------------------------------------------------------ units and options

TEST(ArcflowUnits, MillisecondsFromTheUnitBinding) {
  const ArcflowProfile model = Parse(kPaperCallTree);  // cpu-seconds
  ArcflowOptions options;
  options.view = ArcflowView::kXprof;
  options.units = ArcflowUnits::kMs;
  const std::string text = Render(model, options);
  EXPECT_NE(text.find("           3      3000.000    30.00%      9000.000    90.00%  B\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("# total: 10 cpu-seconds = 10000.000 ms; shown in ms\n"), std::string::npos) << text;

  ArcflowProfile instructions = Parse("#! unit instructions\nmain 1 100\n");
  std::ostringstream out;
  Result<void> r = RenderArcflowProfile(instructions, options, out);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("'instructions'"), std::string::npos);

  options.min_pct = 120;
  options.units = ArcflowUnits::kSamples;
  r = RenderArcflowProfile(instructions, options, out);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("--min 120"), std::string::npos);
}

TEST(ArcflowOptionsParsing, Names) {
  EXPECT_EQ(ParseArcflowView("xarc").value(), ArcflowView::kXarc);
  EXPECT_EQ(ParseArcflowSort("cum").value(), ArcflowSort::kCum);
  EXPECT_EQ(ParseArcflowUnits("pct").value(), ArcflowUnits::kPct);
  EXPECT_FALSE(ParseArcflowView("tree").ok());
  EXPECT_FALSE(ParseArcflowSort("n").ok());
  EXPECT_FALSE(ParseArcflowUnits("seconds").ok());
}

// ------------------------------------------------------------ parser errors

struct BadInput {
  std::string text;
  std::string message;  // a substring of the expected error
};

TEST(ArcflowInputs, CallTreeErrorsNameTheLine) {
  const std::vector<BadInput> cases = {
      {"Main 1 0\nMain A 1\n", "line 2: expected '<consumer>... <n> <Y>'"},
      {"Main 1\n", "line 1: expected"},
      {"context n Y\nheader again\n", "line 2: expected"},
      {"Main -1 0\n", "line 1: expected"},
      {"Main 1 99999999999999999999\n", "line 1: expected"},
      {"Main 1 18446744073709551615\nMain 1 1\n", "line 2: the totals overflow"},
      {"#! colour blue\n", "line 1: unknown directive"},
      {"#! unit\n", "line 1: '#! unit' needs exactly one word"},
      {"#! thread x\n", "line 1: bad thread id 'x'"},
      {"#! thread\n", "line 1: '#! thread' needs an id"},
  };
  for (const auto& c : cases) {
    Result<ArcflowProfile> r = ParseArcflowCallTree(c.text);
    ASSERT_FALSE(r.ok()) << c.text;
    EXPECT_NE(r.error().message.find(c.message), std::string::npos) << r.error().message;
  }
}

TEST(ArcflowInputs, EventTraceErrorsNameTheLine) {
  const std::vector<BadInput> cases = {
      {"5 > a\n4 < a\n", "line 2: metric 4 is smaller than the previous 5"},
      {"1 > a\n2 < b\n", "line 2: '< b' does not match the open frame 'a'"},
      {"1 < a\n", "line 1: '< a' with no open frame"},
      {"1 >\n", "line 1: '>' needs a name"},
      {"1 call a\n", "line 1: unknown record 'call'"},
      {"x > a\n", "line 1: expected '<metric> > name'"},
      {"1 thread 1/x w\n", "line 1: bad thread id '1/x'"},
      {"1 thread\n", "line 1: 'thread' needs an id"},
      {"\n\n1 > a\n", ""},  // valid: blank lines are skipped
  };
  for (const auto& c : cases) {
    Result<ArcflowProfile> r = ParseArcflowEventTrace(c.text);
    if (c.message.empty()) {
      EXPECT_TRUE(r.ok()) << c.text;
      continue;
    }
    ASSERT_FALSE(r.ok()) << c.text;
    EXPECT_NE(r.error().message.find(c.message), std::string::npos) << r.error().message;
  }
}

TEST(ArcflowInputs, EventTraceThreadsAndOpenFrames) {
  // Two threads interleaved; time between records goes to the top of the
  // thread that was current; the frame still open at the end keeps its time.
  const std::string trace =
      "#! unit cpu-ns\n"
      "0 thread 10/11 worker one\n"
      "0 > run\n"
      "5 thread 10/12\n"   // run on 11 gets 5
      "5 > idle_poll\n"
      "8 thread 10/11\n"   // idle_poll on 12 gets 3
      "20 > step\n"        // run gets 12 more
      "21 < step\n"        // step gets 1
      "30 < run\n";        // run gets 9
  Result<ArcflowProfile> r = ParseArcflowEventTrace(trace);
  ASSERT_TRUE(r.ok()) << r.error().message;
  const ArcflowProfile& model = *r;
  EXPECT_EQ(model.total(), 30u);
  EXPECT_EQ(model.bindings.unit, "cpu-ns");
  std::map<std::string, uint64_t> thread_cum;
  for (uint32_t t : Children(model, ArcflowProfile::kRootNode)) thread_cum[NodeName(model, t)] = Node(model, t).cum;
  EXPECT_EQ(thread_cum, (std::map<std::string, uint64_t>{{"10_11_worker one", 27}, {"10_12_input", 3}}));
  const auto xprof = ComputeXprof(model, ArcflowSort::kBase);
  EXPECT_EQ(LineOf(xprof, model, "run")->base, 26u);
  EXPECT_EQ(LineOf(xprof, model, "run")->n, 1u);
  EXPECT_EQ(LineOf(xprof, model, "step")->base, 1u);
}

TEST(ArcflowInputs, CallTreeThreadsAndDuplicates) {
  Result<ArcflowProfile> r = ParseArcflowCallTree(
      "#! thread 7/8 gc\nmark 1 2\nmark 1 3\n#! thread 7/9\nrun 2 4\n# a comment\n\n");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->total(), 9u);
  const auto xprof = ComputeXprof(*r, ArcflowSort::kBase);
  EXPECT_EQ(LineOf(xprof, *r, "mark")->n, 2u);
  EXPECT_EQ(LineOf(xprof, *r, "mark")->base, 5u);
  EXPECT_EQ(LineOf(xprof, *r, "7_8_gc")->cum, 5u);
  EXPECT_EQ(LineOf(xprof, *r, "7_9_input")->cum, 4u);
}

// ------------------------------------------------------------ golden reports

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Compares with tests/reports/golden_arcflow/<name>; ARCPROF_UPDATE_GOLDEN=1
// rewrites the file instead (then review the diff).
void ExpectGolden(const std::string& name, const std::string& actual) {
  const std::string path = std::string(ARCFLOW_GOLDEN_DIR) + "/" + name;
  if (const char* update = std::getenv("ARCPROF_UPDATE_GOLDEN"); update && std::string(update) == "1") {
    std::ofstream(path) << actual;
    return;
  }
  EXPECT_EQ(ReadFile(path), actual) << "golden " << path
                                    << " differs; rerun with ARCPROF_UPDATE_GOLDEN=1 and review the diff";
}

struct GoldenCase {
  std::string file;
  ArcflowView view;
  ArcflowFormat format;
  double min_pct;
  std::string root;
  ArcflowUnits units;
  ArcflowSort sort;
};

TEST(ArcflowGolden, PaperReports) {
  const ArcflowProfile model = Parse(kPaperCallTree);
  const std::vector<GoldenCase> cases = {
      {"paper_xtree.txt", ArcflowView::kXtree, ArcflowFormat::kText, 0, "", ArcflowUnits::kSamples, ArcflowSort::kBase},
      {"paper_xtree_pct.txt", ArcflowView::kXtree, ArcflowFormat::kText, 0, "", ArcflowUnits::kPct, ArcflowSort::kBase},
      {"paper_xarc.txt", ArcflowView::kXarc, ArcflowFormat::kText, 0, "", ArcflowUnits::kSamples, ArcflowSort::kBase},
      {"paper_xprof.txt", ArcflowView::kXprof, ArcflowFormat::kText, 0, "", ArcflowUnits::kSamples, ArcflowSort::kBase},
      {"paper_xprof_cum_ms.txt", ArcflowView::kXprof, ArcflowFormat::kText, 0, "", ArcflowUnits::kMs, ArcflowSort::kCum},
      {"paper_xtree.json", ArcflowView::kXtree, ArcflowFormat::kJson, 0, "", ArcflowUnits::kSamples, ArcflowSort::kBase},
      {"paper_xarc.json", ArcflowView::kXarc, ArcflowFormat::kJson, 0, "", ArcflowUnits::kSamples, ArcflowSort::kBase},
      {"paper_xprof.json", ArcflowView::kXprof, ArcflowFormat::kJson, 0, "", ArcflowUnits::kSamples, ArcflowSort::kBase},
      {"paper_min15_xtree.txt", ArcflowView::kXtree, ArcflowFormat::kText, 15, "", ArcflowUnits::kSamples, ArcflowSort::kBase},
      {"paper_min15_xarc.txt", ArcflowView::kXarc, ArcflowFormat::kText, 15, "", ArcflowUnits::kSamples, ArcflowSort::kBase},
      {"paper_root_A_xtree.txt", ArcflowView::kXtree, ArcflowFormat::kText, 0, "A", ArcflowUnits::kSamples, ArcflowSort::kBase},
      {"paper_root_A_xarc.txt", ArcflowView::kXarc, ArcflowFormat::kText, 0, "A", ArcflowUnits::kPct, ArcflowSort::kBase},
      {"paper_root_X_min40_xtree.txt", ArcflowView::kXtree, ArcflowFormat::kText, 40, "X", ArcflowUnits::kSamples, ArcflowSort::kBase},
  };
  for (const auto& c : cases) {
    ArcflowOptions options;
    options.view = c.view;
    options.format = c.format;
    options.min_pct = c.min_pct;
    options.root = c.root;
    options.units = c.units;
    options.sort = c.sort;
    const std::string out = Render(model, options);
    if (c.format == ArcflowFormat::kJson) EXPECT_NO_THROW((void)nlohmann::json::parse(out)) << c.file;
    ExpectGolden(c.file, out);
  }
}

TEST(ArcflowGolden, GroundTruthMergedThreads) {
  Profile profile = GroundTruthProfile();
  const uint32_t t = profile.ThreadIndex(4242, 4243);
  profile.threads[t].comm = "helper";
  FrameRecord outer;
  outer.module = profile.frames.InternModule("/usr/bin/groundtruth");
  outer.symbol = "outer";
  outer.kind = FrameKind::kNative;
  FrameRecord main = outer;
  main.symbol = "main";
  const uint32_t stack[] = {profile.frames.Intern(main), profile.frames.Intern(outer)};
  profile.threads[t].tree.AddStack(stack, 10);
  ArcflowOptions options;
  ExpectGolden("groundtruth_threads_xtree.txt", Render(profile, options));
  options.merge_threads = true;
  ExpectGolden("groundtruth_merged_xtree.txt", Render(profile, options));
  options.view = ArcflowView::kXarc;
  ExpectGolden("groundtruth_merged_xarc.txt", Render(profile, options));
}

}  // namespace
}  // namespace arcprof
