// What the JVMTI agent writes, read back with the recorder's own parsers:
// frame sizes for every compiled Java method (native wrappers included).
#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "symbolize/jitdump.h"
#include "tests/loader/runtime_util.h"
#include "tests/layer_names.h"

namespace arcprof::testing {
namespace {

const std::string kAgentLib = ARCPROF_AGENT;
const std::string kJavaClasses = JAVA_CLASSES;

std::string Slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The agent's two files in `dir` for `pid`, parsed.
struct AgentFiles {
  jitdump::Records dump;
  jitdump::SideRecords side;
};

AgentFiles ReadAgentFiles(const std::string& dir, pid_t pid) {
  AgentFiles out;
  const std::string base = dir + "/jit-" + std::to_string(pid);
  const std::string dump = Slurp(base + ".dump");
  auto header = jitdump::ParseFileHeader(dump);
  EXPECT_TRUE(header.ok()) << base << ".dump";
  if (header.ok()) {
    jitdump::ParseProgress p =
        jitdump::ParseRecords(std::string_view(dump).substr(header.value().header_size), header.value().swapped, &out.dump);
    EXPECT_FALSE(p.corrupt) << p.error;
  }
  const std::string side = Slurp(base + ".arcprof");
  auto side_header = jitdump::ParseSideHeader(side);
  EXPECT_TRUE(side_header.ok()) << base << ".arcprof";
  if (side_header.ok()) {
    jitdump::ParseProgress p = jitdump::ParseSideRecords(std::string_view(side).substr(side_header.value()), &out.side);
    EXPECT_FALSE(p.corrupt) << p.error;
  }
  return out;
}

// Java methods are named Class.method; stubs have spaces or no dot.
bool IsJavaMethod(const std::string& name) {
  return name.find('.') != std::string::npos && name.find(' ') == std::string::npos;
}

struct Jdk {
  std::string name, home;
};
const std::vector<Jdk> kJdks = {{"openjdk17", JDK17_HOME}, {"temurin25", TEMURIN_HOME}};

// Burn at start with the agent: every compiled Java method gets a frame
// size. Native wrappers (Unsafe.getReferenceVolatile, System.nanoTime) are
// often the first blob of a code heap segment, with unmapped memory right
// before them; the agent once found no CodeBlob header for them.
TEST(JavaAgent, EveryCompiledMethodHasAFrameSize) {
  for (const Jdk& jdk : kJdks) {
    const std::string java = jdk.home + "/bin/java";
    if (access(java.c_str(), X_OK) != 0) {
      if (InCi()) ADD_FAILURE() << java << " is missing (CI=true: must not skip)";
      continue;
    }
    TempDir dir;
    Subprocess jvm({java, "-agentpath:" + kAgentLib + "=quiet,dir=" + dir.dir(), "-cp", kJavaClasses, "Burn", "2"});
    ASSERT_EQ(jvm.Wait(), 0) << jvm.stderr_text();
    const AgentFiles files = ReadAgentFiles(dir.dir(), jvm.pid());
    std::set<uint64_t> with_frame;
    for (const jitdump::FrameInfo& f : files.side.frames) with_frame.insert(f.index);
    int java_methods = 0, wrappers = 0;
    for (const jitdump::CodeLoad& load : files.dump.loads) {
      if (!IsJavaMethod(load.name)) continue;
      ++java_methods;
      EXPECT_TRUE(with_frame.count(load.index)) << jdk.name << ": no FRAME record for " << load.name;
      if (load.name == "jdk.internal.misc.Unsafe.getReferenceVolatile" || load.name == "java.lang.System.nanoTime") {
        ++wrappers;
      }
    }
    EXPECT_GE(java_methods, 5) << jdk.name;
    EXPECT_GE(wrappers, 1) << jdk.name << ": no native wrapper compiled in this run";
    RecordProperty(jdk.name + "_java_methods", java_methods);
  }
}

}  // namespace
}  // namespace arcprof::testing
