// The export formats on synthetic profiles with known numbers: text helpers,
// --root/--min scoping, flame trees (from captures and from folded text), the
// SVG writer, pprof (decoded with the generated protobuf classes), speedscope
// JSON, the differential report and the CLI glue.
#include <algorithm>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <zlib.h>

#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "proto/profile.pb.h"
#include "store/capture_merge.h"
#include "store/capture_store.h"
#include "model/frame_name.h"
#include "model/metric.h"
#include "reports/registry.h"
#include "reports/arcflow.h"
#include "reports/diff.h"
#include "reports/export_formats.h"
#include "reports/export_scope.h"
#include "reports/export_text.h"
#include "reports/flamegraph.h"
#include "reports/folded.h"
#include "reports/json_writer.h"
#include "reports/otlp.h"
#include "reports/pprof.h"
#include "tests/reports/otlp_check.h"
#include "cli/report_cli.h"
#include "reports/speedscope.h"
#include "reports/tprof.h"
#include "tests/reports/golden.h"
#include "tests/model/test_profiles.h"
#include "tests/layer_names.h"

namespace arcprof {
namespace {

using testing::ExpectGolden;
using testing::Gunzip;
using testing::SampleProfile;
using testing::TempDir;

// Value of the node at `path` ("busy_loop;__libc_start_main;main"), 0 when absent.
uint64_t ValueAt(const FlameTree& tree, const std::string& path) {
  uint32_t node = FlameTree::kRoot;
  std::stringstream in(path);
  std::string name;
  while (std::getline(in, name, ';')) {
    uint32_t found = FlameTree::kNone;
    for (uint32_t c : tree.children(node)) {
      if (tree.name(c) == name) found = c;
    }
    if (found == FlameTree::kNone) return 0;
    node = found;
  }
  return tree.node(node).value;
}

// Every root-to-node path of the tree with its value, for comparing trees.
// folded_names: each name as the folded format can carry it (';' -> ':').
std::map<std::string, uint64_t> AllPaths(const FlameTree& tree, bool folded_names = false) {
  std::map<std::string, uint64_t> paths;
  std::vector<std::pair<uint32_t, std::string>> stack = {{FlameTree::kRoot, "all"}};
  while (!stack.empty()) {
    auto [node, path] = stack.back();
    stack.pop_back();
    paths[path] = tree.node(node).value;
    for (uint32_t c : tree.children(node)) {
      std::string name(tree.name(c));
      if (folded_names) std::replace(name.begin(), name.end(), ';', ':');
      stack.emplace_back(c, path + ";" + name);
    }
  }
  return paths;
}


// ---------------------------------------------------------------- text helpers

TEST(ExportText, InvalidUtf8AndControlsAreReplaced) {
  EXPECT_EQ(ValidUtf8("f\xc3\xa9te"), "f\xc3\xa9te");
  EXPECT_EQ(ValidUtf8("a\xff" "b"), "a\xEF\xBF\xBD" "b");
  EXPECT_EQ(ValidUtf8("\xed\xa0\x80"), "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");  // a surrogate
  EXPECT_EQ(ValidUtf8("\xc0\xaf"), "\xEF\xBF\xBD\xEF\xBF\xBD");                  // overlong '/'
  EXPECT_EQ(ValidUtf8(std::string("a\0b\nc", 5)), "a?b?c");
  EXPECT_EQ(XmlEscape("a<b>&\"c'"), "a&lt;b&gt;&amp;&quot;c&#39;");
}

// The one JSON writer: nlohmann with invalid UTF-8 replaced (its default
// throws), controls escaped, the string read back equal.
TEST(JsonWriter, HostileStringsStayValidJson) {
  const std::string hostile = std::string("x\"\\<\xff\x1b]0;title\x07\n\xed\xa0\x80", 19) + std::string(1, '\0');
  const std::string text = DumpJson(Json{{"name", hostile}, {hostile, 1}});
  EXPECT_EQ(text.find('\xff'), std::string::npos);
  EXPECT_EQ(text.find('\x1b'), std::string::npos);
  EXPECT_NE(text.find("\\u001b"), std::string::npos);
  const auto back = nlohmann::json::parse(text);
  const std::string name = back["name"];
  EXPECT_EQ(name.substr(0, 4), "x\"\\<");
  EXPECT_EQ(name.substr(4, 3), "\xEF\xBF\xBD");
  EXPECT_NE(name.find("\x1b]0;title\x07\n"), std::string::npos);
  EXPECT_EQ(back.size(), 2u);

  std::ostringstream out;
  JsonStream stream(out);
  stream.BeginObject().Key(hostile).Value(hostile).Key("rows").BeginArray(true);
  for (int i = 0; i < 3; ++i) stream.Value(Json{{"i", i}, {"s", hostile}});
  stream.End().Key("empty").BeginArray(true).End().Key("nested").BeginObject().Members({{"a", 1}, {"b", Json::array()}});
  stream.End().End();
  const auto doc = nlohmann::json::parse(out.str());
  EXPECT_EQ(doc["rows"].size(), 3u);
  EXPECT_EQ(doc["rows"][2]["i"], 2);
  EXPECT_TRUE(doc["empty"].empty());
  EXPECT_EQ(doc["nested"]["a"], 1);
}

TEST(ExportText, Numbers) {
  EXPECT_EQ(WithThousands(0), "0");
  EXPECT_EQ(WithThousands(999), "999");
  EXPECT_EQ(WithThousands(1000), "1,000");
  EXPECT_EQ(WithThousands(12345), "12,345");
  EXPECT_EQ(WithThousands(1234567), "1,234,567");
  EXPECT_EQ(Fixed(75.625, 2), "75.62");  // binary 75.625 is exact: round-half-even
  EXPECT_EQ(Fixed(-0.001, 2), "0.00");
  EXPECT_EQ(StripFoldedSuffix("do_sys_[k]"), "do_sys");
  EXPECT_EQ(StripFoldedSuffix("[vdso]"), "[vdso]");
}

// ---------------------------------------------------------------- scope

uint64_t Samples(const Profile& p) { return p.total_samples(); }

TEST(ExportScope, RootKeepsTheSubtreesUnderTheOutermostMatch) {
  ExportOptions options;
  options.root = "main";
  auto scoped = ScopeProfile(SampleProfile(), options);
  ASSERT_TRUE(scoped.ok()) << scoped.error().message;
  EXPECT_EQ(Samples(*scoped), 1085u);  // busy loop under main; the truncated stack has no main
  const FlameTree tree = FlameTreeFromProfile(*scoped, {});
  EXPECT_EQ(ValueAt(tree, "busy_loop;main;f_heavy"), 810u);

  options.root = "f_.*";  // a regex matching whole names
  scoped = ScopeProfile(SampleProfile(), options);
  ASSERT_TRUE(scoped.ok());
  EXPECT_EQ(Samples(*scoped), 810u + 250u + 5u);

  options.root = "f_";  // not a whole name
  scoped = ScopeProfile(SampleProfile(), options);
  ASSERT_FALSE(scoped.ok());
  EXPECT_NE(scoped.error().message.find("--root 'f_' matches no frame"), std::string::npos);
  EXPECT_EQ(scoped.error().kind, ErrorKind::kFailed);
}

TEST(ExportScope, MinFoldsSmallNodesIntoPrunedKeepingTotals) {
  ExportOptions options;
  options.min_percent = 10;  // 199.5 of 1995 samples
  auto scoped = ScopeProfile(SampleProfile(), options);
  ASSERT_TRUE(scoped.ok());
  EXPECT_EQ(Samples(*scoped), 1995u);
  const FlameTree tree = FlameTreeFromProfile(*scoped, {});
  EXPECT_EQ(ValueAt(tree, "busy_loop;__libc_start_main;main;f_heavy"), 810u);
  EXPECT_EQ(ValueAt(tree, "busy_loop;__libc_start_main;main;f_heavy;inline_helper"), 0u);
  EXPECT_EQ(ValueAt(tree, "busy_loop;__libc_start_main;main;f_heavy;[pruned]"), 60u);
  EXPECT_EQ(ValueAt(tree, "busy_loop;__libc_start_main;main;[pruned]"), 25u);  // [libstripped.so]
  EXPECT_EQ(ValueAt(tree, "systemd;[pruned]"), 15u);
}

TEST(ExportScope, FilterDropsOtherThreads) {
  ExportOptions options;
  options.filter.comms = {"java"};
  options.min_percent = 0.001;  // forces the copy path
  auto scoped = ScopeProfile(SampleProfile(), options);
  ASSERT_TRUE(scoped.ok());
  EXPECT_EQ(scoped->threads.size(), 2u);
  EXPECT_EQ(Samples(*scoped), 890u);
}

// ---------------------------------------------------------------- flame trees

TEST(FlameTree, FromProfileMergesThreadsOfAProcess) {
  const FlameTree tree = FlameTreeFromProfile(SampleProfile(), {});
  EXPECT_EQ(tree.total(), 1995u);
  EXPECT_EQ(ValueAt(tree, "java"), 890u);
  EXPECT_EQ(ValueAt(tree, "java;__libc_start_main;JavaThread::run()"), 890u);
  EXPECT_EQ(ValueAt(tree, "busy_loop;__libc_start_main;main;f_heavy"), 810u);
  EXPECT_EQ(ValueAt(tree, "busy_loop;[truncated];f_heavy"), 5u);
  // Children sorted by name.
  const auto top = tree.children(FlameTree::kRoot);
  ASSERT_EQ(top.size(), 3u);
  EXPECT_EQ(tree.name(top[0]), "busy_loop");
  EXPECT_EQ(tree.name(top[1]), "java");
  EXPECT_EQ(tree.name(top[2]), "systemd");
  EXPECT_EQ(tree.node(top[0]).kind, FlameKind::kProcess);
}

TEST(FlameTree, FoldedTextGivesTheSameTreeAsTheCapture) {
  std::ostringstream folded;
  WriteFolded(SampleProfile(), {}, folded);
  auto parsed = ParseFoldedStacks(folded.str());
  ASSERT_TRUE(parsed.ok()) << parsed.error().message;
  // The capture's tree carries the display names (model/frame_name.h), Java's
  // "Lcom/acme/App;.run()V" included; folded text has ':' for the ';'.
  const FlameTree from_capture = FlameTreeFromProfile(SampleProfile(), {});
  EXPECT_EQ(AllPaths(*parsed), AllPaths(from_capture, true));
  EXPECT_EQ(AllPaths(from_capture).count(
                "all;java;__libc_start_main;JavaThread::run();Lcom/acme/App;.run()V"),
            1u);
  // Kinds from the colour suffixes.
  const uint32_t java = parsed->FindChild(FlameTree::kRoot, "java", FlameKind::kProcess);
  ASSERT_NE(java, FlameTree::kNone);
}

TEST(FlameTree, FoldedParserErrorsNameTheLine) {
  auto check = [](std::string_view text, std::string_view expected) {
    auto r = ParseFoldedStacks(text);
    ASSERT_FALSE(r.ok()) << text;
    EXPECT_NE(r.error().message.find(expected), std::string::npos) << r.error().message;
  };
  check("", "no stack found");
  check("a;b 1\nnocount\n", "line 2: no count");
  check("a;b 1.5\n", "line 1: the count '1.5' is not a whole number");
  check("a;b 99999999999999999999\n", "count out of range");
  check("a;b 3 5\n", "two counts");
  check("a 18446744073709551615\nb 1\n", "line 2: the counts add up past 2^64");
  auto ok = ParseFoldedStacks("\n  \r\na;b 2\r\na;b 3\n");
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(ValueAt(*ok, "a;b"), 5u);
}

// ---------------------------------------------------------------- svg

TEST(FlameGraphSvg, BoxesTitlesAndGeometry) {
  const FlameTree tree = FlameTreeFromProfile(SampleProfile(), {});
  std::ostringstream out;
  FlameGraphOptions options;
  WriteFlameGraphSvg(tree, options, out);
  const std::string svg = out.str();
  EXPECT_EQ(svg.rfind("<?xml", 0), 0u);
  EXPECT_NE(svg.find("<title>all (1,995 samples, 100%)</title>"), std::string::npos);
  EXPECT_NE(svg.find("<title>f_heavy (810 samples, 40.60%)</title>"), std::string::npos);
  // Widths are proportional, siblings sorted by name from the left edge:
  // busy_loop 1090/1995 of 1180 px = 644.71 px, then java 890/1995 = 526.42 px.
  EXPECT_NE(svg.find("<title>busy_loop (1,090 samples, 54.64%)</title><rect x=\"10\" y=\"117\" "
                     "width=\"644.71\""),
            std::string::npos);
  EXPECT_NE(svg.find("<title>java (890 samples, 44.61%)</title><rect x=\"654.71\" y=\"117\" "
                     "width=\"526.42\""),
            std::string::npos);
  // At 1200 px every frame is wider than 0.1 px: nothing is pruned.
  EXPECT_EQ(FlameLayout(tree, options).boxes, tree.size());
  // Names are escaped.
  EXPECT_EQ(svg.find("<title>C2Compiler::compile_method(ciEnv*) ("), svg.find("<title>C2Compiler"));
}

TEST(FlameGraphSvg, NarrowBoxesArePrunedWithTheirChildrenButKeepTheirWeight) {
  const FlameTree tree = FlameTreeFromProfile(SampleProfile(), {});
  FlameGraphOptions options;
  options.min_width_px = 20;  // 20 px of 1180 = 33.8 samples
  const FlameLayoutStats stats = FlameLayout(tree, options);
  // systemd (15 samples) and its 2 frames, [libstripped.so] (25), the truncated
  // stack (5: [truncated], f_heavy) and the anon frame (30) go.
  EXPECT_EQ(stats.boxes, tree.size() - 3 - 1 - 2 - 1);
  std::ostringstream out;
  WriteFlameGraphSvg(tree, options, out);
  EXPECT_EQ(out.str().find("systemd ("), std::string::npos);
  EXPECT_NE(out.str().find("<title>busy_loop (1,090 samples, 54.64%)"), std::string::npos);
}

TEST(FlameGraphSvg, IcicleDrawsTheRootAtTheTop) {
  const FlameTree tree = FlameTreeFromProfile(SampleProfile(), {});
  FlameGraphOptions options;
  options.icicle = true;
  std::ostringstream out;
  WriteFlameGraphSvg(tree, options, out);
  std::smatch m;
  const std::string svg = out.str();
  ASSERT_TRUE(std::regex_search(svg, m, std::regex("<title>all [^<]*</title><rect x=\"10\" y=\"(\\d+)\"")));
  EXPECT_EQ(m[1], "36");  // right below the title
  EXPECT_NE(svg.find("data-icicle=\"1\""), std::string::npos);
}

TEST(FlameGraphSvg, HostileNamesStayWellFormed) {
  auto tree = ParseFoldedStacks("p;<script>alert(1)</script>;\xff\xfe\"x&y 3\n");
  ASSERT_TRUE(tree.ok());
  std::ostringstream out;
  WriteFlameGraphSvg(*tree, {}, out);
  EXPECT_EQ(out.str().find("<script>alert"), std::string::npos);
  EXPECT_NE(out.str().find("&lt;script&gt;alert(1)&lt;/script&gt;"), std::string::npos);
  EXPECT_EQ(out.str().find('\xff'), std::string::npos);
}

// ---------------------------------------------------------------- pprof

TEST(Pprof, SampleTypesTotalsLabelsAndInlinedLines) {
  auto file = PprofFile(SampleProfile(), {});
  ASSERT_TRUE(file.ok());
  ASSERT_GE(file->size(), 2u);
  EXPECT_EQ(static_cast<unsigned char>((*file)[0]), 0x1f);
  EXPECT_EQ(static_cast<unsigned char>((*file)[1]), 0x8b);
  perftools::profiles::Profile p;
  ASSERT_TRUE(p.ParseFromString(Gunzip(*file)));
  const auto str = [&](int64_t i) { return p.string_table(static_cast<int>(i)); };
  ASSERT_GT(p.string_table_size(), 0);
  EXPECT_EQ(p.string_table(0), "");
  ASSERT_EQ(p.sample_type_size(), 2);
  EXPECT_EQ(str(p.sample_type(0).type()), "samples");
  EXPECT_EQ(str(p.sample_type(0).unit()), "count");
  EXPECT_EQ(str(p.sample_type(1).type()), "cpu");
  EXPECT_EQ(str(p.sample_type(1).unit()), "nanoseconds");
  EXPECT_EQ(p.period(), 1001001);  // 1e9 / 999 Hz
  EXPECT_EQ(str(p.period_type().type()), "cpu");
  EXPECT_EQ(p.time_nanos(), 1'700'000'000'000'000'000);
  EXPECT_EQ(p.duration_nanos(), 10'000'000'000);

  std::map<uint64_t, const perftools::profiles::Location*> locations;
  std::set<uint64_t> mapping_ids, function_ids;
  std::map<uint64_t, std::string> function_names;
  for (const auto& m : p.mapping()) EXPECT_TRUE(mapping_ids.insert(m.id()).second && m.id() != 0);
  for (const auto& f : p.function()) {
    EXPECT_TRUE(function_ids.insert(f.id()).second && f.id() != 0);
    function_names[f.id()] = str(f.name());
  }
  for (const auto& l : p.location()) {
    EXPECT_NE(l.id(), 0u);
    EXPECT_TRUE(locations.emplace(l.id(), &l).second);
    EXPECT_TRUE(l.mapping_id() == 0 || mapping_ids.count(l.mapping_id()));
    for (const auto& line : l.line()) EXPECT_TRUE(function_ids.count(line.function_id()));
  }
  // mapping[0] is the main binary: the user module with the most leaf samples.
  ASSERT_GT(p.mapping_size(), 0);
  EXPECT_EQ(str(p.mapping(0).filename()), "/usr/bin/busy");
  bool kernel_mapping = false;
  for (const auto& m : p.mapping()) kernel_mapping |= str(m.filename()) == "[kernel.kallsyms]";
  EXPECT_TRUE(kernel_mapping);

  int64_t samples = 0, cpu = 0;
  bool saw_inlined = false, saw_jit = false;
  std::map<std::string, int64_t> by_comm;
  for (const auto& s : p.sample()) {
    ASSERT_EQ(s.value_size(), 2);
    samples += s.value(0);
    cpu += s.value(1);
    EXPECT_EQ(s.value(1), s.value(0) * 1001001);
    std::map<std::string, std::string> labels;
    for (const auto& l : s.label()) {
      labels[str(l.key())] = l.str() != 0 ? str(l.str()) : std::to_string(l.num());
    }
    by_comm[labels["comm"]] += s.value(0);
    EXPECT_EQ(labels.count("pid"), 1u);
    EXPECT_EQ(labels.count("tid"), 1u);
    EXPECT_EQ(labels.count("thread_name"), 1u);
    ASSERT_GT(s.location_id_size(), 0);
    const auto* leaf = locations.at(s.location_id(0));
    if (leaf->line_size() == 2) {
      // Innermost first: inline_helper was inlined into f_heavy; one address.
      EXPECT_EQ(function_names[leaf->line(0).function_id()], "inline_helper");
      EXPECT_EQ(function_names[leaf->line(1).function_id()], "f_heavy");
      EXPECT_EQ(leaf->address(), 0x1180u);
      EXPECT_EQ(s.value(0), 60);
      EXPECT_EQ(labels["pid"], "900");
      EXPECT_EQ(labels["thread_name"], "busy loop");
      EXPECT_EQ(s.location_id_size(), 3);  // [inline_helper+f_heavy], main, __libc_start_main
      saw_inlined = true;
    }
    if (function_names[leaf->line(0).function_id()] == "Lcom/acme/App;.run()V") {
      EXPECT_EQ(leaf->mapping_id(), 0u);  // JIT code has no mapping
      saw_jit = true;
    }
  }
  EXPECT_TRUE(saw_inlined);
  EXPECT_TRUE(saw_jit);
  EXPECT_EQ(samples, 1995);
  EXPECT_EQ(cpu, 1995 * 1001001);
  EXPECT_EQ(by_comm["java"], 890);
  EXPECT_EQ(by_comm["busy loop"], 1090);
}

// A runtime's frames (python, js) carry function, file and line: pprof's
// Function.filename and Line.line, speedscope's file and line. One function's
// two lines are one Function with two lines.
Profile RuntimeProfile() {
  Profile p = SampleProfile();
  const uint32_t drive = testing::SourceFrame(p, "/srv/app.py", "drive", FrameKind::kPython, 30);
  const uint32_t a12 = testing::SourceFrame(p, "/srv/app.py", "alpha", FrameKind::kPython, 12);
  const uint32_t a13 = testing::SourceFrame(p, "/srv/app.py", "alpha", FrameKind::kPython, 13);
  p.threads[0].tree.AddStack(std::vector<uint32_t>{drive, a12}, 300);
  p.threads[0].tree.AddStack(std::vector<uint32_t>{drive, a13}, 200);
  return p;
}

TEST(Pprof, RuntimeFramesCarryFileAndLine) {
  auto file = PprofFile(RuntimeProfile(), {});
  ASSERT_TRUE(file.ok());
  perftools::profiles::Profile p;
  ASSERT_TRUE(p.ParseFromString(Gunzip(*file)));
  const auto str = [&](int64_t i) { return p.string_table(static_cast<int>(i)); };
  std::map<uint64_t, const perftools::profiles::Function*> functions;
  int alphas = 0;
  for (const auto& f : p.function()) {
    functions[f.id()] = &f;
    if (str(f.name()) == "alpha") {
      ++alphas;
      EXPECT_EQ(str(f.filename()), "/srv/app.py");
    }
  }
  EXPECT_EQ(alphas, 1);
  std::set<int64_t> alpha_lines;
  for (const auto& l : p.location()) {
    for (const auto& line : l.line()) {
      if (str(functions.at(line.function_id())->name()) == "alpha") {
        alpha_lines.insert(line.line());
        EXPECT_EQ(l.mapping_id(), 0u);
      }
    }
  }
  EXPECT_EQ(alpha_lines, (std::set<int64_t>{12, 13}));
}

TEST(Speedscope, RuntimeFramesCarryFileAndLine) {
  std::ostringstream out;
  WriteSpeedscope(RuntimeProfile(), {}, out);
  const auto json = nlohmann::json::parse(out.str());
  std::set<int64_t> lines;
  for (const auto& f : json["shared"]["frames"]) {
    if (f["name"] != "alpha") continue;
    EXPECT_EQ(f["file"], "/srv/app.py");
    lines.insert(f["line"].get<int64_t>());
  }
  EXPECT_EQ(lines, (std::set<int64_t>{12, 13}));
}

TEST(Pprof, FilterSelectsThreads) {
  ThreadFilter filter;
  filter.tids = {4170};
  perftools::profiles::Profile p;
  ASSERT_TRUE(p.ParseFromString(EncodePprof(SampleProfile(), filter)));
  int64_t samples = 0;
  for (const auto& s : p.sample()) samples += s.value(0);
  EXPECT_EQ(samples, 240);
}

// ---------------------------------------------------------------- otlp

Profile MetricProfile();  // below, with the --metric tests
using testing::CaptureContent;
using testing::DecodeOtlp;
using testing::OtlpContent;

// Decoded with the generated classes of the vendored opentelemetry-proto: one
// resource (host.name), one profile per sample type, every stack and value
// equal to the capture's, attributes with the semantic-convention names.
TEST(Otlp, StacksValuesAndAttributesEqualTheCapture) {
  const Profile profile = SampleProfile();
  OtlpOptions options;
  options.profile_id_seed = "cafe/1";
  options.resource_attributes = {{"deployment.environment", "ci"}};
  const std::string bytes = EncodeOtlp(profile, {}, options);
  const OtlpContent got = DecodeOtlp(bytes);
  ASSERT_EQ(got.error, "");
  const OtlpContent want = CaptureContent(profile);
  EXPECT_EQ(got.totals.at("samples"), 1995);
  EXPECT_EQ(got.totals.at("samples"), want.totals.at("samples"));
  EXPECT_EQ(got.totals.at("cpu"), 1995 * 1001001);
  EXPECT_EQ(got.totals.at("cpu"), want.totals.at("cpu"));
  EXPECT_EQ(got.stacks.at("samples"), want.stacks.at("samples"));
  ASSERT_EQ(got.resources.size(), 1u);
  EXPECT_EQ(got.resources[0].at("host.name"), "testhost");
  EXPECT_EQ(got.resources[0].at("deployment.environment"), "ci");

  // The same bytes are a ProfilesData (the signal's file form).
  opentelemetry::proto::profiles::v1development::ProfilesData data;
  ASSERT_TRUE(data.ParseFromString(bytes));
  ASSERT_EQ(data.resource_profiles_size(), 1);
  const auto& scope = data.resource_profiles(0).scope_profiles(0);
  EXPECT_EQ(scope.scope().name(), "arcprof");
  const auto& d = data.dictionary();
  ASSERT_EQ(scope.profiles_size(), 2);
  const auto& samples = scope.profiles(0);
  EXPECT_EQ(d.string_table(samples.sample_type().type_strindex()), "samples");
  EXPECT_EQ(d.string_table(samples.sample_type().unit_strindex()), "count");
  EXPECT_EQ(d.string_table(scope.profiles(1).sample_type().unit_strindex()), "nanoseconds");
  EXPECT_EQ(d.string_table(samples.period_type().type_strindex()), "cpu");
  EXPECT_EQ(samples.period(), 1001001);
  EXPECT_EQ(samples.time_unix_nano(), 1'700'000'000'000'000'000u);
  EXPECT_EQ(samples.duration_nano(), 10'000'000'000u);
  // Stable, distinct ids: a resend of one window carries the same ones.
  EXPECT_EQ(samples.profile_id().size(), 16u);
  EXPECT_NE(samples.profile_id(), scope.profiles(1).profile_id());
  EXPECT_EQ(DecodeOtlp(EncodeOtlp(profile, {}, options)).profile_ids, got.profile_ids);

  // Per-sample attributes; the inlined frame is a second line of its location.
  std::map<std::string, int64_t> by_exe;
  bool saw_inlined = false, saw_build_id = false;
  for (const auto& s : samples.samples()) {
    std::map<std::string, std::string> a;
    for (int32_t i : s.attribute_indices()) {
      const auto& kv = d.attribute_table(i);
      a[d.string_table(kv.key_strindex())] =
          kv.value().has_int_value() ? std::to_string(kv.value().int_value()) : kv.value().string_value();
    }
    EXPECT_EQ(a.count("process.pid"), 1u);
    EXPECT_EQ(a.count("thread.id"), 1u);
    EXPECT_EQ(a.count("thread.name"), 1u);
    by_exe[a["process.executable.name"]] += s.values(0);
    const auto& leaf = d.location_table(d.stack_table(s.stack_index()).location_indices(0));
    if (leaf.lines_size() == 2) {
      EXPECT_EQ(d.string_table(d.function_table(leaf.lines(0).function_index()).name_strindex()), "inline_helper");
      EXPECT_EQ(d.string_table(d.function_table(leaf.lines(1).function_index()).name_strindex()), "f_heavy");
      EXPECT_EQ(leaf.address(), 0x1180u);
      EXPECT_EQ(a["process.pid"], "900");
      EXPECT_EQ(a["thread.name"], "busy loop");
      const auto& mapping = d.mapping_table(leaf.mapping_index());
      EXPECT_EQ(d.string_table(mapping.filename_strindex()), "/usr/bin/busy");
      for (int32_t i : mapping.attribute_indices()) {
        saw_build_id |= d.string_table(d.attribute_table(i).key_strindex()) == "process.executable.build_id.gnu";
      }
      saw_inlined = true;
    }
  }
  EXPECT_TRUE(saw_inlined);
  EXPECT_EQ(saw_build_id, profile.build_ids.count("/usr/bin/busy") == 1);
  EXPECT_EQ(by_exe["java"], 890);
}

// Off-CPU time: one profile per value type, as pprof's (samples, cpu, offcpu,
// wall), each with the capture's totals; zero values are not written.
TEST(Otlp, EveryValueTypeIsAProfile) {
  const Profile p = MetricProfile();
  const OtlpContent got = DecodeOtlp(EncodeOtlp(p, {}));
  ASSERT_EQ(got.error, "");
  const OtlpContent want = CaptureContent(p);
  EXPECT_EQ(got.totals, want.totals);
  EXPECT_EQ(got.totals.at("cpu"), 54'000'000);
  EXPECT_EQ(got.totals.at("wall"), 57'000'000);
  EXPECT_EQ(got.stacks.at("offcpu"), want.stacks.at("offcpu"));
  EXPECT_EQ(got.stacks.at("samples"), want.stacks.at("samples"));
  EXPECT_EQ(got.stacks.at("offcpu").size(), 1u);
}

// A merge of two machines: one resource each, host.name from the threads.
TEST(Otlp, OneResourcePerMachine) {
  TempDir tmp;
  Profile a = SampleProfile();
  a.meta.host = "web1";
  Profile b = SampleProfile();
  b.meta.host = "web2";
  ASSERT_TRUE(WriteCapture(tmp.File("a.db"), a).ok());
  ASSERT_TRUE(WriteCapture(tmp.File("b.db"), b).ok());
  auto merged = MergeCaptures({tmp.File("a.db"), tmp.File("b.db")}, false);
  ASSERT_TRUE(merged.ok()) << merged.error().message;
  const std::string bytes = EncodeOtlp(merged->profile, {});
  const OtlpContent got = DecodeOtlp(bytes);
  ASSERT_EQ(got.error, "");
  ASSERT_EQ(got.resources.size(), 2u);
  EXPECT_EQ(got.resources[0].at("host.name"), "web1");
  EXPECT_EQ(got.resources[1].at("host.name"), "web2");
  EXPECT_EQ(got.totals.at("samples"), 2 * 1995);
  opentelemetry::proto::profiles::v1development::ProfilesData data;
  ASSERT_TRUE(data.ParseFromString(bytes));
  for (const auto& rp : data.resource_profiles()) {
    int64_t samples = 0;
    for (const auto& s : rp.scope_profiles(0).profiles(0).samples()) samples += s.values(0);
    EXPECT_EQ(samples, 1995);
  }
}

// The process identity: one resource per container/pod/service, each with
// the attributes of its processes and their samples; the rest of the machine
// in a resource of its own; --service-name (an extra attribute) replaces a
// process's service.name.
TEST(Otlp, OneResourcePerContainerPodAndService) {
  const std::string container = "c0ffee0123456789c0ffee0123456789c0ffee0123456789c0ffee0123456789";
  Profile profile = SampleProfile();
  int64_t busy = 0;
  for (ThreadRecord& t : profile.threads) {
    if (t.pid != 900) continue;
    t.identity.container_id = container;
    t.identity.pod_uid = "8f2d1c3a-1b2c-4d5e-8f90-123456789abc";
    t.identity.service_name = "busy";
    busy += static_cast<int64_t>(t.tree.total());
  }
  const OtlpContent got = DecodeOtlp(EncodeOtlp(profile, {}));
  ASSERT_EQ(got.error, "");
  ASSERT_EQ(got.resources.size(), 2u);
  opentelemetry::proto::profiles::v1development::ProfilesData data;
  ASSERT_TRUE(data.ParseFromString(EncodeOtlp(profile, {})));
  std::map<std::string, int64_t> samples_by_container;
  for (const auto& rp : data.resource_profiles()) {
    std::map<std::string, std::string> a;
    for (const auto& kv : rp.resource().attributes()) a[kv.key()] = kv.value().string_value();
    EXPECT_EQ(a.at("host.name"), "testhost");
    if (a.count("container.id")) {
      EXPECT_EQ(a.at("k8s.pod.uid"), "8f2d1c3a-1b2c-4d5e-8f90-123456789abc");
      EXPECT_EQ(a.at("service.name"), "busy");
    } else {
      EXPECT_EQ(a.count("service.name"), 0u);
    }
    for (const auto& s : rp.scope_profiles(0).profiles(0).samples()) samples_by_container[a["container.id"]] += s.values(0);
  }
  EXPECT_EQ(samples_by_container.at(container), busy);
  EXPECT_EQ(samples_by_container.at(""), 1995 - busy);

  OtlpOptions named;
  named.resource_attributes = {{"service.name", "web"}};
  const OtlpContent overridden = DecodeOtlp(EncodeOtlp(profile, {}, named));
  ASSERT_EQ(overridden.resources.size(), 2u);
  for (const auto& r : overridden.resources) EXPECT_EQ(r.at("service.name"), "web");
}

// Through the registry (export --format otlp): the filter selects threads.
TEST(Otlp, ExportFormatHonoursTheFilter) {
  ExportOptions options;
  options.filter.tids = {4170};
  std::ostringstream out;
  ASSERT_TRUE(BuiltinRegistry().formats.at("otlp")(SampleProfile(), options, out).ok());
  const OtlpContent got = DecodeOtlp(out.str());
  ASSERT_EQ(got.error, "");
  EXPECT_EQ(got.totals.at("samples"), 240);
}

// ---------------------------------------------------------------- speedscope

TEST(Speedscope, OneSampledProfilePerThread) {
  std::ostringstream out;
  WriteSpeedscope(SampleProfile(), {}, out);
  ExpectGolden("sample.speedscope.json", out.str());
  const auto json = nlohmann::json::parse(out.str());
  EXPECT_EQ(json["$schema"], "https://www.speedscope.app/file-format-schema.json");
  const auto& frames = json["shared"]["frames"];
  ASSERT_EQ(json["profiles"].size(), 4u);
  EXPECT_EQ(json["activeProfileIndex"], 2);  // the busy loop thread, 1090 samples
  std::map<std::string, uint64_t> totals;
  for (const auto& profile : json["profiles"]) {
    EXPECT_EQ(profile["type"], "sampled");
    EXPECT_EQ(profile["unit"], "none");
    ASSERT_EQ(profile["samples"].size(), profile["weights"].size());
    uint64_t total = 0;
    for (const auto& w : profile["weights"]) total += w.get<uint64_t>();
    EXPECT_EQ(profile["endValue"], total);
    for (const auto& stack : profile["samples"]) {
      for (const auto& f : stack) ASSERT_LT(f.get<size_t>(), frames.size());
    }
    totals[profile["name"]] = total;
  }
  EXPECT_EQ(totals["busy loop pid 900 tid 900 busy loop"], 1090u);
  EXPECT_EQ(totals["java pid 4156 tid 4170 C2 CompilerThre"], 240u);
  // Stacks root first: the busy loop's first sample starts at __libc_start_main.
  const auto& busy = json["profiles"][2];
  EXPECT_EQ(frames[busy["samples"][0][0].get<size_t>()]["name"], "__libc_start_main");
}

// Invalid UTF-8 and terminal escapes in a thread name and a perf-map symbol:
// the export still parses, bad bytes as U+FFFD.
TEST(Speedscope, HostileNamesStayValidJson) {
  Profile profile = SampleProfile();
  FrameRecord frame;
  frame.module = profile.frames.InternModule("/tmp/perf-77.map\xfe");
  frame.symbol = "evil\xff\x1b[2J\xc0\xaf";
  frame.kind = FrameKind::kJit;
  const uint32_t id = profile.frames.Intern(frame);
  ThreadRecord& thread = profile.threads[profile.ThreadIndex(77, 77)];
  thread.comm = "bad\xff\x07name";
  const uint32_t stack[] = {id};
  thread.tree.AddStack(stack, 5);
  std::ostringstream out;
  WriteSpeedscope(profile, {}, out);
  EXPECT_EQ(out.str().find('\xff'), std::string::npos);
  const auto json = nlohmann::json::parse(out.str());
  bool seen = false;
  for (const auto& f : json["shared"]["frames"]) {
    const std::string name = f["name"];
    if (name.rfind("evil", 0) == 0) {
      seen = true;
      EXPECT_EQ(name, "evil\xEF\xBF\xBD\x1b[2J\xEF\xBF\xBD\xEF\xBF\xBD");
    }
  }
  EXPECT_TRUE(seen);
  ASSERT_EQ(json["profiles"].size(), 5u);
}

// ---------------------------------------------------------------- one frame name

// A stripped libc frame (with and without the offset the capture keeps), a
// vDSO frame, a frame of nothing known and a Java frame: every view and export
// shows each by model::FrameDisplayName, the same text.
// One thread that ran main;work for 10 samples (PTT measured 50 ms of CPU:
// 5 ms a sample) and was blocked 3 ms in main;wait, and one that PTT did not
// see (1 ms a sample at 1000 Hz) with 4 samples in main;other.
Profile MetricProfile() {
  Profile p;
  p.meta.frequency_hz = 1000;
  auto frame = [&](const char* name) { return p.frames.Intern("/bin/app", FrameRecord{0, name, 0, FrameKind::kNative}); };
  const uint32_t main_f = frame("main"), work = frame("work"), wait = frame("wait"), other = frame("other");
  const size_t offcpu = p.DeclareValue(ValueType{"offcpu", "nanoseconds"});
  ThreadRecord& a = p.threads[p.ThreadIndex(10, 10)];
  a.comm = a.process_comm = "app";
  a.tree.AddStack(std::vector<uint32_t>{main_f, work}, 10);
  a.tree.Add(a.tree.AddStack(std::vector<uint32_t>{main_f, wait}, 0), 0, offcpu, 3'000'000);
  ThreadRecord& b = p.threads[p.ThreadIndex(10, 11)];
  b.comm = "helper";
  b.process_comm = "app";
  b.tree.AddStack(std::vector<uint32_t>{main_f, other}, 4);
  p.ptt.recorded = true;
  PttThread measured;
  measured.pid = 10;
  measured.tid = 10;
  measured.cpu_ns = 50'000'000;
  p.ptt.threads.push_back(measured);
  return p;
}

// --metric reaches every view and export through the one selector, with the
// CPU rate of the whole capture even after --root cuts a thread's tree.
TEST(Metric, EveryViewAndExportWeighsByTheSelectedMetric) {
  const Profile p = MetricProfile();
  auto wall = Metric::Select(p, "wall");
  ASSERT_TRUE(wall.ok()) << wall.error().message;
  EXPECT_EQ(wall->unit(), "wall-us");
  EXPECT_EQ(wall->Total(p.threads[0]), 50'000u + 3'000u);
  EXPECT_EQ(wall->Total(p.threads[1]), 4'000u);

  const auto folded = FoldStacks(p, {}, *wall);
  EXPECT_EQ(folded.at("app;main;work"), 50'000u);
  EXPECT_EQ(folded.at("app;main;wait"), 3'000u);
  EXPECT_EQ(folded.at("app;main;other"), 4'000u);

  TprofOptions tprof;
  tprof.metric = *wall;
  EXPECT_EQ(BuildTprof(p, tprof).total_samples, 57'000u);
  EXPECT_EQ(FlameTreeFromProfile(p, {}, *wall).total(), 57'000u);
  const ArcflowProfile arcflow = ArcflowFromProfile(p, {}, true, *wall);
  EXPECT_EQ(arcflow.total(), 57'000u);
  EXPECT_EQ(arcflow.bindings.unit, "wall-us");

  std::ostringstream speedscope;
  WriteSpeedscope(p, {}, speedscope, *wall);
  const auto json = nlohmann::json::parse(speedscope.str());
  EXPECT_EQ(json["profiles"][0]["unit"], "microseconds");

  // Through the registry: --root main;work keeps thread 10's 5 ms a sample.
  ExportOptions options;
  options.metric = "cpu";
  options.root = "work";
  std::ostringstream out;
  ASSERT_TRUE(BuiltinRegistry().formats.at("folded")(p, options, out).ok());
  EXPECT_EQ(out.str(), "app;work 50000\n");
  options.metric = "offcpu";
  options.root = "";
  out.str("");
  ASSERT_TRUE(BuiltinRegistry().formats.at("folded")(p, options, out).ok());
  EXPECT_EQ(out.str(), "app;main;wait 3000\n");

  // pprof carries every value, --metric its default type.
  perftools::profiles::Profile pprof;
  ASSERT_TRUE(pprof.ParseFromString(EncodePprof(p, {}, "offcpu")));
  std::vector<std::string> types;
  for (const auto& t : pprof.sample_type()) types.push_back(pprof.string_table(t.type()));
  EXPECT_EQ(types, (std::vector<std::string>{"samples", "cpu", "offcpu", "wall"}));
  EXPECT_EQ(pprof.string_table(pprof.default_sample_type()), "offcpu");
  // cpu is --metric cpu in ns: PTT's 50 ms for thread 10, 4 x 1 ms for
  // thread 11 (not measured); wall adds the 3 ms blocked; a comment says so.
  std::map<std::string, std::vector<int64_t>> by_leaf;
  const auto leaf_name = [&](const perftools::profiles::Sample& s) {
    for (const auto& loc : pprof.location()) {
      if (loc.id() != s.location_id(0)) continue;
      for (const auto& f : pprof.function()) {
        if (f.id() == loc.line(0).function_id()) return pprof.string_table(f.name());
      }
    }
    return std::string();
  };
  for (const auto& s : pprof.sample()) by_leaf[leaf_name(s)] = {s.value().begin(), s.value().end()};
  EXPECT_EQ(by_leaf["work"], (std::vector<int64_t>{10, 50'000'000, 0, 50'000'000}));
  EXPECT_EQ(by_leaf["wait"], (std::vector<int64_t>{0, 0, 3'000'000, 3'000'000}));
  EXPECT_EQ(by_leaf["other"], (std::vector<int64_t>{4, 4'000'000, 0, 4'000'000}));
  bool cpu_comment = false;
  for (int64_t c : pprof.comment()) {
    const std::string& text = pprof.string_table(c);
    cpu_comment = cpu_comment || (text.find("measured by PTT") != std::string::npos &&
                                  text.find("1 of 2 threads") != std::string::npos);
  }
  EXPECT_TRUE(cpu_comment);
  // Through the registry with --root: thread 10 keeps its 5 ms a sample.
  options.metric = "samples";
  options.root = "work";
  out.str("");
  ASSERT_TRUE(BuiltinRegistry().formats.at("pprof")(p, options, out).ok());
  perftools::profiles::Profile rooted;
  const auto unzipped = Gunzip(out.str());
  ASSERT_TRUE(rooted.ParseFromString(unzipped));
  ASSERT_EQ(rooted.sample_size(), 1);
  EXPECT_EQ(rooted.sample(0).value(1), 50'000'000);

  EXPECT_FALSE(Metric::Select(p, "bogus").ok());
  Profile without_offcpu = SampleProfile();
  EXPECT_FALSE(Metric::Select(without_offcpu, "wall").ok());
}

TEST(FrameDisplayName, EveryViewAndExportShowsTheSameName) {
  Profile profile;
  profile.meta.frequency_hz = 99;
  auto frame = [&](std::string module, std::string symbol, FrameKind kind, uint64_t address,
                   UnknownReason reason) {
    FrameRecord f;
    f.module = profile.frames.InternModule(module);
    f.symbol = std::move(symbol);
    f.kind = kind;
    f.address = address;
    f.reason = reason;
    return profile.frames.Intern(f);
  };
  const uint32_t main_f = frame("/usr/bin/app", "main", FrameKind::kNative, 0x1000, UnknownReason::kNone);
  const std::string libc = "/usr/lib/x86_64-linux-gnu/libc.so.6";
  const uint32_t stripped = frame(libc, "", FrameKind::kNative, 0, UnknownReason::kStripped);
  const uint32_t located = frame(libc, "", FrameKind::kNative, 0x9a1b0, UnknownReason::kStripped);
  const uint32_t vdso = frame("[vdso]", "", FrameKind::kNative, 0, UnknownReason::kNoSymbols);
  const uint32_t nothing = frame("", "", FrameKind::kUnknown, 0, UnknownReason::kUnmapped);
  const uint32_t java = frame("JITCODE", "Lcom/acme/App;.run()V", FrameKind::kJit, 0x7f00, UnknownReason::kNone);
  const std::vector<std::pair<uint32_t, std::string>> expected = {
      {stripped, "[libc.so.6]"}, {located, "[libc.so.6+0x9a1b0]"}, {vdso, "[vdso]"},
      {nothing, "[unknown]"}, {java, "Lcom/acme/App;.run()V"}};
  const uint32_t t = profile.ThreadIndex(7, 7);
  profile.threads[t].comm = profile.threads[t].process_comm = "app";
  uint64_t count = 1;
  for (const auto& [id, name] : expected) {
    EXPECT_EQ(FrameDisplayName(profile.frames, id), name);
    const uint32_t stack[] = {main_f, id};
    profile.threads[t].tree.AddStack(stack, count++);
  }

  // Views: tprof symbol rows, arcflow consumers (xtree, xarc, xprof), the flame tree
  // (SVG, HTML, diff).
  TprofOptions by_sym;
  by_sym.levels = {TprofLevel::kModule, TprofLevel::kSymbol};
  std::set<std::string> tprof_names, arcflow_names, flame_names, speedscope_names, pprof_names;
  for (const auto& module : BuildTprof(profile, by_sym).rows) {
    for (const auto& row : module.children) tprof_names.insert(row.name);
  }
  const ArcflowProfile model = ArcflowFromProfile(profile, {}, true);
  for (uint32_t i = 1; i < model.tree.size(); ++i) arcflow_names.insert(model.name(model.consumer_of(i)));
  const FlameTree tree = FlameTreeFromProfile(profile, {});
  std::vector<uint32_t> todo = {FlameTree::kRoot};
  while (!todo.empty()) {
    const uint32_t node = todo.back();
    todo.pop_back();
    for (uint32_t c : tree.children(node)) {
      flame_names.insert(tree.name(c));
      todo.push_back(c);
    }
  }
  std::ostringstream svg;
  WriteFlameGraphSvg(tree, {}, svg);
  // Exports: speedscope, pprof, folded.
  std::ostringstream speedscope;
  WriteSpeedscope(profile, {}, speedscope);
  const auto speedscope_json = nlohmann::json::parse(speedscope.str());
  for (const auto& f : speedscope_json["shared"]["frames"]) {
    speedscope_names.insert(f["name"].get<std::string>());
  }
  perftools::profiles::Profile pprof;
  ASSERT_TRUE(pprof.ParseFromString(EncodePprof(profile, {})));
  for (const auto& f : pprof.function()) pprof_names.insert(pprof.string_table(static_cast<int>(f.name())));
  std::ostringstream folded;
  WriteFolded(profile, {}, folded);

  for (const auto& [id, name] : expected) {
    SCOPED_TRACE(name);
    EXPECT_EQ(tprof_names.count(name), 1u);
    EXPECT_EQ(arcflow_names.count(name), 1u);
    EXPECT_EQ(flame_names.count(name), 1u);
    EXPECT_NE(svg.str().find("<title>" + XmlEscape(name) + " ("), std::string::npos);
    EXPECT_EQ(speedscope_names.count(name), 1u);
    EXPECT_EQ(pprof_names.count(name), 1u);
    // Folded text cannot hold ';' (it separates frames): ':' instead, then the kind suffix.
    std::string in_folded = name;
    std::replace(in_folded.begin(), in_folded.end(), ';', ':');
    EXPECT_NE(folded.str().find(";" + in_folded), std::string::npos) << folded.str();
  }
}

// ---------------------------------------------------------------- diff

FlameTree Folded(std::string_view text) {
  auto tree = ParseFoldedStacks(text);
  EXPECT_TRUE(tree.ok());
  return tree.ok() ? std::move(*tree) : FlameTree{};
}

TEST(Diff, SharesInPercentagePointsOfEachTotal) {
  // 3:1 before, 1:3 after, and the after capture is twice as long.
  const FlameTree before = Folded("p;outer;f_heavy 75\np;outer;f_light 25\n");
  const FlameTree after = Folded("p;outer;f_heavy 50\np;outer;f_light 150\n");
  const DiffReport report = ComputeDiff(before, after);
  EXPECT_EQ(report.before_samples, 100u);
  EXPECT_EQ(report.after_samples, 200u);
  ASSERT_EQ(report.rows.size(), 4u);
  EXPECT_EQ(report.rows[0].name, "f_heavy");  // |-50| ties with f_light: by name
  EXPECT_DOUBLE_EQ(report.rows[0].self_delta(), -50);
  EXPECT_EQ(report.rows[1].name, "f_light");
  EXPECT_DOUBLE_EQ(report.rows[1].self_delta(), 50);
  EXPECT_DOUBLE_EQ(report.rows[2].total_delta(), 0);

  const FlameTree graph = DifferentialFlameTree(before, after);
  ASSERT_EQ(graph.delta_points.size(), graph.size());
  const uint32_t outer = graph.FindChild(graph.FindChild(FlameTree::kRoot, "p", FlameKind::kProcess), "outer",
                                         FlameKind::kNative);
  EXPECT_DOUBLE_EQ(graph.delta_points[outer], 0);
  EXPECT_DOUBLE_EQ(graph.delta_points[graph.FindChild(outer, "f_heavy", FlameKind::kNative)], -50);
  std::ostringstream svg;
  WriteFlameGraphSvg(graph, {}, svg);
  EXPECT_NE(svg.str().find("<title>f_heavy (50 samples, 25.00%; -50.00 points)</title>"), std::string::npos);
  EXPECT_NE(svg.str().find("fill=\"#0000ff\""), std::string::npos);  // the largest drop: full blue
}

TEST(Diff, RecursionCountsOncePerStackAndTheTableIsStable) {
  const FlameTree before = Folded("p;r;r;r 10\np;x 10\n");
  const FlameTree after = Folded("p;r 5\np;x 15\n");
  const DiffReport report = ComputeDiff(before, after);
  std::ostringstream text;
  WriteDiffText(report, "a.db", "b.db", "d.svg", 10, text);
  ExpectGolden("diff_table.txt", text.str());
  for (const DiffRow& row : report.rows) {
    if (row.name == "r") {
      EXPECT_DOUBLE_EQ(row.total_before, 50);  // not 150
      EXPECT_DOUBLE_EQ(row.total_after, 25);
    }
  }
}

// ---------------------------------------------------------------- command line

struct RunResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};

RunResult RunArcprof(std::vector<std::string> args) {
  CLI::App app("arcprof");
  ReportCommands commands(app);
  std::vector<std::string> reversed(args.rbegin(), args.rend());
  RunResult result;
  try {
    app.parse(reversed);
  } catch (const CLI::ParseError& e) {
    std::ostringstream out, err;
    result.exit_code = app.exit(e, out, err);
    result.err = err.str();
    return result;
  }
  std::ostringstream out, err;
  result.exit_code = commands.RunIfSelected(out, err).value_or(-100);
  result.out = out.str();
  result.err = err.str();
  return result;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

class ExportCli : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(WriteCapture(capture_, SampleProfile()).ok()); }
  TempDir dir_;
  std::string capture_ = dir_.File("arcprof.db");
};

TEST_F(ExportCli, EveryFormatWritesAPrivateFile) {
  for (const std::string format : {"svg", "html", "pprof", "speedscope", "xprof", "folded"}) {
    const std::string path = dir_.File("out." + format);
    const RunResult r = RunArcprof({"export", "--format", format, "-i", capture_, "-o", path});
    ASSERT_EQ(r.exit_code, 0) << format << ": " << r.err;
    struct stat st {};
    ASSERT_EQ(stat(path.c_str(), &st), 0) << format;
    EXPECT_EQ(st.st_mode & 0777, 0600u) << format;
  }
  EXPECT_EQ(ReadFile(dir_.File("out.svg")).rfind("<?xml", 0), 0u);
  const std::string html = ReadFile(dir_.File("out.html"));
  EXPECT_NE(html.find("<svg version"), std::string::npos);
  EXPECT_NE(html.find("<td>f_heavy</td>"), std::string::npos);                  // xprof list
  EXPECT_NE(html.find("busy loop_900</td>"), std::string::npos);               // tprof table
  EXPECT_NE(ReadFile(dir_.File("out.xprof")).find("f_heavy"), std::string::npos);
}

TEST_F(ExportCli, RootAndMinApplyToEveryFormat) {
  RunResult r = RunArcprof({"export", "--format", "folded", "-i", capture_, "--root", "main"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "busy_loop;main;[libstripped.so+0x4000] 25\nbusy_loop;main;f_heavy 750\n"
                   "busy_loop;main;f_heavy;inline_helper_[i] 60\nbusy_loop;main;f_light 250\n");
  r = RunArcprof({"export", "--format", "speedscope", "-i", capture_, "--min", "50"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("\"name\":\"[pruned]\""), std::string::npos);
  r = RunArcprof({"export", "--format", "svg", "-i", capture_, "--icicle", "--comm", "systemd"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("<title>all (15 samples, 100%)</title>"), std::string::npos);
  EXPECT_NE(r.out.find("Icicle Graph"), std::string::npos);
}

TEST_F(ExportCli, ErrorsAreOneLineAndLeaveNoFile) {
  const std::string path = dir_.File("out.svg");
  RunResult r = RunArcprof({"export", "--format", "svg", "-i", capture_, "--root", "nothing_like_this", "-o", path});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err, "arcprof export: --root 'nothing_like_this' matches no frame; give an exact function name "
                   "or a regex matching a whole name (list the names with arcprof report --by sym)\n");
  r = RunArcprof({"export", "--format", "pprof", "-i", capture_, "--pid", "12345", "-o", path});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("no samples match the --pid/--tid/--comm/--container/--service/--cgroup filter"), std::string::npos);
  r = RunArcprof({"export", "--format", "gif", "-i", capture_});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err, "arcprof export: unknown format 'gif'; use one of folded, html, otlp, pprof, speedscope, svg, xprof, timeline-svg\n");
  EXPECT_EQ(dir_.Entries(), std::vector<std::string>{"arcprof.db"});
}

TEST_F(ExportCli, DiffWritesTheGraphAndPrintsTheTable) {
  // After: the busy loop spends 1995 more samples in f_light.
  Profile after = SampleProfile();
  std::map<std::string, uint32_t> frame_ids;
  for (uint32_t f = 0; f < after.frames.size(); ++f) frame_ids[after.frames.at(f).symbol] = f;
  const uint32_t busy = after.ThreadIndex(900, 900);
  after.threads[busy].tree.AddStack(
      std::vector<uint32_t>{frame_ids["__libc_start_main"], frame_ids["main"], frame_ids["f_light"]}, 1995);
  const std::string other = dir_.File("after.db");
  ASSERT_TRUE(WriteCapture(other, after).ok());
  const std::string svg = dir_.File("diff.svg");
  RunResult r = RunArcprof({"diff", capture_, other, "-o", svg, "--format", "json", "--top", "3"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto json = nlohmann::json::parse(r.out);
  EXPECT_EQ(json["before_samples"], 1995);
  EXPECT_EQ(json["rows"].size(), 3u);
  EXPECT_EQ(json["after_samples"], 3990);
  EXPECT_EQ(json["rows"][0]["name"], "f_light");  // 250/1995 = 12.53% -> 2245/3990 = 56.27%
  EXPECT_NEAR(json["rows"][0]["self_delta"].get<double>(), 43.73, 0.01);
  struct stat st {};
  ASSERT_EQ(stat(svg.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_NE(ReadFile(svg).find("Differential Flame Graph"), std::string::npos);

  r = RunArcprof({"diff", capture_, dir_.File("missing.db"), "-o", dir_.File("x.svg")});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("missing.db: no such capture file"), std::string::npos);
}

}  // namespace
}  // namespace arcprof
