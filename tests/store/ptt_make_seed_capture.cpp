// Adds a capture with PTT tables to the capture fuzzer's seed corpus, so the
// fuzzer reaches the ptt_* reader (store/ptt_store.cpp).
#include <iostream>

#include "store/capture_store.h"
#include "tests/model/ptt_test_data.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: ptt_make_seed_capture OUTPUT.db\n";
    return 1;
  }
  if (auto r = arcprof::store::WriteCapture(argv[1], arcprof::testing::PttSampleProfile()); !r) {
    std::cerr << r.error().message << "\n";
    return 1;
  }
  return 0;
}
