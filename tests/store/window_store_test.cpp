// The continuous store without sampling: windows, ids, ranges that sum,
// retention, sent marks, corrupt windows and time parsing.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "store/capture_store.h"
#include "model/profile_merge.h"
#include "store/window_store.h"
#include "tests/model/test_profiles.h"
#include "tests/store/window_fixtures.h"
#include "tests/layer_names.h"

namespace arcprof {
namespace {

using testing::SampleProfile;
using testing::TempDir;

using testing::kBase;
using testing::kSec;
using testing::Window;

TEST(WindowStore, AppendsWindowsWithStableSortableIds) {
  TempDir dir;
  auto store = WindowStore::OpenForWriting(dir.File("store"));
  ASSERT_TRUE(store) << store.error().message;
  auto a = store->Append(Window(kBase + 60 * kSec));
  auto b = store->Append(Window(kBase));
  ASSERT_TRUE(a && b);
  auto parsed = ParseWindowId(*a);
  ASSERT_TRUE(parsed);
  EXPECT_EQ(parsed->start_unix_ns, kBase + 60 * kSec);
  EXPECT_EQ(parsed->end_unix_ns, kBase + 120 * kSec);
  const auto windows = store->List();
  ASSERT_EQ(windows.size(), 2u);
  EXPECT_EQ(windows[0].id, *b);  // oldest first
  EXPECT_EQ(windows[1].id, *a);
  EXPECT_GT(windows[0].bytes, 0u);
  // Each window is a capture of its own.
  auto read = store->Read(*a);
  ASSERT_TRUE(read) << read.error().message;
  EXPECT_EQ(read->total_samples(), SampleProfile().total_samples());
  struct stat st {};
  ASSERT_EQ(stat(dir.File("store").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
}

TEST(WindowStore, RangeIsTheSumOfItsWindows) {
  TempDir dir;
  auto store = WindowStore::OpenForWriting(dir.path());
  ASSERT_TRUE(store);
  for (uint64_t i = 0; i < 5; ++i) ASSERT_TRUE(store->Append(Window(kBase + i * 60 * kSec, i + 1)));
  std::vector<std::string> warnings;
  auto all = store->ReadRange(0, UINT64_MAX, &warnings);
  ASSERT_TRUE(all) << all.error().message;
  const uint64_t one = SampleProfile().total_samples();
  EXPECT_EQ(all->total_samples(), one * (1 + 2 + 3 + 4 + 5));
  EXPECT_EQ(all->counters.at("samples_total"), static_cast<int64_t>(one * 15));
  EXPECT_TRUE(warnings.empty());
  // Node by node: the merged tree of a thread equals scale x the original.
  const Profile base = SampleProfile();
  for (size_t t = 0; t < base.threads.size(); ++t) {
    const uint32_t m = all->ThreadIndex(base.threads[t].pid, base.threads[t].tid);
    EXPECT_EQ(all->threads[m].tree.total(), base.threads[t].tree.total() * 15);
  }
  EXPECT_EQ(all->meta.start_unix_ns, kBase);
  EXPECT_EQ(EndUnixNs(all->meta), kBase + 5 * 60 * kSec);
  // Windows 2..3 only ([kBase+120 s, kBase+180 s) overlaps windows 2 and 3 by their ends).
  auto part = store->ReadRange(kBase + 121 * kSec, kBase + 179 * kSec, nullptr);
  ASSERT_TRUE(part);
  EXPECT_EQ(part->total_samples(), one * 3);
  // Nothing in range: one clear error.
  auto none = store->ReadRange(kBase + 3600 * kSec, UINT64_MAX, nullptr);
  ASSERT_FALSE(none);
  EXPECT_NE(none.error().message.find("no window in the time range"), std::string::npos);
}

TEST(WindowStore, CorruptWindowIsSkippedWithAWarning) {
  TempDir dir;
  auto store = WindowStore::OpenForWriting(dir.path());
  ASSERT_TRUE(store);
  std::vector<std::string> ids;
  for (uint64_t i = 0; i < 3; ++i) ids.push_back(store->Append(Window(kBase + i * 60 * kSec)).value());
  {
    std::ofstream out(dir.File(ids[1] + ".db"), std::ios::binary | std::ios::trunc);
    out << "SQLite format 3" << std::string(100, '\x7f');
  }
  std::vector<std::string> warnings;
  auto all = store->ReadRange(0, UINT64_MAX, &warnings);
  ASSERT_TRUE(all) << all.error().message;
  EXPECT_EQ(all->total_samples(), SampleProfile().total_samples() * 2);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find(ids[1]), std::string::npos);
  EXPECT_EQ(warnings[0].find('\n'), std::string::npos);
}

TEST(WindowStore, RetentionRemovesOldestByAgeThenBySize) {
  TempDir dir;
  auto store = WindowStore::OpenForWriting(dir.path());
  ASSERT_TRUE(store);
  for (uint64_t i = 0; i < 6; ++i) ASSERT_TRUE(store->Append(Window(kBase + i * 3600 * kSec)));
  ASSERT_TRUE(store->MarkSent(store->List()[0].id, "http://a"));
  // now = the last window's end; keep 2.5 h: windows ending before now-2.5h go.
  const uint64_t now = kBase + 5 * 3600 * kSec + 60 * kSec;
  RetentionResult r = store->ApplyRetention(9000, 0, now);
  EXPECT_EQ(r.removed, 3u);
  EXPECT_EQ(r.removed_unsent, 2u);
  EXPECT_EQ(store->List().size(), 3u);
  EXPECT_EQ(store->List()[0].start_unix_ns, kBase + 3 * 3600 * kSec);
  for (const std::string& e : dir.Entries()) EXPECT_EQ(e.find(".sent"), std::string::npos) << e;
  // By size: one window's worth keeps the newest only, never none.
  const uint64_t one = store->List()[0].bytes;
  r = store->ApplyRetention(0, one + one / 2, now);
  EXPECT_EQ(r.removed, 2u);
  ASSERT_EQ(store->List().size(), 1u);
  EXPECT_EQ(store->List()[0].start_unix_ns, kBase + 5 * 3600 * kSec);
  r = store->ApplyRetention(0, 1, now);
  EXPECT_EQ(r.removed, 0u);
  EXPECT_EQ(store->List().size(), 1u);
}

TEST(WindowStore, SentMarksArePerDestinationAndIdempotent) {
  TempDir dir;
  auto store = WindowStore::OpenForWriting(dir.path());
  ASSERT_TRUE(store);
  auto a = store->Append(Window(kBase)).value();
  auto b = store->Append(Window(kBase + 60 * kSec)).value();
  ASSERT_TRUE(store->MarkSent(a, "http://one:4040"));
  ASSERT_TRUE(store->MarkSent(a, "http://one:4040"));
  EXPECT_EQ(store->Unsent("http://one:4040")->size(), 1u);
  EXPECT_EQ(store->Unsent("http://one:4040").value()[0].id, b);
  EXPECT_EQ(store->Unsent("http://two:4040")->size(), 2u);
  EXPECT_EQ(store->List()[0].sent_to, std::vector<std::string>{"http://one:4040"});
  EXPECT_FALSE(store->MarkSent("../../etc/passwd", "x"));
  EXPECT_FALSE(store->MarkSent(a, "two\nlines"));
}

// The store reader trusted file names (issue 23): a window file copied under
// another window's name was summed again (window 0 counted three times, one
// copy dated 2100), and a FIFO, symlink or directory named like a window was
// left out silently. Windows are identified by their content (its start, end
// and capture id), a copy counts once, and every entry that is not a window
// file is listed as unreadable.
TEST(WindowStore, CopiesCountOnceAndEntriesThatAreNotWindowsAreUnreadable) {
  TempDir dir;
  auto store = WindowStore::OpenForWriting(dir.path());
  ASSERT_TRUE(store);
  bool planted = false;
  const std::vector<std::string> ids = testing::PlantCopiesAndOddEntries(dir, *store, planted);
  ASSERT_TRUE(planted);

  std::vector<std::string> warnings;
  auto all = store->ReadRange(0, UINT64_MAX, &warnings);
  ASSERT_TRUE(all) << all.error().message;
  EXPECT_EQ(all->total_samples(), SampleProfile().total_samples() * 3);
  EXPECT_EQ(EndUnixNs(all->meta), kBase + 3 * 60 * kSec);  // not 2100
  std::string joined;
  for (const std::string& w : warnings) joined += w + "\n";
  EXPECT_EQ(warnings.size(), 5u) << joined;
  for (const char* what : {"0badc0de", "4102444800000", "0000f1f0", "00001111", "000d1d1d"}) {
    EXPECT_NE(joined.find(what), std::string::npos) << what << "\n" << joined;
  }
  for (const std::string& w : warnings) EXPECT_EQ(w.find(ids[1]), std::string::npos) << w;

  // (`store info` on such a store: tests/reports/store_info_test.cpp.)
  // Pushing: the copies and the other entries are never sent as windows.
  EXPECT_EQ(store->Unsent("http://one:4040")->size(), 3u);
}

std::string FileText(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// A crash can leave a `.sent` marker whose blocks were allocated but never
// written: NUL bytes (issue 23). Such a torn mark means "not sent" once: the
// next MarkSent repairs the file (whole lines kept, the torn part dropped),
// and later pushes neither resend the window nor grow the file.
TEST(WindowStore, ATornSentMarkIsRepairedOnceAndNeverGrows) {
  TempDir dir;
  auto store = WindowStore::OpenForWriting(dir.path());
  ASSERT_TRUE(store);
  auto a = store->Append(Window(kBase)).value();
  auto b = store->Append(Window(kBase + 60 * kSec)).value();
  const std::string marker_a = dir.path() + "/" + a + ".sent";
  const std::string marker_b = dir.path() + "/" + b + ".sent";
  {
    std::ofstream(marker_a, std::ios::binary) << std::string(4096, '\0');
    std::ofstream(marker_b, std::ios::binary) << "http://two:4040\n" << std::string(16, '\0') << "http://on";
  }
  const std::string one = "http://one:4040";
  EXPECT_EQ(store->Unsent(one)->size(), 2u);
  EXPECT_EQ(store->Unsent("http://two:4040")->size(), 1u);  // b's whole line still counts
  for (int push = 0; push < 3; ++push) {
    auto unsent = store->Unsent(one);
    for (const UnsentWindow& w : *unsent) ASSERT_TRUE(store->MarkSent(w.id, one));
    EXPECT_TRUE(store->Unsent(one)->empty()) << "push " << push;
  }
  EXPECT_EQ(FileText(marker_a), one + "\n");
  EXPECT_EQ(FileText(marker_b), "http://two:4040\n" + one + "\n");
  ASSERT_EQ(store->Unsent("http://two:4040")->size(), 1u);  // a was never sent there; b still was
  EXPECT_EQ(store->Unsent("http://two:4040").value()[0].id, a);
  // No temporary file is left next to the markers.
  size_t entries = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir.path())) {
    (void)e;
    ++entries;
  }
  EXPECT_EQ(entries, 5u);  // two windows, two markers, .lock
}

TEST(WindowStore, OneWriterAndCleanStartAfterACrash) {
  TempDir dir;
  auto first = WindowStore::OpenForWriting(dir.path());
  ASSERT_TRUE(first);
  auto second = WindowStore::OpenForWriting(dir.path());
  ASSERT_FALSE(second);
  EXPECT_NE(second.error().message.find("another arcprof is writing this store"), std::string::npos);
  ASSERT_TRUE(first->Append(Window(kBase)));
  // A writer killed mid-window leaves a temporary file; readers ignore it and
  // the next writer removes it.
  { std::ofstream(dir.File(".1764000060000-1764000120000-deadbeef.db.tmp.123.abcd")) << "partial"; }
  EXPECT_EQ(first->List().size(), 1u);
  first = MakeError("closed");  // drops the lock
  auto again = WindowStore::OpenForWriting(dir.path());
  ASSERT_TRUE(again) << again.error().message;
  for (const std::string& e : dir.Entries()) EXPECT_EQ(e.find(".tmp."), std::string::npos) << e;
  EXPECT_EQ(again->List().size(), 1u);
}

TEST(WindowStore, RefusesSymlinksAndForeignDirectories) {
  TempDir dir;
  ASSERT_EQ(mkdir(dir.File("real").c_str(), 0700), 0);
  ASSERT_EQ(symlink(dir.File("real").c_str(), dir.File("link").c_str()), 0);
  auto linked = WindowStore::OpenForWriting(dir.File("link"));
  ASSERT_FALSE(linked);
  EXPECT_NE(linked.error().message.find("symbolic link"), std::string::npos);
  ASSERT_EQ(mkdir(dir.File("shared").c_str(), 0777), 0);
  ASSERT_EQ(chmod(dir.File("shared").c_str(), 0777), 0);
  auto shared = WindowStore::OpenForWriting(dir.File("shared"));
  ASSERT_FALSE(shared);
  EXPECT_NE(shared.error().message.find("writable by other users"), std::string::npos);
  { std::ofstream(dir.File("file")) << "x"; }
  EXPECT_FALSE(WindowStore::OpenForWriting(dir.File("file")));
  auto missing = WindowStore::OpenForReading(dir.File("missing"));
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().message.find("no such store"), std::string::npos);
  if (geteuid() == 0) {
    ASSERT_EQ(mkdir(dir.File("other").c_str(), 0700), 0);
    ASSERT_EQ(chown(dir.File("other").c_str(), 65534, 65534), 0);
    auto other = WindowStore::OpenForWriting(dir.File("other"));
    ASSERT_FALSE(other);
    EXPECT_NE(other.error().message.find("owned by uid 65534"), std::string::npos);
  }
  // A symlink named like a window is not a window: listed as unreadable, never
  // followed, read or sent.
  auto store = WindowStore::OpenForWriting(dir.File("real"));
  ASSERT_TRUE(store);
  ASSERT_EQ(symlink("/etc/passwd", dir.File("real/1764000000000-1764000060000-00000000.db").c_str()), 0);
  ASSERT_EQ(store->List().size(), 1u);
  EXPECT_EQ(store->List()[0].unreadable, "not a window file: a symbolic link");
  EXPECT_TRUE(store->Unsent("http://one:4040")->empty());
  EXPECT_FALSE(store->Read("1764000000000-1764000060000-00000000"));
}

TEST(TimeParsing, DurationsSizesAndTimePoints) {
  EXPECT_EQ(*ParseDurationNs("30m"), 1800 * kSec);
  EXPECT_EQ(*ParseDurationNs("7d"), 7 * 86400 * kSec);
  EXPECT_EQ(*ParseDurationNs("60"), 60 * kSec);
  EXPECT_EQ(*ParseDurationNs("1500ms"), 1500000000ull);
  EXPECT_FALSE(ParseDurationNs("m"));
  EXPECT_FALSE(ParseDurationNs("5y"));
  EXPECT_FALSE(ParseDurationNs("99999999999999999999d"));
  EXPECT_EQ(*ParseSize("2GB"), 2ull << 30);
  EXPECT_EQ(*ParseSize("500MiB"), 500ull << 20);
  EXPECT_EQ(*ParseSize("4096"), 4096u);
  EXPECT_FALSE(ParseSize("2XB"));
  const uint64_t now = kBase + 7200 * kSec;
  EXPECT_EQ(ParseTimePoint("30m", now).value(), now - 1800 * kSec);
  EXPECT_EQ(ParseTimePoint("now", now).value(), now);
  EXPECT_EQ(ParseTimePoint("@1764000000", now).value(), kBase);
  EXPECT_EQ(ParseTimePoint("2025-11-24T16:00:00Z", now).value(), kBase);
  EXPECT_EQ(ParseTimePoint("2025-11-24T17:00:00+01:00", now).value(), kBase);
  EXPECT_EQ(ParseTimePoint("2025-11-24T16:00Z", now).value(), kBase);
  {
    // HH:MM is today in local time.
    const time_t now_s = static_cast<time_t>(now / kSec);
    tm t{};
    localtime_r(&now_s, &t);
    t.tm_hour = 3;
    t.tm_min = 4;
    t.tm_sec = 5;
    t.tm_isdst = -1;
    EXPECT_EQ(ParseTimePoint("03:04:05", now).value(), static_cast<uint64_t>(mktime(&t)) * kSec);
  }
  EXPECT_FALSE(ParseTimePoint("25:99", now));
  EXPECT_FALSE(ParseTimePoint("yesterday", now));
  EXPECT_FALSE(ParseTimePoint("2025-13-45T99:00Z", now));
}

}  // namespace
}  // namespace arcprof
