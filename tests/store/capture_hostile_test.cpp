// Hostile and damaged captures (docs/capture-format.md, "Reading"): a file
// handed to arcprof is outside input. Each case was a red-team finding: a
// generated column that allocated gigabytes, a 1 MiB module path copied into
// every frame, absurd counts, text in integer columns, bit flips that changed
// the numbers silently, a planted -journal, control characters in names.
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <map>
#include <random>

#include "store/capture_blocks.h"
#include "store/capture_store.h"
#include "model/metric.h"
#include "model/profile_merge.h"
#include "tests/model/test_profiles.h"

#include "tests/layer_names.h"
#include "tests/store/capture_sql.h"

namespace arcprof {
namespace {

using testing::SampleProfile;
using testing::TempDir;
using testing::ExecSql;
using testing::Restamp;

std::string Rejected(const std::string& path) {
  auto read = ReadCapture(path);
  if (read.ok()) return "(accepted)";
  EXPECT_EQ(read.error().kind, ErrorKind::kCapture);
  EXPECT_EQ(read.error().message.find('\n'), std::string::npos) << read.error().message;
  return read.error().message;
}

struct Hostile {
  const char* name;
  std::string sql;
  const char* expected;
};
void PrintTo(const Hostile& h, std::ostream* out) { *out << h.name; }

class HostileCapture : public ::testing::TestWithParam<Hostile> {};

// Each change is made by a writer that also restamps the checksum, so what
// rejects it is the check named in `expected`, not the checksum.
TEST_P(HostileCapture, IsRejectedWithOneLine) {
  TempDir dir;
  const std::string path = dir.File("hostile.db");
  // Schema 1 (the SampleProfile fixture): the cases break frame and node rows
  // one by one (schema 2's blocks have their own cases below).
  testing::CopyFixture("schema1.db", path);
  ExecSql(path, GetParam().sql);
  // Summing a generated column would run it: that hostile file keeps its old sum.
  if (std::string(GetParam().name) != "GeneratedColumn") Restamp(path);
  const std::string message = Rejected(path);
  EXPECT_NE(message.find(GetParam().expected), std::string::npos) << message;
}

const std::string kFramesWithGeneratedSymbol =
    "CREATE TABLE frames2 (id INTEGER PRIMARY KEY, module_id INTEGER NOT NULL REFERENCES "
    "modules(id), symbol TEXT GENERATED ALWAYS AS (printf('%.*c', 200000000, 'G')) VIRTUAL, "
    "address INTEGER NOT NULL, kind INTEGER NOT NULL, reason INTEGER NOT NULL, inlined INTEGER "
    "NOT NULL);"
    "INSERT INTO frames2 (id, module_id, address, kind, reason, inlined) SELECT id, module_id, "
    "address, kind, reason, inlined FROM frames;"
    "DROP TABLE frames; ALTER TABLE frames2 RENAME TO frames;";

INSTANTIATE_TEST_SUITE_P(
    Captures, HostileCapture,
    ::testing::Values(
        Hostile{"GeneratedColumn", kFramesWithGeneratedSymbol, "table 'frames' is not declared"},
        Hostile{"ExtraColumn", "ALTER TABLE threads ADD COLUMN x TEXT",
                "table 'threads' is not declared"},
        Hostile{"ForeignTable", "CREATE TABLE evil (x)", "unexpected table 'evil'"},
        Hostile{"ExpressionIndex", "CREATE INDEX i ON frames (printf('%.*c', 1000, symbol))",
                "unexpected index 'i'"},
        Hostile{"Trigger", "CREATE TRIGGER t AFTER INSERT ON meta BEGIN SELECT 1; END",
                "unexpected trigger 't'"},
        Hostile{"HugeModulePath",
                "UPDATE modules SET path = printf('/%.*c', 1048000, 'x') WHERE id = 0",
                "longer than a file system allows"},
        Hostile{"TooLongForAnyValue", "UPDATE threads SET cmdline = printf('%.*c', 2000000, 'x')",
                "too big"},
        Hostile{"HugeSymbol", "UPDATE frames SET symbol = printf('%.*c', 100000, 's') WHERE id = 1",
                "symbol of 100000 bytes"},
        Hostile{"MaxUnsignedCount", "UPDATE nodes SET n = -1, base = -1 WHERE thread_id = 0 AND node_id = 3",
                "negative count"},
        Hostile{"AbsurdCount",
                "UPDATE nodes SET n = 1125899906842624, base = 1125899906842624 WHERE thread_id = 0 AND "
                "node_id = 3",
                "absurd count"},
        Hostile{"TextInAnIntegerColumn", "UPDATE nodes SET n = 'many' WHERE thread_id = 0 AND node_id = 3",
                "column 'n' holds a value of the wrong type"},
        Hostile{"NegativeCounter", "UPDATE counters SET value = -5 WHERE name = 'lost_samples'",
                "impossible value -5"},
        // Meta values no recording can have (issue 23: a timeline said 193,120% of one CPU).
        Hostile{"ZeroFrequency", "UPDATE meta SET value = '0' WHERE key = 'frequency_hz'",
                "meta frequency_hz = 0"},
        Hostile{"MissingFrequency", "DELETE FROM meta WHERE key = 'frequency_hz'", "meta frequency_hz is missing"},
        Hostile{"AbsurdFrequency", "UPDATE meta SET value = '2000000000' WHERE key = 'frequency_hz'",
                "meta frequency_hz = 2000000000"},
        Hostile{"EndBeforeStart", "UPDATE meta SET value = '999' WHERE key = 'end_monotonic_ns'",
                "ends before it starts"},
        Hostile{"UnknownStoreKey", "INSERT INTO meta (capture_id, key, value) VALUES (0, 'content_crc33', '1')",
                "unknown store key 'content_crc33'"}),
    [](const ::testing::TestParamInfo<Hostile>& info) { return std::string(info.param.name); });

// ------------------------------------------------------------ schema 2 blocks

// Raw block bytes, written the way the format says (docs/capture-format.md, "Blocks").
class Raw {
 public:
  Raw& V(uint64_t v) {
    while (v >= 0x80) {
      bytes_.push_back(static_cast<char>((v & 0x7f) | 0x80));
      v >>= 7;
    }
    bytes_.push_back(static_cast<char>(v));
    return *this;
  }
  Raw& S(const std::string& s) {
    bytes_ += s;
    return *this;
  }
  const std::string& bytes() const { return bytes_; }

 private:
  std::string bytes_;
};

std::string Hex(const std::string& bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out = "X'";
  for (unsigned char c : bytes) {
    out += kDigits[c >> 4];
    out += kDigits[c & 15];
  }
  return out + "'";
}

// SQL that replaces every tree block of window 1 by one block holding `raw`.
std::string OneTreeBlock(const std::string& raw, int64_t raw_bytes = -1) {
  return "DELETE FROM tree_blocks; INSERT INTO tree_blocks (id, window_id, raw_bytes, data) VALUES (0, 1, " +
         std::to_string(raw_bytes < 0 ? static_cast<int64_t>(raw.size()) : raw_bytes) + ", " +
         Hex(store::Deflate(raw)) + ")";
}
std::string OneFrameBlock(const std::string& raw) {
  return "DELETE FROM frame_blocks; INSERT INTO frame_blocks (id, raw_bytes, data) VALUES (0, " +
         std::to_string(raw.size()) + ", " + Hex(store::Deflate(raw)) + ")";
}

// A tree block of one record: thread 0, a root and `nodes` given as
// (pops, frame); n = 1 and base = n for every node (one value type).
std::string TreeRecord(const std::vector<std::pair<uint64_t, uint64_t>>& nodes, uint64_t flags = 0,
                       uint64_t thread = 0) {
  Raw r;
  r.V(1).V(thread).V(flags).V(nodes.size() + (flags ? 0 : 1));
  for (const auto& node : nodes) r.V(node.first);
  for (const auto& node : nodes) r.V(node.second);
  for (size_t i = 0; i < nodes.size() + (flags ? 0 : 1); ++i) r.V(1);
  for (size_t i = 0; i < nodes.size() + (flags ? 0 : 1); ++i) r.V(0);
  return r.bytes();
}

class HostileBlocks : public ::testing::TestWithParam<Hostile> {};

// Schema 3 (tree blocks in columns): blocks written by a hostile writer that
// knows the format and restamps the checksum.
TEST_P(HostileBlocks, AreRejectedWithOneLine) {
  TempDir dir;
  const std::string path = dir.File("hostile.db");
  testing::CopyFixture("schema3.db", path);
  ASSERT_TRUE(ReadCapture(path).ok());
  ExecSql(path, GetParam().sql);
  Restamp(path);
  const std::string message = Rejected(path);
  EXPECT_NE(message.find(GetParam().expected), std::string::npos) << message;
}

const std::string kZeros(8 << 20, '\0');

INSTANTIATE_TEST_SUITE_P(
    Captures, HostileBlocks,
    ::testing::Values(
        Hostile{"HugeStatedSize", "UPDATE tree_blocks SET raw_bytes = 2000000000", "(at most 1048576)"},
        Hostile{"NegativeStatedSize", "UPDATE frame_blocks SET raw_bytes = -1", "at most"},
        Hostile{"SizeThatLies", "UPDATE tree_blocks SET raw_bytes = raw_bytes - 1", "does not inflate to its stated size"},
        Hostile{"NotZlib", "UPDATE tree_blocks SET data = X'00112233445566778899'", "does not inflate"},
        Hostile{"ZipBomb", "DELETE FROM tree_blocks; INSERT INTO tree_blocks VALUES (0, 1, 1048576, " +
                               Hex(store::Deflate(kZeros)) + ")",
                "does not inflate to its stated size"},
        Hostile{"TextInsteadOfBlob", "UPDATE tree_blocks SET data = 'abc'", "expected a blob"},
        Hostile{"AbsurdRecordCount", OneTreeBlock(Raw().V(1u << 30).V(0).V(0).V(1).V(1).V(0).bytes()),
                "impossible record count"},
        Hostile{"AbsurdNodeCount", OneTreeBlock(Raw().V(1).V(0).V(0).V(1u << 30).V(1).V(0).bytes()),
                "impossible node count"},
        Hostile{"UnknownThread", OneTreeBlock(TreeRecord({{0, 1}}, 0, 4000)), "thread 4000, which does not exist"},
        Hostile{"FrameOutOfRange", OneTreeBlock(TreeRecord({{0, 1}, {0, 999}})), "frame 999, which does not exist"},
        Hostile{"ClimbsAboveTheRoot", OneTreeBlock(TreeRecord({{0, 1}, {2, 2}})), "climbs above its root"},
        Hostile{"ContinuesNothing", OneTreeBlock(TreeRecord({{0, 1}}, 1)), "that no record before it started"},
        Hostile{"InvalidFlags", OneTreeBlock(TreeRecord({{0, 1}}, 6)), "invalid flags"},
        Hostile{"TrailingBytes", OneTreeBlock(TreeRecord({{0, 1}}) + "x"), "trailing bytes"},
        Hostile{"Truncated", OneTreeBlock(TreeRecord({{0, 1}, {0, 2}}).substr(0, 9)), "tree block"},
        Hostile{"OverlongVarint", OneTreeBlock(Raw().V(1).V(0).V(0).V(1).S(std::string(11, '\xff')).bytes()),
                "truncated"},
        Hostile{"AbsurdCount", OneTreeBlock(Raw().V(1).V(0).V(0).V(1).V(uint64_t{1} << 50).V(0).bytes()),
                "absurd count"},
        Hostile{"BlockOfUnknownWindow", "UPDATE tree_blocks SET window_id = 9", "window 9, which does not exist"},
        Hostile{"FrameOfUnknownModule", OneFrameBlock(Raw().V(1).V(99).V(1).V(0).V(0).bytes()),
                "module 99, which does not exist"},
        Hostile{"FrameOfUnknownKind", OneFrameBlock(Raw().V(1).V(0).V(7).V(0).V(0).bytes()), "invalid kind"},
        Hostile{"FrameSymbolTooLong", OneFrameBlock(Raw().V(1).V(0).V(1).V(0).V(100000).S(std::string(100000, 's')).bytes()),
                "symbol longer than 65536"},
        Hostile{"FrameSymbolsShort", OneFrameBlock(Raw().V(1).V(0).V(1).V(0).V(5).S("abc").bytes()),
                "symbols do not fill it"},
        Hostile{"FrameBlockIdsWithAGap", "UPDATE frame_blocks SET id = 3", "frame block ids are not dense"},
        Hostile{"TooManyValueTypes",
                "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 20) "
                "INSERT INTO value_types SELECT x, 'v' || x, 'u' FROM c",
                "more than 16"},
        Hostile{"ValueTypeTwice", "INSERT INTO value_types VALUES (1, 'base', 'samples')", "declared twice"},
        Hostile{"NodesTableInSchema3",
                "CREATE TABLE nodes (window_id INTEGER NOT NULL REFERENCES windows(id), thread_id INTEGER NOT "
                "NULL REFERENCES threads(id), node_id INTEGER NOT NULL, parent_id INTEGER, frame_id INTEGER "
                "REFERENCES frames(id), n INTEGER NOT NULL, base INTEGER NOT NULL, PRIMARY KEY (window_id, "
                "thread_id, node_id)) WITHOUT ROWID",
                "does not belong in a schema 3 capture"}),
    [](const ::testing::TestParamInfo<Hostile>& info) { return std::string(info.param.name); });

// The control for the cases above: a block written by hand the same way is read.
TEST(HostileBlocks, AHandWrittenBlockIsRead) {
  TempDir dir;
  const std::string path = dir.File("hand.db");
  testing::CopyFixture("schema3.db", path);
  ExecSql(path, OneTreeBlock(TreeRecord({{0, 1}, {0, 2}, {1, 3}})));
  Restamp(path);
  auto read = ReadCapture(path);
  ASSERT_TRUE(read.ok()) << read.error().message;
  EXPECT_EQ(read->total_samples(), 4u);  // root and three nodes, n = 1 each
  EXPECT_EQ(read->threads[0].tree.nodes().size(), 4u);
}

// Captures written before the arcflow bindings were derived from the value
// types carry meta unit/occurrences/consumers: they still read, the keys
// ignored, and the views say the same.
TEST(HostileCapture, OlderMetaBindingsAreRead) {
  TempDir dir;
  const std::string path = dir.File("bindings.db");
  const Profile profile = SampleProfile();
  ASSERT_TRUE(WriteCapture(path, profile).ok());
  ExecSql(path,
          "INSERT INTO meta (capture_id, key, value) SELECT id, 'unit', 'samples' FROM captures;"
          "INSERT INTO meta (capture_id, key, value) SELECT id, 'occurrences', 'samples' FROM captures;"
          "INSERT INTO meta (capture_id, key, value) SELECT id, 'consumers', 'functions' FROM captures;");
  Restamp(path);
  auto read = ReadCapture(path);
  ASSERT_TRUE(read.ok()) << read.error().message;
  EXPECT_EQ(read->total_samples(), profile.total_samples());
  EXPECT_EQ(model::Metric::Samples(*read).unit(), "samples");
}

// Schema 4 (TreeLayout::kContext): one record of thread 0, a root and three
// nodes: frame 1 under the root, 2 under 1, 3 under 1 again (pops 0, 0, 1).
// Pops as runs (two zeros, then pops 1 as 0); ranks all new (0), the new
// frames as zig-zag differences from their parent's frame; n = 1 and one
// value equal to n, leaf-like nodes (2 and 3) first.
Raw ContextHeader(uint64_t nodes) { return std::move(Raw().V(1).V(0).V(0).V(nodes)); }
const std::string kContextBlock =
    ContextHeader(4).V(2).V(0).V(0).V(0).V(0).V(2).V(2).V(4).V(1).V(1).V(1).V(1).V(0).V(0).V(0).V(0).bytes();

class HostileContextBlocks : public ::testing::TestWithParam<Hostile> {};

TEST_P(HostileContextBlocks, AreRejectedWithOneLine) {
  TempDir dir;
  const std::string path = dir.File("hostile.db");
  ASSERT_TRUE(WriteCapture(path, SampleProfile()).ok());
  ExecSql(path, GetParam().sql);
  Restamp(path);
  const std::string message = Rejected(path);
  EXPECT_NE(message.find(GetParam().expected), std::string::npos) << message;
}

INSTANTIATE_TEST_SUITE_P(
    Captures, HostileContextBlocks,
    ::testing::Values(
        Hostile{"MorePopsThanNodes", OneTreeBlock(ContextHeader(2).V(5).V(0).V(2).V(1).V(1).V(0).V(0).bytes()),
                "more pops than nodes"},
        Hostile{"RankOfAnUnseenFrame", OneTreeBlock(ContextHeader(3).V(2).V(0).V(2).V(2).bytes()),
                "a frame its context has not seen"},
        Hostile{"NewFrameOutOfRange", OneTreeBlock(ContextHeader(2).V(1).V(0).V(2 * 999).V(1).V(1).V(0).V(0).bytes()),
                "frame 999, which does not exist"},
        Hostile{"ClimbsAboveTheRoot", OneTreeBlock(ContextHeader(3).V(1).V(1).V(0).V(0).V(2).V(4).V(1).V(1).V(1)
                                                       .V(0).V(0).V(0).bytes()),
                "climbs above its root"},
        Hostile{"TrailingBytes", OneTreeBlock(kContextBlock + "x"), "trailing bytes"}),
    [](const ::testing::TestParamInfo<Hostile>& info) { return std::string(info.param.name); });

TEST(HostileContextBlocks, AHandWrittenBlockIsRead) {
  TempDir dir;
  const std::string path = dir.File("hand.db");
  ASSERT_TRUE(WriteCapture(path, SampleProfile()).ok());
  ExecSql(path, OneTreeBlock(kContextBlock));
  Restamp(path);
  auto read = ReadCapture(path);
  ASSERT_TRUE(read.ok()) << read.error().message;
  EXPECT_EQ(read->total_samples(), 4u);
  const auto& nodes = read->threads[0].tree.nodes();
  ASSERT_EQ(nodes.size(), 4u);
  EXPECT_EQ(nodes[2].parent, 1u);  // frame 2 under frame 1
  EXPECT_EQ(nodes[3].parent, 1u);  // frame 3 under frame 1 too
}

// Schema 5: the rows of threads, modules and counters as row blocks of the
// row_blocks table (docs/capture-format.md, "Row blocks"). Each case replaces
// one table's block (SampleProfile has one each) or breaks the table itself.
std::string RowBlockOf(const std::string& name, const std::string& raw) {
  return "UPDATE row_blocks SET raw_bytes = " + std::to_string(raw.size()) + ", data = " + Hex(store::Deflate(raw)) +
         " WHERE name = '" + name + "'";
}

class HostileRowBlocks : public ::testing::TestWithParam<Hostile> {};

TEST_P(HostileRowBlocks, AreRejectedWithOneLine) {
  TempDir dir;
  const std::string path = dir.File("hostile.db");
  testing::CopyFixture("schema5.db", path);
  ASSERT_TRUE(ReadCapture(path).ok());
  ExecSql(path, GetParam().sql);
  Restamp(path);
  const std::string message = Rejected(path);
  EXPECT_NE(message.find(GetParam().expected), std::string::npos) << message;
}

INSTANTIATE_TEST_SUITE_P(
    Captures, HostileRowBlocks,
    ::testing::Values(
        Hostile{"UnknownTable", "UPDATE row_blocks SET name = 'evil' WHERE name = 'counters'", "of an unknown table"},
        Hostile{"IdsWithAGap", "UPDATE row_blocks SET id = 7 WHERE name = 'counters'", "row block ids are not dense"},
        Hostile{"HugeStatedSize", "UPDATE row_blocks SET raw_bytes = 2000000000", "(at most 1048576)"},
        Hostile{"NotZlib", "UPDATE row_blocks SET data = X'0011223344' WHERE name = 'threads'", "does not inflate"},
        Hostile{"TextInsteadOfBlob", "UPDATE row_blocks SET data = 'abc'", "expected a blob"},
        Hostile{"AbsurdRowCount", RowBlockOf("threads", Raw().V(1u << 30).V(0).bytes()), "impossible row count"},
        // capture 1, pid 5,000,000,000, tid 1, comm "a", process "a", no command line
        Hostile{"HugePid", RowBlockOf("threads", Raw().V(1).V(2).V(10'000'000'000).V(2).V(1).S("a").V(1).S("a").V(0).bytes()),
                "invalid pid or tid"},
        Hostile{"LongThreadName",
                RowBlockOf("threads", Raw().V(1).V(2).V(2).V(2).V(5000).S(std::string(5000, 'n')).V(1).S("a").V(0).bytes()),
                "name longer than 4096 bytes"},
        Hostile{"HugeModulePath", RowBlockOf("modules", Raw().V(1).V(5000).S(std::string(5000, '/')).V(0).bytes()),
                "longer than a file system allows"},
        // window 1, lost_samples = -5 (zig-zag 9)
        Hostile{"NegativeCounter", RowBlockOf("counters", Raw().V(1).V(2).V(12).S("lost_samples").V(9).bytes()),
                "impossible value -5"},
        Hostile{"CounterOfUnknownWindow", RowBlockOf("counters", Raw().V(1).V(18).V(1).S("x").V(0).bytes()),
                "counter of a window that does not exist"},
        Hostile{"TrailingBytes", RowBlockOf("counters", Raw().V(1).V(2).V(1).S("x").V(0).V(0).bytes()),
                "trailing bytes"},
        Hostile{"RowTableInSchema5",
                "CREATE TABLE counters (window_id INTEGER NOT NULL REFERENCES windows(id), name TEXT NOT NULL, "
                "value INTEGER NOT NULL, PRIMARY KEY (window_id, name)) WITHOUT ROWID",
                "table 'counters' does not belong in a schema 5 capture"},
        Hostile{"BlockTableInSchema4",
                "PRAGMA user_version = 4; UPDATE meta SET value = '4' WHERE capture_id = 0 AND key = "
                "'schema_version'",
                "table 'row_blocks' does not belong in a schema 4 capture"}),
    [](const ::testing::TestParamInfo<Hostile>& info) { return std::string(info.param.name); });

// The control for the cases above: blocks written by hand the same way are read.
TEST(HostileRowBlocks, HandWrittenBlocksAreRead) {
  TempDir dir;
  const std::string path = dir.File("hand.db");
  testing::CopyFixture("schema5.db", path);
  ExecSql(path, RowBlockOf("counters", Raw().V(1).V(2).V(12).S("lost_samples").V(14).bytes()));
  Restamp(path);
  auto read = ReadCapture(path);
  ASSERT_TRUE(read.ok()) << read.error().message;
  EXPECT_EQ(read->counters, (std::map<std::string, int64_t>{{"lost_samples", 7}}));
}

// Schema 5 ends each symbol with a NUL: a NUL inside a symbol (a hostile perf
// map can hold one) is stored as the four characters \x00, which is what
// reading any older schema shows for it (control characters are escaped).
TEST(HostileRowBlocks, ANulInASymbolReadsTheSameInEverySchema) {
  TempDir dir;
  Profile profile = SampleProfile();
  FrameRecord f;
  f.symbol = std::string("evil\0name", 9);
  f.kind = FrameKind::kJit;
  f.address = 0x1000;
  const uint32_t id = profile.frames.Intern("JITCODE", f);
  const uint32_t frames[] = {id};
  profile.threads[0].tree.AddStack(frames, 3);
  for (int version : {4, 5, 6, 7, 8}) {
    const std::string path = dir.File("nul" + std::to_string(version) + ".db");
    // The fixtures nul-schema{4,5,6,7,8}.db hold this profile.
    testing::CopyFixture("nul-schema" + std::to_string(version) + ".db", path);
    auto read = ReadCapture(path);
    ASSERT_TRUE(read.ok()) << read.error().message;
    bool found = false;
    for (const FrameRecord& g : read->frames.all()) found = found || g.symbol == "evil\\x00name";
    EXPECT_TRUE(found) << "schema " << version;
    EXPECT_EQ(read->total_samples(), profile.total_samples());
  }
}

// The codec round-trips trees of any shape, including ones split over blocks,
// and every prefix of a valid block is rejected, never misread.
TEST(CaptureBlocks, LargeTreesSplitOverBlocksRoundTrip) {
  TempDir dir;
  const std::string path = dir.File("large.db");
  Profile profile = testing::LargeProfile(2'000'000, 60'000, 30);
  const size_t offcpu = profile.DeclareValue(ValueType{"offcpu", "nanoseconds"});
  for (auto& thread : profile.threads) {
    for (uint32_t i = 0; i < thread.tree.size(); i += 7) thread.tree.Add(i, 0, offcpu, 1000 * i + 1);
  }
  ASSERT_TRUE(WriteCapture(path, profile).ok());
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  sqlite3_stmt* stmt = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(db, "SELECT count(*) FROM tree_blocks", -1, &stmt, nullptr), SQLITE_OK);
  ASSERT_EQ(sqlite3_step(stmt), SQLITE_ROW);
  EXPECT_GT(sqlite3_column_int(stmt, 0), 1);  // the trees did not fit one block
  sqlite3_finalize(stmt);
  sqlite3_close(db);
  auto read = ReadCapture(path);
  ASSERT_TRUE(read.ok()) << read.error().message;
  EXPECT_EQ(read->total_samples(), profile.total_samples());
  uint64_t offcpu_in = 0, offcpu_out = 0, nodes_in = 0, nodes_out = 0;
  for (const auto& thread : profile.threads) {
    nodes_in += thread.tree.nodes().size();
    offcpu_in += thread.tree.total(offcpu);
  }
  for (const auto& thread : read->threads) {
    nodes_out += thread.tree.nodes().size();
    offcpu_out += thread.tree.total(read->ValueIndex("offcpu").value());
  }
  EXPECT_EQ(nodes_in, nodes_out);
  EXPECT_EQ(offcpu_in, offcpu_out);
}

TEST(CaptureBlocks, EveryPrefixOfATreeBlockIsRejected) {
  std::vector<store::FlatTree> trees(1);
  store::FlatTree& t = trees[0];
  t.parent = {0, 0, 1, 1, 0};
  t.frame = {0, 3, 4, 5, 6};
  t.n = {0, 0, 2, 3, 1};
  t.values = {0, 0, 2, 3, 1};
  const auto blocks = store::EncodeTreeBlocks(trees, 1);
  ASSERT_EQ(blocks.size(), 1u);
  ASSERT_TRUE(store::DecodeTreeBlock(blocks[0], 1, 1, 7).ok());
  for (size_t cut = 0; cut < blocks[0].size(); ++cut) {
    EXPECT_FALSE(store::DecodeTreeBlock(blocks[0].substr(0, cut), 1, 1, 7).ok()) << "cut at " << cut;
  }
  // Depth-first preorder: 1 (pops 0), 2 (0), 3 (1), 4 (2).
  auto records = store::DecodeTreeBlock(blocks[0], 1, 1, 7);
  ASSERT_EQ(records->size(), 1u);
  EXPECT_EQ((*records)[0].pops, (std::vector<uint32_t>{0, 0, 1, 2}));
  EXPECT_EQ((*records)[0].frames, (std::vector<uint32_t>{3, 4, 5, 6}));
}

// A writer that does not restamp: any changed value, even one that keeps every
// other invariant (a symbol's text), is found by the checksum.
TEST(HostileCapture, ChangedTextIsFoundByTheChecksum) {
  TempDir dir;
  const std::string path = dir.File("flipped.db");
  testing::CopyFixture("schema1.db", path);
  ExecSql(path, "UPDATE frames SET symbol = 'f_hebvy' WHERE symbol = 'f_heavy'");
  EXPECT_NE(Rejected(path).find("content checksum mismatch"), std::string::npos);
}

// Two flipped bits (issue 23): one in the checksum's key name turned the check
// off, the second changed a value (999 Hz read as 989 Hz). The schemas that
// write the checksum require it; schema 1 files older than the checksum have
// none, and there the renamed key is an unknown store key.
TEST(HostileCapture, TwoBitFlipsInTheChecksumKeyAndAValueAreRefused) {
  for (int schema : {1, 2, 3, 4, 5}) {
    SCOPED_TRACE("schema " + std::to_string(schema));
    TempDir dir;
    const std::string path = dir.File("flipped.db");
    testing::CopyFixture("schema" + std::to_string(schema) + ".db", path);
    ExecSql(path,
            "UPDATE meta SET key = 'content_crc33' WHERE capture_id = 0 AND key = 'content_crc32';"
            "UPDATE meta SET value = '989' WHERE key = 'frequency_hz'");
    const std::string message = Rejected(path);
    EXPECT_NE(message.find("content_crc33"), std::string::npos) << message;

    const std::string missing = dir.File("missing.db");
    testing::CopyFixture("schema" + std::to_string(schema) + ".db", missing);
    ExecSql(missing, "DELETE FROM meta WHERE capture_id = 0 AND key = 'content_crc32'");
    if (schema == 1) {
      EXPECT_TRUE(ReadCapture(missing).ok()) << "a schema 1 capture older than the checksum";
    } else {
      EXPECT_NE(Rejected(missing).find("content checksum (meta content_crc32) is missing"), std::string::npos)
          << Rejected(missing);
    }
  }
}

// The rate of an event that is not a clock is not known with -c (meta
// frequency_hz 0, loader/recording_session.cpp): such captures still read.
TEST(HostileCapture, AnUnknownRateOfAnEventCountIsRead) {
  TempDir dir;
  const std::string path = dir.File("faults.db");
  Profile profile = SampleProfile();
  profile.meta.event = "page-faults";
  profile.meta.frequency_hz = 0;
  ASSERT_TRUE(WriteCapture(path, profile).ok());
  auto read = ReadCapture(path);
  ASSERT_TRUE(read.ok()) << read.error().message;
  EXPECT_EQ(read->meta.frequency_hz, 0u);
}

// Bit flips anywhere in the file: never a crash, and never different numbers
// without an error. A flip may land in unused space (free bytes of a page) and
// change nothing: then the read must give the very same totals.
TEST(HostileCapture, BitFlipsNeverGiveDifferentNumbersSilently) {
  TempDir dir;
  const std::string good = dir.File("good.db");
  ASSERT_TRUE(WriteCapture(good, SampleProfile()).ok());
  auto reference = ReadCapture(good);
  ASSERT_TRUE(reference.ok());
  std::ifstream in(good, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), {});
  std::mt19937 random(13);
  int accepted = 0, rejected = 0;
  for (int i = 0; i < 300; ++i) {
    std::string flipped = bytes;
    const size_t at = random() % flipped.size();
    flipped[at] = static_cast<char>(flipped[at] ^ (1 << (random() % 8)));
    const std::string path = dir.File("flip.db");
    std::ofstream(path, std::ios::binary | std::ios::trunc) << flipped;
    auto read = ReadCapture(path);
    if (!read.ok()) {
      ++rejected;
      continue;
    }
    ++accepted;
    EXPECT_EQ(read->total_samples(), reference->total_samples()) << "flip at byte " << at;
    EXPECT_EQ(read->counters, reference->counters) << "flip at byte " << at;
    EXPECT_EQ(read->threads.size(), reference->threads.size()) << "flip at byte " << at;
    EXPECT_EQ(read->frames.size(), reference->frames.size()) << "flip at byte " << at;
    for (size_t f = 0; f < read->frames.size() && f < reference->frames.size(); ++f) {
      EXPECT_EQ(read->frames.at(static_cast<uint32_t>(f)).symbol,
                reference->frames.at(static_cast<uint32_t>(f)).symbol)
          << "flip at byte " << at;
    }
  }
  EXPECT_GT(rejected, 0);
  RecordProperty("accepted", accepted);
}

// Another user plants "<capture>-journal" next to root's capture in /tmp.
TEST(HostileCapture, AJournalPlantedByAnotherUserIsIgnored) {
  TempDir dir;
  const std::string path = dir.File("arcprof.db");
  ASSERT_TRUE(WriteCapture(path, SampleProfile()).ok());
  const std::string journal = path + "-journal";
  {
    std::ofstream out(journal, std::ios::binary);
    out << std::string("\xd9\xd5\x05\xf9\x20\xa1\x63\xd7", 8) << std::string(4088, '\x01');
  }
  ASSERT_EQ(chown(journal.c_str(), 65534, 65534), 0);
  auto read = ReadCapture(path);
  ASSERT_TRUE(read.ok()) << read.error().message;
  EXPECT_EQ(read->total_samples(), 1995u);
  // A link is not a journal either.
  ::unlink(journal.c_str());
  ASSERT_EQ(::symlink("/etc/passwd", journal.c_str()), 0);
  EXPECT_TRUE(ReadCapture(path).ok());
}

// Names are escaped where they enter the Profile: no view prints ESC, BEL or a
// newline that a process put in its name.
TEST(HostileCapture, ControlCharactersInNamesAreEscaped) {
  TempDir dir;
  const std::string path = dir.File("names.db");
  Profile profile = SampleProfile();
  profile.threads[0].comm = "evil\x1b]0;owned\x07\nforged line";
  profile.threads[0].process_comm = "p\x9b" "2J";
  ASSERT_TRUE(WriteCapture(path, profile).ok());
  auto read = ReadCapture(path);
  ASSERT_TRUE(read.ok()) << read.error().message;
  EXPECT_EQ(read->threads[0].comm, "evil\\x1b]0;owned\\x07\\x0aforged line");
  EXPECT_EQ(read->threads[0].process_comm, "p\\x9b2J");
}

// One module path under many frames: a red-team capture had a 1 MiB path under
// 12,000 frames and reached 9.7 GB, each frame holding a copy. Frames name
// their module by id now, so the path is held once by the model, by a merge
// and by the writer, and the reader holds it once: 150,000 frames under the
// longest path a capture may hold (4 KiB) read into well under the 600 MB
// that a copy per frame took.
Profile OneModuleProfile(size_t path_bytes, int frames) {
  Profile p;
  p.meta.frequency_hz = 999;
  const uint32_t module = p.frames.InternModule("/" + std::string(path_bytes - 1, 'm'));
  const uint32_t t = p.ThreadIndex(1, 1);
  for (int i = 0; i < frames; ++i) {
    FrameRecord f;
    f.module = module;
    f.symbol = "f" + std::to_string(i);
    f.kind = FrameKind::kNative;
    f.address = static_cast<uint64_t>(i) * 16;
    const uint32_t stack[] = {p.frames.Intern(f)};
    p.threads[t].tree.AddStack(stack, 1);
  }
  return p;
}

TEST(HostileCapture, OneLongModulePathIsHeldOnce) {
  const Profile big = OneModuleProfile(1 << 20, 12000);
  ASSERT_EQ(big.frames.size(), 12000u);
  EXPECT_EQ(big.frames.module_count(), 2u);  // "" and the path
  for (const FrameRecord& f : big.frames.all()) ASSERT_EQ(f.module, 1u);
  Profile merged;
  MergeProfile(merged, big);
  MergeProfile(merged, big);
  EXPECT_EQ(merged.frames.module_count(), 2u);
  TempDir dir;
  const std::string long_path = dir.File("long-path.db");
  ASSERT_TRUE(WriteCapture(long_path, big).ok());
  struct stat st {};
  ASSERT_EQ(::stat(long_path.c_str(), &st), 0);
  EXPECT_LT(st.st_size, 4 << 20);  // the path written once
  // Longer than any file system path: refused in one line.
  EXPECT_NE(Rejected(long_path).find("path"), std::string::npos);

  const std::string many = dir.File("many-frames.db");
  ASSERT_TRUE(WriteCapture(many, OneModuleProfile(4096, 150000)).ok());
  auto resident_mb = [] {
    std::ifstream statm("/proc/self/statm");
    uint64_t size = 0, resident = 0;
    statm >> size >> resident;
    return static_cast<double>(resident * static_cast<uint64_t>(::sysconf(_SC_PAGESIZE))) / 1e6;
  };
  const double before = resident_mb();
  auto read = ReadCapture(many);
  ASSERT_TRUE(read.ok()) << read.error().message;
  const double grown = resident_mb() - before;
  EXPECT_EQ(read->frames.size(), 150000u);
  EXPECT_EQ(read->frames.module_count(), 2u);
  EXPECT_EQ(read->frames.module(1).size(), 4096u);
  EXPECT_EQ(read->total_samples(), 150000u);
  EXPECT_LT(grown, 250.0) << "reading grew the resident set by " << grown << " MB";
}

// The integrity error names the damage, not SQLite's heading.
TEST(HostileCapture, IntegrityErrorsReadWithoutTheDatabaseHeading) {
  TempDir dir;
  const std::string path = dir.File("damaged.db");
  ASSERT_TRUE(WriteCapture(path, testing::LargeProfile(100000, 2000, 12)).ok());
  std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
  f.seekp(4096 * 3 + 200);
  f << std::string(600, '\xff');
  f.close();
  const std::string message = Rejected(path);
  EXPECT_EQ(message.find("***"), std::string::npos) << message;
}

}  // namespace
}  // namespace arcprof
