// Writes the fuzzer's seed corpus at build time: a small valid capture of the
// sample profile (so no binary is committed) in schema 2 and in schema 1, and
// one that is cut short.
#include <filesystem>
#include <iostream>

#include "store/capture_store.h"
#include "tests/reports/test_profiles.h"

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
  const std::string schema1 = (dir / "valid-schema1.db").string();
  if (auto r = arcprof::store::WriteCapture(schema1, arcprof::testing::SampleProfile(), {.schema_version = 1}); !r) {
    std::cerr << r.error().message << "\n";
    return 1;
  }
  const std::string cut = (dir / "cut.db").string();
  std::filesystem::copy_file(valid, cut, std::filesystem::copy_options::overwrite_existing);
  std::filesystem::resize_file(cut, std::filesystem::file_size(valid) / 2);
  return 0;
}
