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
#include <random>

#include "store/capture_store.h"
#include "tests/reports/test_profiles.h"

#include "tests/layer_names.h"

namespace arcprof {
namespace {

using testing::SampleProfile;
using testing::TempDir;

void Exec(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  char* message = nullptr;
  const int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &message);
  const std::string text = message ? message : "";
  sqlite3_free(message);
  sqlite3_close(db);
  ASSERT_EQ(rc, SQLITE_OK) << text;
}

// Stores the checksum again: the hostile writer knows the format.
void Restamp(const std::string& path) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  auto sum = ContentChecksum(db);
  sqlite3_close(db);
  ASSERT_TRUE(sum.ok()) << sum.error().message;
  Exec(path, "UPDATE meta SET value = '" + *sum + "' WHERE capture_id = 0 AND key = 'content_crc32'");
}

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
  Profile profile = SampleProfile();
  profile.meta.unit = "samples";  // as `record` writes it
  ASSERT_TRUE(WriteCapture(path, profile).ok());
  Exec(path, GetParam().sql);
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
                "impossible value -5"}),
    [](const ::testing::TestParamInfo<Hostile>& info) { return std::string(info.param.name); });

// A writer that does not restamp: any changed value, even one that keeps every
// other invariant (a symbol's text), is found by the checksum.
TEST(HostileCapture, ChangedTextIsFoundByTheChecksum) {
  TempDir dir;
  const std::string path = dir.File("flipped.db");
  ASSERT_TRUE(WriteCapture(path, SampleProfile()).ok());
  Exec(path, "UPDATE frames SET symbol = 'f_hebvy' WHERE symbol = 'f_heavy'");
  EXPECT_NE(Rejected(path).find("content checksum mismatch"), std::string::npos);
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
