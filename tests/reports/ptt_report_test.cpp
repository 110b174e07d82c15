// The ptt_* capture tables and the ptt and irq views, on a synthetic PTT
// recording with known numbers (tests/model/ptt_test_data.h).
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <sqlite3.h>

#include <map>
#include <sstream>

#include "store/capture_store.h"
#include "reports/irq_report.h"
#include "reports/ptt_report.h"
#include "store/ptt_store.h"
#include "cli/report_cli.h"
#include "tests/store/capture_sql.h"
#include "tests/reports/golden.h"
#include "tests/model/ptt_test_data.h"
#include "tests/model/test_profiles.h"
#include "tests/layer_names.h"

namespace arcprof::testing {
namespace {

void Sql(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  char* message = nullptr;
  const int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &message);
  EXPECT_EQ(rc, SQLITE_OK) << (message ? message : "");
  sqlite3_free(message);
  sqlite3_close(db);
}

class PttStore : public ::testing::Test {
 protected:
  std::string Write(const Profile& p) {
    const std::string path = dir_.File("ptt.db");
    auto r = WriteCapture(path, p);
    EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().message);
    return path;
  }
  // PttSampleProfile() as a capture of `schema_version`: written now when it
  // is the current one, else the committed fixture written by the writer of
  // its time (tests/store/fixtures/ptt-schema1.db).
  std::string WriteSample(int schema_version) {
    if (schema_version == store::kCaptureSchemaVersion) return Write(PttSampleProfile());
    const std::string path = dir_.File("ptt.db");
    CopyFixture("ptt-schema" + std::to_string(schema_version) + ".db", path);
    return path;
  }
  TempDir dir_;
};

TEST_F(PttStore, RoundTripKeepsEveryValue) {
  const Profile p = PttSampleProfile();
  auto read = ReadCapture(Write(p));
  ASSERT_TRUE(read.ok()) << read.error().message;
  EXPECT_EQ(read->ptt, p.ptt);
}

TEST_F(PttStore, CaptureWithoutPttReadsAsNotRecorded) {
  auto read = ReadCapture(Write(SampleProfile()));
  ASSERT_TRUE(read.ok()) << read.error().message;
  EXPECT_FALSE(read->ptt.recorded);
  EXPECT_TRUE(read->ptt.threads.empty());
}

TEST_F(PttStore, RoundTripKeepsEveryValueInSchema1) {
  const Profile p = PttSampleProfile();
  auto read = ReadCapture(WriteSample(1));
  ASSERT_TRUE(read.ok()) << read.error().message;
  EXPECT_EQ(read->ptt, p.ptt);
}

// Schema 9: each row keeps its process's start. Two processes that held pid
// 100 are two rows after a write and a read, each named by its own leader in
// the ptt view, and a worker thread keeps its own process's name. The schema 8
// fixture (its writer's) reads with start 0.
TEST_F(PttStore, ProcessStartKeepsAReusedPidsRowsApart) {
  Profile p = PttSampleProfile();
  p.ptt.threads[0].process_start_ns = 5'000'000'000;
  p.ptt.threads[1].process_start_ns = 5'000'000'000;
  p.ptt.threads[2].process_start_ns = 7'000'000'000;
  PttThread reused = p.ptt.threads[0];
  reused.comm = "reused";
  reused.cpu_ns = 50'000'000;
  reused.process_start_ns = 6'000'000'000;
  p.ptt.threads.push_back(reused);
  auto read = ReadCapture(Write(p));
  ASSERT_TRUE(read.ok()) << read.error().message;
  EXPECT_EQ(read->ptt, p.ptt);
  auto report = BuildPttReport(*read, PttReportOptions{});
  ASSERT_TRUE(report.ok()) << report.error().message;
  std::map<std::string, std::pair<std::string, double>> rows;  // comm -> process, cpu ms
  for (const PttReportRow& row : report->rows) rows[row.comm] = {row.process_comm, row.cpu_ms};
  ASSERT_EQ(rows.size(), 4u);
  EXPECT_EQ(rows["server"].first, "server");
  EXPECT_EQ(rows["worker"].first, "server");
  EXPECT_EQ(rows["reused"].first, "reused");
  EXPECT_DOUBLE_EQ(rows["server"].second, 600.0);
  EXPECT_DOUBLE_EQ(rows["reused"].second, 50.0);
  auto eight = ReadCapture(WriteSample(8));
  ASSERT_TRUE(eight.ok()) << eight.error().message;
  EXPECT_EQ(eight->meta.schema_version, 8);
  EXPECT_EQ(eight->ptt, PttSampleProfile().ptt);
}

// Schema 3 keeps the per-thread rows in compressed row blocks.
TEST_F(PttStore, ThreadsAreOneCompressedBlock) {
  const std::string path = Write(PttSampleProfile());
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  sqlite3_stmt* stmt = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(db, "SELECT count(*), min(raw_bytes) FROM ptt_thread_blocks", -1, &stmt, nullptr),
            SQLITE_OK);
  ASSERT_EQ(sqlite3_step(stmt), SQLITE_ROW);
  EXPECT_EQ(sqlite3_column_int(stmt, 0), 1);
  EXPECT_GT(sqlite3_column_int(stmt, 1), 12);
  sqlite3_finalize(stmt);
  EXPECT_NE(sqlite3_prepare_v2(db, "SELECT 1 FROM ptt_threads", -1, &stmt, nullptr), SQLITE_OK);
  sqlite3_close(db);
}

TEST_F(PttStore, UnavailableEventsStoreNullCounts) {
  const std::string path = WriteSample(1);
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  sqlite3_stmt* stmt = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(db,
                               "SELECT COUNT(*) FROM ptt_threads WHERE event0 IS NULL AND "
                               "event1 IS NULL AND event2 IS NOT NULL AND event3 IS NULL",
                               -1, &stmt, nullptr),
            SQLITE_OK);
  ASSERT_EQ(sqlite3_step(stmt), SQLITE_ROW);
  EXPECT_EQ(sqlite3_column_int(stmt, 0), 3);
  sqlite3_finalize(stmt);
  sqlite3_close(db);
}

struct CorruptCase {
  const char* name;
  const char* sql;
  const char* message;
  int schema_version = store::kCaptureSchemaVersion;
};

class PttCorrupt : public PttStore, public ::testing::WithParamInterface<CorruptCase> {};

TEST_P(PttCorrupt, IsAOneLineErrorWithExitCode2) {
  const std::string path = WriteSample(GetParam().schema_version);
  Sql(path, GetParam().sql);
  auto read = ReadCapture(path);
  ASSERT_FALSE(read.ok());
  EXPECT_EQ(read.error().kind, ErrorKind::kCapture);
  EXPECT_NE(read.error().message.find(GetParam().message), std::string::npos)
      << read.error().message;
  EXPECT_EQ(read.error().message.find('\n'), std::string::npos);
  EXPECT_EQ(read.error().message.rfind(path, 0), 0u);
}

INSTANTIATE_TEST_SUITE_P(
    Cases, PttCorrupt,
    ::testing::Values(
        CorruptCase{"TableMissing", "DROP TABLE ptt_irq_vectors",
                    "corrupt capture: some ptt_* tables are missing"},
        CorruptCase{"ViewInsteadOfTable",
                    "DROP TABLE ptt_threads; CREATE VIEW ptt_threads AS SELECT 1",
                    "unexpected view 'ptt_threads'", 1},
        CorruptCase{"NegativeTime", "UPDATE ptt_threads SET cpu_ns = -5 WHERE tid = 101",
                    "ptt_threads row has a negative or non-numeric value", 1},
        CorruptCase{"TextCount", "UPDATE ptt_threads SET event2 = 'many' WHERE tid = 101",
                    "ptt_threads row has a negative or non-numeric value", 1},
        CorruptCase{"HugeTid", "UPDATE ptt_threads SET tid = 5000000000 WHERE tid = 101",
                    "ptt_threads row has a negative or non-numeric value", 1},
        CorruptCase{"RowTableInSchema3",
                    "CREATE TABLE ptt_threads (window_id INTEGER NOT NULL REFERENCES windows(id), pid INTEGER "
                    "NOT NULL, tid INTEGER NOT NULL, comm TEXT NOT NULL, cpu_ns INTEGER NOT NULL, hardirq_ns "
                    "INTEGER NOT NULL, softirq_ns INTEGER NOT NULL, dispatches INTEGER NOT NULL, interrupts "
                    "INTEGER NOT NULL, event0 INTEGER, event1 INTEGER, event2 INTEGER, event3 INTEGER)",
                    "table 'ptt_threads' does not belong in a schema"},
        CorruptCase{"BlockTableInSchema1",
                    "CREATE TABLE ptt_thread_blocks (id INTEGER PRIMARY KEY, window_id INTEGER NOT NULL "
                    "REFERENCES windows(id), raw_bytes INTEGER NOT NULL, data BLOB NOT NULL)",
                    "table 'ptt_thread_blocks' does not belong in a schema 1 capture", 1},
        CorruptCase{"BlockNotDeflate", "UPDATE ptt_thread_blocks SET data = x'78da0102'",
                    "ptt_thread_blocks block 0: a block that does not inflate to its stated size"},
        CorruptCase{"BlockHuge", "UPDATE ptt_thread_blocks SET raw_bytes = 99999999",
                    "ptt_thread_blocks block 0 of 99999999 bytes"},
        CorruptCase{"BlockText", "UPDATE ptt_thread_blocks SET data = 'text'",
                    "column holds the wrong type"},
        CorruptCase{"BlockGap", "UPDATE ptt_thread_blocks SET id = 3",
                    "ptt_thread_blocks block ids are not dense from 0"},
        CorruptCase{"IntervalBlockSize", "UPDATE ptt_interval_blocks SET raw_bytes = raw_bytes + 1",
                    "ptt_interval_blocks block 0: a block that does not inflate to its stated size"},
        CorruptCase{"IntervalBlockMissing", "DROP TABLE ptt_interval_blocks",
                    "corrupt capture: some ptt_* tables are missing"},
        CorruptCase{"BlockOrphanWindow", "UPDATE ptt_thread_blocks SET window_id = 9",
                    "ptt_thread_blocks rows of a window that does not exist"},
        CorruptCase{"BackwardsInterval",
                    "UPDATE ptt_cpu_intervals SET end_ns = start_ns - 1 WHERE cpu = 1",
                    "ptt_cpu_intervals row has an invalid cpu, time span or value", 1},
        CorruptCase{"HugeCpu", "UPDATE ptt_cpu_intervals SET cpu = 100000 WHERE cpu = 1",
                    "ptt_cpu_intervals row has an invalid cpu", 1},
        CorruptCase{"UnknownKind", "UPDATE ptt_irq_vectors SET kind = 7 WHERE name = 'RCU'",
                    "ptt_irq_vectors row has an invalid cpu, kind or value"},
        CorruptCase{"EventSlotGap", "UPDATE ptt_events SET slot = 5 WHERE slot = 1",
                    "PTT event slots are not dense from 0"},
        CorruptCase{"OrphanWindow", "UPDATE ptt_threads SET window_id = 9 WHERE tid = 100",
                    "ptt_threads rows of a window that does not exist", 1}),
    [](const auto& info) { return std::string(info.param.name); });

// ------------------------------------------------------------------ ptt view

TEST(PttReport, RowsTotalsAndUnavailableCounters) {
  auto report = BuildPttReport(PttSampleProfile(), PttReportOptions{});
  ASSERT_TRUE(report.ok()) << report.error().message;
  ASSERT_EQ(report->rows.size(), 3u);
  EXPECT_EQ(report->rows[0].tid, 100u);  // 600 ms, most CPU first
  EXPECT_EQ(report->rows[1].tid, 101u);
  EXPECT_EQ(report->rows[2].tid, 200u);
  EXPECT_DOUBLE_EQ(report->rows[1].cpu_ms, 300.0);
  EXPECT_DOUBLE_EQ(report->rows[1].interrupt_ms, 25.0);
  EXPECT_EQ(report->rows[1].process_comm, "server");
  EXPECT_FALSE(report->rows[0].events[0].has_value());
  EXPECT_EQ(report->rows[0].events[2], 1200u);
  EXPECT_FALSE(report->rows[0].cpi.has_value());
  EXPECT_DOUBLE_EQ(report->total.cpu_ms, 1000.0);
  EXPECT_DOUBLE_EQ(report->total.interrupt_ms, 65.0);
  EXPECT_EQ(report->total.dispatches, 953u);
  EXPECT_EQ(report->total.events[2], 1247u);
  EXPECT_EQ(report->cpus, 2u);
  EXPECT_DOUBLE_EQ(report->duration_s, 2.0);
}

// A continuous window past its PTT row limit carries one "[other threads]"
// row (pid and tid 0xffffffff, loader FoldSmallestThreads): it survives the
// capture and the report shows it as a row of its own, inside the total.
TEST(PttReport, TheOtherThreadsRowRoundTripsAndCountsInTheTotal) {
  Profile p = PttSampleProfile();
  model::PttThread other;
  other.pid = model::kPttOtherThreads;
  other.tid = model::kPttOtherThreads;
  other.comm = model::kPttOtherThreadsName;
  other.cpu_ns = 50'000'000;
  other.dispatches = 40;
  other.events.assign(p.ptt.events.size(), 0);
  p.ptt.threads.push_back(other);
  TempDir dir;
  const std::string path = dir.File("other.db");
  auto written = WriteCapture(path, p);
  ASSERT_TRUE(written.ok()) << written.error().message;
  auto read = ReadCapture(path);
  ASSERT_TRUE(read.ok()) << read.error().message;
  EXPECT_EQ(read->ptt, p.ptt);
  auto report = BuildPttReport(*read, PttReportOptions{});
  ASSERT_TRUE(report.ok()) << report.error().message;
  ASSERT_EQ(report->rows.size(), 4u);
  bool found = false;
  for (const PttReportRow& row : report->rows) {
    if (row.tid != model::kPttOtherThreads) continue;
    found = true;
    EXPECT_EQ(row.comm, "[other threads]");
    EXPECT_DOUBLE_EQ(row.cpu_ms, 50.0);
  }
  EXPECT_TRUE(found);
  EXPECT_DOUBLE_EQ(report->total.cpu_ms, 1050.0);
  EXPECT_EQ(report->total.dispatches, 993u);
}

TEST(PttReport, SortKeysAndFilter) {
  PttReportOptions options;
  options.sort = "dispatches";
  auto report = BuildPttReport(PttSampleProfile(), options);
  ASSERT_TRUE(report.ok());
  EXPECT_EQ(report->rows[0].tid, 101u);
  options.sort = "name";
  report = BuildPttReport(PttSampleProfile(), options);
  EXPECT_EQ(report->rows[0].comm, "batch");
  options.sort = "page-faults";
  report = BuildPttReport(PttSampleProfile(), options);
  EXPECT_EQ(report->rows[0].tid, 100u);
  EXPECT_EQ(report->rows[2].tid, 200u);
  options.sort = "cpu";
  options.filter.comms = {"server"};  // the process name selects both of its threads
  report = BuildPttReport(PttSampleProfile(), options);
  ASSERT_EQ(report->rows.size(), 2u);
  EXPECT_DOUBLE_EQ(report->total.cpu_ms, 900.0);

  options.sort = "bogus";
  report = BuildPttReport(PttSampleProfile(), options);
  ASSERT_FALSE(report.ok());
  EXPECT_EQ(report.error().kind, ErrorKind::kFailed);
  EXPECT_NE(report.error().message.find("unknown --sort key 'bogus'"), std::string::npos);
  EXPECT_NE(report.error().message.find("page-faults"), std::string::npos);
}

TEST(PttReport, CpiWhenBothCountersWereCounted) {
  Profile p = PttSampleProfile();
  p.ptt.events[0].available = true;
  p.ptt.events[1].available = true;
  p.ptt.threads[0].events = {1000, 2500, 0};
  auto report = BuildPttReport(p, PttReportOptions{});
  ASSERT_TRUE(report.ok());
  ASSERT_TRUE(report->rows[0].cpi.has_value());
  EXPECT_DOUBLE_EQ(*report->rows[0].cpi, 2.5);
  EXPECT_FALSE(report->rows[1].cpi.has_value());  // no instructions: no CPI, not infinity
  std::ostringstream text;
  WritePttText(*report, text);
  EXPECT_NE(text.str().find("CPI"), std::string::npos);
  EXPECT_EQ(text.str().find("not available"), std::string::npos);
}

TEST(PttReport, TextAndJsonGolden) {
  auto report = BuildPttReport(PttSampleProfile(), PttReportOptions{});
  ASSERT_TRUE(report.ok());
  std::ostringstream text, json;
  WritePttText(*report, text);
  WritePttJson(*report, json);
  ExpectGolden("ptt.txt", text.str());
  ExpectGolden("ptt.json", json.str());
  EXPECT_NE(text.str().find("instructions: not available on this machine"), std::string::npos);
  const auto doc = nlohmann::json::parse(json.str());
  EXPECT_TRUE(doc["threads"][0]["events"]["instructions"].is_null());
  EXPECT_EQ(doc["threads"][0]["events"]["page-faults"], 1200);
}

TEST(PttReport, CaptureWithoutPttIsAUsageError) {
  auto report = BuildPttReport(SampleProfile(), PttReportOptions{});
  ASSERT_FALSE(report.ok());
  EXPECT_EQ(report.error().kind, ErrorKind::kFailed);
  EXPECT_NE(report.error().message.find("arcprof record --ptt"), std::string::npos);
}

// ------------------------------------------------------------------ irq view

TEST(IrqReport, ParseInterval) {
  EXPECT_EQ(ParseInterval("1s").value(), 1'000'000'000u);
  EXPECT_EQ(ParseInterval("250ms").value(), 250'000'000u);
  EXPECT_EQ(ParseInterval("1.5s").value(), 1'500'000'000u);
  EXPECT_EQ(ParseInterval("2000us").value(), 2'000'000u);
  EXPECT_EQ(ParseInterval("2").value(), 2'000'000'000u);
  for (const char* bad : {"", "s", "1h", "-1s", "0.5ms", "1..2s", "abc", "1 s", "."}) {
    auto r = ParseInterval(bad);
    EXPECT_FALSE(r.ok()) << bad;
    if (!r.ok()) EXPECT_EQ(r.error().kind, ErrorKind::kFailed);
  }
}

TEST(IrqReport, IntervalsPerCpuAndSources) {
  auto report = BuildIrqReport(PttSampleProfile(), 1'000'000'000);
  ASSERT_TRUE(report.ok()) << report.error().message;
  ASSERT_EQ(report->intervals.size(), 6u);  // 2 intervals x (cpu 0, cpu 1, all)
  const IrqCpuRow& cpu0 = report->intervals[0];
  EXPECT_EQ(cpu0.cpu, 0);
  EXPECT_EQ(cpu0.wall_ns, 1'000'000'000u);
  EXPECT_DOUBLE_EQ(cpu0.Percent(cpu0.busy_ns), 40.0);
  EXPECT_DOUBLE_EQ(cpu0.Percent(cpu0.idle_ns), 55.0);
  EXPECT_DOUBLE_EQ(cpu0.Percent(cpu0.hardirq_ns), 3.0);
  EXPECT_DOUBLE_EQ(cpu0.Percent(cpu0.softirq_ns), 2.0);
  const IrqCpuRow& all = report->intervals[2];
  EXPECT_EQ(all.cpu, -1);
  EXPECT_DOUBLE_EQ(all.Percent(all.busy_ns), 25.0);
  EXPECT_EQ(report->intervals[3].interval_index, 1u);
  ASSERT_EQ(report->per_cpu.size(), 3u);
  EXPECT_EQ(report->per_cpu[1].hardirqs, 1600u);
  for (const IrqCpuRow& r : report->per_cpu) {
    EXPECT_EQ(r.busy_ns + r.idle_ns + r.hardirq_ns + r.softirq_ns, r.wall_ns);
  }
  ASSERT_EQ(report->sources.size(), 4u);
  EXPECT_EQ(report->sources[0].name, "LOC");
  EXPECT_EQ(report->sources[0].count, 4500u);
  EXPECT_EQ(report->sources[0].ns, 60'000'000u);
  EXPECT_EQ(report->sources[1].name, "NET_RX");
  EXPECT_EQ(report->sources[3].name, "irq 11 (virtio0)");

  auto halves = BuildIrqReport(PttSampleProfile(), 500'000'000);
  ASSERT_TRUE(halves.ok());
  EXPECT_EQ(halves->intervals.size(), 12u);
}

TEST(IrqReport, TextAndJsonGolden) {
  auto report = BuildIrqReport(PttSampleProfile(), 1'000'000'000);
  ASSERT_TRUE(report.ok());
  std::ostringstream text, json;
  WriteIrqText(*report, text);
  WriteIrqJson(*report, json);
  ExpectGolden("irq.txt", text.str());
  ExpectGolden("irq.json", json.str());
}

TEST(IrqReport, CliRunsTheViewsByName) {
  TempDir dir;
  const std::string path = dir.File("ptt.db");
  ASSERT_TRUE(WriteCapture(path, PttSampleProfile()).ok());
  auto run = [&](std::vector<std::string> args, std::string& out_text, std::string& err_text) {
    CLI::App app;
    ReportCommands commands(app);
    args.insert(args.begin(), "arcprof");
    std::vector<const char*> argv;
    for (const std::string& a : args) argv.push_back(a.c_str());
    app.parse(static_cast<int>(argv.size()), argv.data());
    std::ostringstream out, err;
    const int code = commands.RunIfSelected(out, err).value_or(-1);
    out_text = out.str();
    err_text = err.str();
    return code;
  };
  std::string out, err;
  EXPECT_EQ(run({"report", "-i", path, "--view", "irq", "--interval", "500ms", "--format", "json"},
                out, err),
            0)
      << err;
  EXPECT_EQ(nlohmann::json::parse(out)["interval_s"], 0.5);
  EXPECT_EQ(run({"report", "-i", path, "--view", "irq", "--interval", "soon"}, out, err), 1);
  EXPECT_NE(err.find("invalid --interval 'soon'"), std::string::npos) << err;
  EXPECT_EQ(run({"report", "-i", path, "--view", "ptt", "--sort", "dispatches"}, out, err), 0);
  EXPECT_LT(out.find("worker"), out.find("server"));
  EXPECT_EQ(run({"report", "-i", path, "--view", "ptt", "--pid", "200", "--format", "json"}, out,
                err),
            0);
  EXPECT_EQ(nlohmann::json::parse(out)["threads"].size(), 1u);
}

}  // namespace
}  // namespace arcprof::testing
