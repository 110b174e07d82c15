// libFuzzer target for the block decoders of schema 2 to 5 captures
// (store/capture_blocks.h): raw frame (both layouts), tree (all three layouts) and row blocks
// (the PTT tables' and schema 5's threads, modules and counters), and the inflate step,
// taken straight from the input so the fuzzer reaches them without building
// a SQLite file. Each must return a value or an error, never crash, read out of
// bounds or allocate more than a small multiple of its input.
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "store/capture_blocks.h"
#include "store/capture_schema.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  const uint8_t mode = data[0];
  const size_t limit = data[1];  // module, thread, frame and value counts from the input
  const std::string_view rest(reinterpret_cast<const char*>(data + 2), size - 2);
  // Tree blocks of schemas 2 and 3 (columns), of schema 4 (context) or 5
  // (context, sparse values); frame blocks with lengths (2 to 4) or NUL-ended (5).
  static constexpr arcprof::store::TreeLayout kLayouts[] = {
      arcprof::store::TreeLayout::kColumns, arcprof::store::TreeLayout::kContext,
      arcprof::store::TreeLayout::kContextSparse};
  const auto layout = kLayouts[(mode / 6) % 3];
  const auto frame_layout =
      (mode / 6) % 2 ? arcprof::store::FrameLayout::kNulEnded : arcprof::store::FrameLayout::kLengths;
  switch (mode % 6) {
    case 0: {
      std::vector<std::pair<uint32_t, arcprof::model::FrameRecord>> frames;
      (void)arcprof::store::DecodeFrameBlock(rest, limit, frames, frame_layout);
      break;
    }
    case 1: {
      auto records = arcprof::store::DecodeTreeBlock(rest, limit % 20, limit, limit * 3, layout);
      if (records.ok()) {
        for (const auto& r : *records) {
          // What the reader relies on: columns sized as the header says.
          if (r.pops.size() != r.frames.size() || r.values.size() != r.n.size() * (limit % 20)) __builtin_trap();
          for (uint32_t f : r.frames) {
            if (f >= limit * 3) __builtin_trap();
          }
        }
      }
      break;
    }
    case 2: {
      // Inflate with a stated size from the input, then decode as a tree block.
      auto raw = arcprof::store::Inflate(rest, static_cast<uint64_t>(limit) << 12);
      if (raw.ok()) (void)arcprof::store::DecodeTreeBlock(*raw, 1, 8, 64, layout);
      break;
    }
    case 4: {
      // Row blocks with the column kinds of the PTT tables (threads of
      // schemas 3-8 and 9), of the small
      // tables of every schema (threads of schemas 5, 6 and 8), and a
      // text-only one.
      namespace schema = arcprof::store::capture_schema;
      static constexpr const char* kKinds[] = {"iitiiiiiiiii",
                                               "iitiiiiiiiiii",  // schema 9: and the process start
                                               "iiiiiiiii",
                                               "t",
                                               "ti",
                                               schema::kModulesRows.kinds,
                                               schema::kThreadsRows.kinds,
                                               schema::kThreadsRows6.kinds,
                                               schema::kThreadsRows8.kinds,
                                               schema::kCountersRows.kinds};
      const char* kinds = kKinds[limit % std::size(kKinds)];
      auto rows = arcprof::store::DecodeRowBlock(rest, kinds, limit * 4);
      if (rows.ok()) {
        size_t texts = 0;
        for (const char* k = kinds; *k; ++k) texts += *k == 't';
        const size_t ints = std::char_traits<char>::length(kinds) - texts;
        if (rows->ints.size() != rows->rows * ints || rows->texts.size() != rows->rows * texts) __builtin_trap();
        for (const auto& t : rows->texts) {
          if (t.size() > limit * 4) __builtin_trap();
        }
        // Round trip: what decodes encodes to blocks that decode to the same rows.
        arcprof::store::RowBlock again;
        again.kinds = kinds;
        for (const std::string& block : arcprof::store::EncodeRowBlocks(*rows)) {
          auto part = arcprof::store::DecodeRowBlock(block, kinds, limit * 4);
          if (!part.ok()) __builtin_trap();
          again.rows += part->rows;
          again.ints.insert(again.ints.end(), part->ints.begin(), part->ints.end());
          again.texts.insert(again.texts.end(), part->texts.begin(), part->texts.end());
        }
        if (again.rows != rows->rows || again.ints != rows->ints || again.texts != rows->texts) __builtin_trap();
      }
      break;
    }
    case 5: {
      auto raw = arcprof::store::Inflate(rest, static_cast<uint64_t>(limit) << 12);
      if (raw.ok()) (void)arcprof::store::DecodeRowBlock(*raw, "iitiiiiiiiii", 4096);
      break;
    }
    default: {
      // Round trip: frames decoded from the input encode and decode to the same.
      std::vector<std::pair<uint32_t, arcprof::model::FrameRecord>> frames;
      if (!arcprof::store::DecodeFrameBlock(rest, 256, frames, frame_layout).ok()) break;
      std::vector<arcprof::store::BlockFrame> in;
      for (const auto& [module, frame] : frames) in.push_back({module, &frame});
      std::vector<std::pair<uint32_t, arcprof::model::FrameRecord>> again;
      for (const auto& block : arcprof::store::EncodeFrameBlocks(in, frame_layout)) {
        if (!arcprof::store::DecodeFrameBlock(block, 256, again, frame_layout).ok()) __builtin_trap();
      }
      if (again != frames) __builtin_trap();
      break;
    }
  }
  return 0;
}
