// --units ms with per-thread time in the capture: each thread's samples share
// out the CPU time PTT measured for it.
#include <gtest/gtest.h>

#include <sstream>

#include "cli/report_cli.h"
#include "tests/layer_names.h"

namespace arcprof {
namespace {

Profile TwoThreads() {
  Profile p;
  p.meta.frequency_hz = 1000;  // 1 ms per sample by the interval
  FrameRecord f;
  f.module = p.frames.InternModule("/bin/prog");
  f.kind = FrameKind::kNative;
  f.symbol = "busy";
  const uint32_t busy = p.frames.Intern(f);
  f.symbol = "light";
  const uint32_t light = p.frames.Intern(f);
  const uint32_t a = p.ThreadIndex(10, 10);
  p.threads[a].comm = "a";
  p.threads[a].tree.AddStack(std::vector<uint32_t>{busy}, 100);
  const uint32_t b = p.ThreadIndex(10, 11);
  p.threads[b].comm = "b";
  p.threads[b].tree.AddStack(std::vector<uint32_t>{light}, 100);
  p.ptt.recorded = true;
  PttThread ta;
  ta.pid = 10;
  ta.tid = 10;
  ta.cpu_ns = 400'000'000;  // thread a: 400 ms of CPU for its 100 samples
  p.ptt.threads.push_back(ta);
  // thread b has no PTT row: it keeps 1 ms per sample.
  return p;
}

TEST(UnitsFromPtt, MillisecondsAreMeasuredCpuTime) {
  const Profile p = TwoThreads();
  ReportRequest request;
  request.units = "ms";
  std::ostringstream out, err;
  ASSERT_EQ(RunArcflowView("xprof", p, request, out, err), 0) << err.str();
  const std::string text = out.str();
  EXPECT_NE(text.find("400.000"), std::string::npos) << text;  // busy: PTT time
  EXPECT_NE(text.find("100.000"), std::string::npos) << text;  // light: 100 samples x 1 ms
  EXPECT_NE(text.find("ptt-cpu-us"), std::string::npos) << "the header names the unit: " << text;
}

TEST(UnitsFromPtt, WithoutPttMillisecondsComeFromTheInterval) {
  Profile p = TwoThreads();
  p.ptt = PttData{};
  ReportRequest request;
  request.units = "ms";
  std::ostringstream out, err;
  ASSERT_EQ(RunArcflowView("xprof", p, request, out, err), 0) << err.str();
  EXPECT_EQ(out.str().find("400.000"), std::string::npos) << out.str();
  EXPECT_NE(out.str().find("100.000"), std::string::npos) << out.str();
}

}  // namespace
}  // namespace arcprof
