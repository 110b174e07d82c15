// Writes the fuzzer's seed corpus at build time: a small valid capture of the
// sample profile in the current schema, one that is cut short, and two with
// damaged meta. The same profile in schema 1 is the committed fixture
// tests/store/fixtures/schema1.db, copied in by tests/reports/CMakeLists.txt.
#include <sqlite3.h>

#include <filesystem>
#include <iostream>

#include "store/capture_store.h"
#include "tests/model/test_profiles.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: make_seed_capture CORPUS_DIR\n";
    return 1;
  }
  const std::filesystem::path dir = argv[1];
  std::filesystem::create_directories(dir);
  const std::string valid = (dir / "valid.db").string();
  if (auto r = arcprof::store::WriteCapture(valid, arcprof::testing::SampleProfile()); !r) {
    std::cerr << r.error().message << "\n";
    return 1;
  }
  // Two red-team finds (issue 23): the checksum's key with a flipped bit, and
  // a rate no recording has (written with the checksum restamped).
  for (const auto& [name, sql] : {std::pair{"crc-key-flipped.db",
                                            "UPDATE meta SET key = 'content_crc33' WHERE key = 'content_crc32';"
                                            "UPDATE meta SET value = '989' WHERE key = 'frequency_hz'"},
                                  std::pair{"frequency-zero.db", "UPDATE meta SET value = '0' WHERE key = 'frequency_hz'"}}) {
    const std::string path = (dir / name).string();
    std::filesystem::copy_file(valid, path, std::filesystem::copy_options::overwrite_existing);
    sqlite3* db = nullptr;
    if (sqlite3_open(path.c_str(), &db) != SQLITE_OK || sqlite3_exec(db, sql, nullptr, nullptr, nullptr) != SQLITE_OK) {
      std::cerr << path << ": " << sqlite3_errmsg(db) << "\n";
      sqlite3_close(db);
      return 1;
    }
    auto sum = arcprof::store::ContentChecksum(db);
    if (sum) {
      const std::string restamp = "UPDATE meta SET value = '" + *sum + "' WHERE capture_id = 0 AND key = 'content_crc32'";
      sqlite3_exec(db, restamp.c_str(), nullptr, nullptr, nullptr);
    }
    sqlite3_close(db);
  }
  const std::string cut = (dir / "cut.db").string();
  std::filesystem::copy_file(valid, cut, std::filesystem::copy_options::overwrite_existing);
  std::filesystem::resize_file(cut, std::filesystem::file_size(valid) / 2);
  return 0;
}
