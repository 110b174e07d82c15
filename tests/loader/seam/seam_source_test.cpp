// The seam holds: a value source that lives only here (its BPF program, its
// user half, its value type) registers with one line, records through the
// shared ring and folding, and every report reads its values by name. It
// touches no file outside this folder (docs/design.md "Value sources").
#include <gtest/gtest.h>
#include <bpf/libbpf.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <sstream>
#include <string>

#include "events.h"
#include "loader/record.h"
#include "loader/record_extension.h"
#include "loader/sampler.h"
#include "loader/stack_sample.h"
#include "loader/value_source.h"
#include "model/profile.h"
#include "model/value_types.h"
#include "seam_source.h"
#include "seam_source.skel.h"
#include "store/capture_store.h"

namespace arcprof {
namespace {

// Its value type: name and unit spelled once.
constexpr model::ValueTypeName kSeamCalls{"seam_calls", "count"};

class SeamSource final : public ValueSource {
 public:
  std::string_view name() const override { return "seam"; }

  Result<void> Start(RecordContext& context) override {
    skel_.reset(seam_source__open());
    if (!skel_) return MakeError("cannot open the seam BPF object");
    if (auto ok = context.sampler->ShareRecordMaps(skel_->obj, /*own_scratch=*/true); !ok) return ok.error();
    if (seam_source__load(skel_.get()) != 0) return MakeError("cannot load the seam BPF program");
    LIBBPF_OPTS(bpf_uprobe_opts, opts, .func_name = "seam_event");
    link_ = bpf_program__attach_uprobe_opts(skel_->progs.on_seam_event, -1, SEAM_CHILD, 0, &opts);
    if (link_ == nullptr) return MakeError(std::string("cannot attach the seam uprobe: ") + strerror(errno));
    sink_ = context.sink;
    sink_->Route(SEAM_SOURCE_ID, this);
    return {};
  }

  // Each record is one call: its stack, kept only to add the call.
  void OnRecord(const StackSample& record, StackSink& sink) override {
    const uint64_t key = ++records_;
    sink.Keep(SEAM_SOURCE_ID, key, sink.Stack(record), {});
    const SourceValue calls{kSeamCalls, record.source_values[0]};
    sink.Add(SEAM_SOURCE_ID, key, {&calls, 1});
    sink.Forget(SEAM_SOURCE_ID, key);
  }

  void Detach() override {
    bpf_link__destroy(link_);
    link_ = nullptr;
  }

  Result<void> CloseWindow(RecordContext&, model::Profile& window, bool last) override {
    window.counters["seam_records"] += static_cast<int64_t>(records_);
    window.counters["seam_lost"] += static_cast<int64_t>(skel_->bss->seam_lost);
    records_ = 0;
    if (last) {
      Detach();
      sink_->Route(SEAM_SOURCE_ID, nullptr);
      skel_.reset();
    }
    return {};
  }

 private:
  struct SkelDeleter {
    void operator()(seam_source* s) const { seam_source__destroy(s); }
  };
  std::unique_ptr<seam_source, SkelDeleter> skel_;
  bpf_link* link_ = nullptr;
  StackSink* sink_ = nullptr;
  uint64_t records_ = 0;
};

std::string RunCommand(const std::string& command) {
  std::string out;
  FILE* p = popen(command.c_str(), "r");
  if (p == nullptr) return out;
  char buf[4096];
  while (size_t n = fread(buf, 1, sizeof(buf), p)) out.append(buf, n);
  pclose(p);
  return out;
}

TEST(ValueSourceSeam, ATestSourceRegistersRecordsAndReports) {
  if (geteuid() != 0) {
    if (getenv("CI") != nullptr && std::string(getenv("CI")) == "true") FAIL() << "needs root";
    GTEST_SKIP() << "needs root (BPF)";
  }
  // The registry line.
  AddRecordExtension([](const RecordOptions&) { return std::make_unique<SeamSource>(); });

  constexpr int kCalls = 1000;
  const std::string db = std::filesystem::temp_directory_path() / ("arcprof-seam-" + std::to_string(getpid()) + ".db");
  RecordOptions options;
  options.command = {SEAM_CHILD, std::to_string(kCalls)};
  options.output = db;
  options.quiet = true;
  options.call_graph = "fp";
  options.off_cpu = false;
  options.ptt = false;
  options.java = false;
  auto code = RunRecord(options);
  ASSERT_TRUE(code.ok()) << code.error().message;

  auto profile = store::ReadCapture(db);
  ASSERT_TRUE(profile.ok()) << profile.error().message;
  const auto type = profile->ValueIndex(kSeamCalls.name);
  ASSERT_TRUE(type.has_value()) << "the capture declares seam_calls";
  EXPECT_EQ(profile->value_types[*type], kSeamCalls.type());
  // A record whose buffer a preempted run held is counted, not folded
  // (0 of 1000 in 10 runs).
  const int64_t lost = profile->counters["seam_lost"];
  EXPECT_LE(lost, 5);
  uint64_t total = 0, under_caller = 0;
  for (const auto& t : profile->threads) {
    const auto& nodes = t.tree.nodes();
    for (uint32_t i = 1; i < nodes.size(); ++i) {
      const uint64_t v = t.tree.value(i, *type);
      if (v == 0) continue;
      total += v;
      for (uint32_t n = i; n != 0; n = nodes[n].parent) {
        if (profile->frames.at(nodes[n].frame).symbol == "seam_caller") {
          under_caller += v;
          break;
        }
      }
    }
  }
  // Every call is one record, folded once, or counted lost.
  EXPECT_EQ(total + static_cast<uint64_t>(lost), static_cast<uint64_t>(kCalls));
  EXPECT_EQ(profile->counters["seam_records"], static_cast<int64_t>(total));
  // Named as samples are (1000 of 1000 in 10 runs, loaded machine).
  EXPECT_GE(under_caller + 5, total);
  fprintf(stderr, "seam: %llu of %d calls under seam_caller\n", static_cast<unsigned long long>(under_caller), kCalls);

  // Every report reads it by name, with no code of its own: the folded export.
  const std::string folded =
      RunCommand(std::string(ARCPROF_BIN) + " export --format folded --metric seam_calls -i " + db + " 2>&1");
  std::filesystem::remove(db);
  uint64_t folded_total = 0;
  std::istringstream lines(folded);
  for (std::string line; std::getline(lines, line);) {
    const size_t space = line.rfind(' ');
    ASSERT_NE(space, std::string::npos) << folded;
    if (line.find("seam_caller") != std::string::npos) folded_total += std::stoull(line.substr(space + 1));
  }
  EXPECT_EQ(folded_total, under_caller) << folded;
}

}  // namespace
}  // namespace arcprof
