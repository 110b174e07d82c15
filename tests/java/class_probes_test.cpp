// The class-file rewriter of `arcprof trace` (runtimes/java/agent/
// class_probes.h): class files javac wrote (JDK 17: version 61, JDK 25:
// version 69) get probes in every method, and the real JVM of that JDK loads
// them through its verifier, runs them (interpreted and compiled) with the
// same output, and a Java probe class counts exactly the calls made.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "runtimes/java/agent/class_probes.h"
#include "tests/loader/subprocess.h"

namespace arcprof::testing {
namespace {

namespace fs = std::filesystem;
using classfile::AddProbes;
using classfile::CalledMethod;
using classfile::DeclaredMethod;
using classfile::MethodProbe;

bool InCi() {
  const char* ci = getenv("CI");
  return ci && std::string(ci) == "true";
}

std::vector<uint8_t> ReadBytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

void WriteBytes(const fs::path& path, const std::vector<uint8_t>& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

struct Jdk {
  std::string name, home, classes;
};
void PrintTo(const Jdk& jdk, std::ostream* os) { *os << jdk.name; }

class ClassProbes : public ::testing::TestWithParam<Jdk> {
 protected:
  void SetUp() override {
    const Jdk& jdk = GetParam();
    if (access((jdk.home + "/bin/java").c_str(), X_OK) != 0 || !fs::exists(jdk.classes + "/ProbeShapes.class")) {
      if (InCi()) FAIL() << jdk.home << " is missing (CI=true: must not skip)";
      GTEST_SKIP() << jdk.home << "/bin/java is not installed";
    }
    char tmpl[] = "/tmp/arcprof-probes-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override {
    if (!dir_.empty()) fs::remove_all(dir_);
  }

  // Every method of `name`.class with probes (ids from next_id_), written to dir_.
  void Probe(const std::string& name) {
    const std::vector<uint8_t> bytes = ReadBytes(GetParam().classes + "/" + name + ".class");
    std::vector<DeclaredMethod> methods;
    ASSERT_TRUE(classfile::ListMethods(bytes, &methods)) << name;
    std::vector<MethodProbe> probes;
    for (const DeclaredMethod& m : methods) {
      probes.push_back({m.name, m.descriptor, next_id_});
      names_[next_id_++] = name + "." + m.name + m.descriptor;
    }
    const classfile::ProbeResult r = AddProbes(bytes, probes);
    ASSERT_FALSE(r.bytes.empty()) << name << ": " << r.error;
    for (int32_t id : r.skipped) {
      // Only constructors and class initializers are left alone.
      EXPECT_NE(names_[id].find(".<"), std::string::npos) << names_[id] << " was not probed: " << r.error;
    }
    for (const auto& p : r.probed) probed_.insert(p.id);
    WriteBytes(fs::path(dir_) / (name + ".class"), r.bytes);
  }

  // Runs ProbeCheck with the probed classes; returns {program lines, counts by name}.
  std::pair<std::string, std::map<std::string, std::array<long, 3>>> Run(const std::vector<std::string>& flags) {
    std::vector<std::string> argv{GetParam().home + "/bin/java", "-Xshare:auto"};
    argv.insert(argv.end(), flags.begin(), flags.end());
    argv.insert(argv.end(), {"-cp", dir_ + ":" + GetParam().classes + "/probe", "ProbeCheck"});
    auto [code, out] = RunCapture(argv);
    EXPECT_EQ(code, 0) << out;
    std::istringstream lines(out);
    std::string line, program;
    std::map<std::string, std::array<long, 3>> counts;
    while (std::getline(lines, line)) {
      std::istringstream in(line);
      std::string word;
      int id = 0;
      std::array<long, 3> c{};
      if (line.rfind("probe ", 0) == 0 && (in >> word >> id >> c[0] >> c[1] >> c[2])) {
        counts[names_[id]] = c;
      } else {
        program += line + "\n";
      }
    }
    return {program, counts};
  }

  std::string dir_;
  int32_t next_id_ = 1;
  std::map<int32_t, std::string> names_;
  std::set<int32_t> probed_;
};

TEST_P(ClassProbes, RewrittenClassesVerifyRunAndCountEveryCall) {
  Probe("ProbeShapes");
  Probe("BigMethod");
  fs::copy_file(GetParam().classes + "/ProbeCheck.class", dir_ + "/ProbeCheck.class");
  auto [plain_code, plain] = RunCapture({GetParam().home + "/bin/java", "-cp", GetParam().classes, "ProbeCheck"});
  ASSERT_EQ(plain_code, 0);
  ASSERT_NE(plain.find("no probes"), std::string::npos);
  const std::string expected = plain.substr(0, plain.find("no probes"));
  // Interpreted first, then with every ProbeShapes method compiled (C2) before it runs.
  for (const std::vector<std::string>& flags :
       {std::vector<std::string>{"-Xint"},
        std::vector<std::string>{"-Xcomp", "-XX:-TieredCompilation", "-XX:CompileCommand=quiet",
                                 "-XX:CompileCommand=compileonly,ProbeShapes::*"}}) {
    SCOPED_TRACE(flags[0]);
    auto run = Run(flags);
    const std::string& program = run.first;
    auto& counts = run.second;
    EXPECT_EQ(program, expected);
    auto expect = [&](const std::string& method, long enters, long exits, long thrown) {
      const std::array<long, 3> want{enters, exits, thrown};
      EXPECT_EQ(counts[method], want) << method;
    };
    expect("ProbeShapes.leaf(I)I", 11, 11, 0);
    expect("ProbeShapes.loopAtStart(I)I", 1, 1, 0);
    expect("ProbeShapes.thrower(I)V", 5, 0, 5);
    expect("ProbeShapes.middle(I)V", 5, 0, 5);
    expect("ProbeShapes.catcher(I)I", 5, 5, 0);
    expect("ProbeShapes.fib(I)I", 177, 177, 0);
    expect("ProbeShapes.bare()V", 1, 0, 1);
    expect("ProbeShapes.callsBare()I", 1, 1, 0);
    expect("ProbeShapes.uninit(Z)Ljava/lang/String;", 2, 2, 0);
    expect("ProbeShapes.wide(J)J", 1, 1, 0);
    expect("ProbeShapes.wider(D)D", 1, 1, 0);
    expect("ProbeShapes.locked(I)I", 1, 1, 0);
    expect("ProbeShapes.block(Ljava/lang/Object;I)I", 2, 2, 0);
    expect("ProbeShapes.instance(I)I", 1, 1, 0);
    expect("ProbeShapes.table(I)I", 7, 7, 0);
    expect("ProbeShapes.lookup(I)I", 16, 16, 0);
    expect("ProbeShapes.run()V", 1, 1, 0);
    expect("BigMethod.find([I)I", 2, 2, 0);
    // Every method: each call ended once, by a return or an exception.
    for (const auto& [method, c] : counts) EXPECT_EQ(c[0], c[1] + c[2]) << method;
    bool lambda = false;
    for (const auto& [method, c] : counts) lambda |= method.rfind("ProbeShapes.lambda$", 0) == 0 && c[0] == 1;
    EXPECT_TRUE(lambda) << "the lambda's body was not counted";
  }
}

TEST_P(ClassProbes, CallsNameTheInvokedMethodsAndLambdaBodies) {
  const std::vector<uint8_t> bytes = ReadBytes(GetParam().classes + "/ProbeShapes.class");
  std::vector<CalledMethod> calls;
  ASSERT_TRUE(classfile::CalledBy(bytes, "catcher", "(I)I", &calls));
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(calls[0].owner, "ProbeShapes");
  EXPECT_EQ(calls[0].name, "middle");
  EXPECT_EQ(calls[0].descriptor, "(I)V");
  calls.clear();
  ASSERT_TRUE(classfile::CalledBy(bytes, "lambda", "(I)I", &calls));
  bool body = false, interface_call = false;
  for (const CalledMethod& c : calls) {
    body |= c.owner == "ProbeShapes" && c.name.rfind("lambda$", 0) == 0;
    interface_call |= c.owner == "java/util/function/IntUnaryOperator" && c.name == "applyAsInt" && c.opcode == 0xb9;
  }
  EXPECT_TRUE(body);
  EXPECT_TRUE(interface_call);
  // What AddProbes reports for a probed method is the same list.
  const MethodProbe probe{"catcher", "(I)I", 7};
  const auto r = AddProbes(bytes, std::span<const MethodProbe>(&probe, 1));
  ASSERT_EQ(r.probed.size(), 1u);
  EXPECT_EQ(r.probed[0].id, 7);
  ASSERT_EQ(r.probed[0].calls.size(), 1u);
  EXPECT_EQ(r.probed[0].calls[0].name, "middle");
  EXPECT_FALSE(classfile::CalledBy(bytes, "nosuch", "()V", &calls));
}

TEST_P(ClassProbes, ConstructorsAbstractAndMissingMethodsAreLeftAlone) {
  const std::vector<uint8_t> bytes = ReadBytes(GetParam().classes + "/ProbeShapes.class");
  const std::vector<MethodProbe> probes{{"<init>", "()V", 1}, {"<clinit>", "()V", 2}, {"nosuch", "()V", 3}};
  const auto r = AddProbes(bytes, probes);
  EXPECT_TRUE(r.bytes.empty());
  EXPECT_TRUE(r.probed.empty());
  EXPECT_EQ(r.skipped.size(), 3u);
  EXPECT_FALSE(r.error.empty());
}

TEST_P(ClassProbes, DamagedClassFilesComeBackUnchanged) {
  const std::vector<uint8_t> bytes = ReadBytes(GetParam().classes + "/ProbeShapes.class");
  const MethodProbe probe{"fib", "(I)I", 1};
  // Every truncation, and single bytes flipped across the file: never a
  // crash; a class that no longer parses is not rewritten.
  for (size_t n = 0; n < bytes.size(); n += 7) {
    std::vector<uint8_t> cut(bytes.begin(), bytes.begin() + static_cast<long>(n));
    const auto r = AddProbes(cut, std::span<const MethodProbe>(&probe, 1));
    EXPECT_TRUE(r.bytes.empty()) << n;
  }
  for (size_t i = 0; i < bytes.size(); i += 3) {
    std::vector<uint8_t> flipped = bytes;
    flipped[i] ^= 0xff;
    const auto r = AddProbes(flipped, std::span<const MethodProbe>(&probe, 1));
    if (!r.bytes.empty()) {
      std::vector<DeclaredMethod> methods;
      EXPECT_TRUE(classfile::ListMethods(r.bytes, &methods)) << i;
    }
  }
  std::vector<uint8_t> newer = bytes;
  newer[6] = 0;
  newer[7] = classfile::kMaxMajorVersion + 1;
  EXPECT_TRUE(AddProbes(newer, std::span<const MethodProbe>(&probe, 1)).bytes.empty());
}

INSTANTIATE_TEST_SUITE_P(Jdks, ClassProbes,
                         ::testing::Values(Jdk{"openjdk17", JDK17_HOME, PROBES_CLASSES "17"},
                                           Jdk{"temurin25", TEMURIN_HOME, PROBES_CLASSES "25"}),
                         [](const auto& info) { return info.param.name; });

}  // namespace
}  // namespace arcprof::testing
