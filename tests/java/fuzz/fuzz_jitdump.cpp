// libFuzzer target: the jitdump and side-file parsers, as the recorder uses
// them (header, then records, resuming at `consumed` as when tailing).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "symbolize/jit_index.h"
#include "symbolize/jit_method_table.h"
#include "symbolize/jitdump.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace arcprof;
  std::string_view in(reinterpret_cast<const char*>(data), size);
  JitCodeIndex index;
  if (auto h = jitdump::ParseFileHeader(in); h.ok() && h->header_size <= in.size()) {
    std::string_view rest = in.substr(h->header_size);
    // Split in two reads at a point taken from the input: tailing must agree.
    const size_t cut = rest.empty() ? 0 : static_cast<uint8_t>(rest[0]) % (rest.size() + 1);
    jitdump::Records records;
    auto p = jitdump::ParseRecords(rest.substr(0, cut), h->swapped, &records);
    if (!p.corrupt) jitdump::ParseRecords(rest.substr(p.consumed), h->swapped, &records);
    for (const auto& l : records.loads) index.AddCode(l.t_ns, l.addr, l.size, l.name, l.index);
    for (const auto& m : records.moves) index.AddMove(m.t_ns, m.new_addr, m.size, m.index);
    for (const auto& l : records.loads) index.Find(l.addr, l.t_ns);
  }
  if (auto off = jitdump::ParseSideHeader(in); off.ok() && *off <= in.size()) {
    jitdump::SideRecords side;
    jitdump::ParseSideRecords(in.substr(*off), &side);
    for (const auto& u : side.unloads) index.AddUnload(u.t_ns, u.addr, u.index);
    for (const auto& info : side.inlines) {
      // Decoded whole, and kept as bytes decoded at the first lookup.
      jitdump::InlineInfo decoded;
      if (!jitdump::DecodeInline(info.record, &decoded)) __builtin_trap();  // the parser checked it
      index.AddInlineRecord(info.index, info.record);
      index.Find(info.addr, info.t_ns);
      index.Find(info.addr + 1, info.t_ns);
    }
    // Method names: every Method* of every record, at its time and before.
    JitMethodTable methods;
    for (const auto& block : side.methods) methods.Add(block);
    for (const auto& block : side.methods) {
      for (uint32_t i = 0; i < block.count && i < 64; ++i) {
        methods.Find(block.method(i), block.t_ns);
        methods.Find(block.method(i), block.t_ns > 0 ? block.t_ns - 1 : 0);
      }
    }
  }
  return 0;
}
