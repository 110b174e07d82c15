#include "store/capture_blocks.h"

#include <zlib.h>

#include <algorithm>
#include <utility>

namespace arcprof::store {
using namespace arcprof::model;
namespace {

// ------------------------------------------------------------ varints

// LEB128: 7 bits per byte, low group first, high bit set on all but the last.
void PutVarint(std::string& out, uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
}

// Signed differences as small unsigned numbers: 0, -1, 1, -2, ... -> 0, 1, 2, 3, ...
uint64_t ZigZag(uint64_t difference) {
  const auto v = static_cast<int64_t>(difference);
  return (static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63);
}
uint64_t UnZigZag(uint64_t z) { return (z >> 1) ^ (~(z & 1) + 1); }

class ByteReader {
 public:
  explicit ByteReader(std::string_view data) : data_(data) {}

  // False at the end of the data or on a varint longer than 64 bits.
  bool Varint(uint64_t& out) {
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (pos_ >= data_.size()) return false;
      const auto byte = static_cast<uint8_t>(data_[pos_++]);
      if (shift == 63 && byte > 1) return false;  // bits beyond 64
      v |= static_cast<uint64_t>(byte & 0x7f) << shift;
      if (!(byte & 0x80)) {
        out = v;
        return true;
      }
    }
    return false;
  }
  bool Varint32(uint32_t& out) {
    uint64_t v = 0;
    if (!Varint(v) || v > UINT32_MAX) return false;
    out = static_cast<uint32_t>(v);
    return true;
  }
  bool Bytes(size_t size, std::string_view& out) {
    if (size > remaining()) return false;
    out = data_.substr(pos_, size);
    pos_ += size;
    return true;
  }
  size_t remaining() const { return data_.size() - pos_; }

 private:
  std::string_view data_;
  size_t pos_ = 0;
};

Error Bad(const std::string& what) { return MakeError(what, ErrorKind::kCapture); }

// Frame flags: kind in bits 0-2, reason in bits 3-6, inlined in bit 7.
uint64_t FrameFlags(const FrameRecord& f) {
  return static_cast<uint64_t>(f.kind) | static_cast<uint64_t>(f.reason) << 3 |
         static_cast<uint64_t>(f.inlined ? 1 : 0) << 7;
}

}  // namespace

// ------------------------------------------------------------ compression

std::string Deflate(std::string_view raw) {
  uLongf size = compressBound(static_cast<uLong>(raw.size()));
  std::string out(size, '\0');
  if (compress2(reinterpret_cast<Bytef*>(out.data()), &size, reinterpret_cast<const Bytef*>(raw.data()),
                static_cast<uLong>(raw.size()), 6) != Z_OK) {
    return {};  // only on out of memory; the reader then rejects the block
  }
  out.resize(size);
  return out;
}

Result<std::string> Inflate(std::string_view data, uint64_t raw_bytes) {
  if (raw_bytes > kMaxBlockRawBytes) {
    return Bad("a block of " + std::to_string(raw_bytes) + " bytes (at most " +
               std::to_string(kMaxBlockRawBytes) + ")");
  }
  std::string out(raw_bytes, '\0');
  uLongf size = static_cast<uLongf>(raw_bytes);
  uLong source = static_cast<uLong>(data.size());
  // uncompress2 stops when the output is full: a stream that would inflate to
  // more than raw_bytes fails here (Z_BUF_ERROR) instead of growing.
  const int rc = uncompress2(reinterpret_cast<Bytef*>(out.data()), &size,
                             reinterpret_cast<const Bytef*>(data.data()), &source);
  if (rc != Z_OK || size != raw_bytes || source != data.size()) {
    return Bad("a block that does not inflate to its stated size");
  }
  return out;
}

// ------------------------------------------------------------ frames

// Block layout: count, then columns of count entries each: module id, flags,
// address (zig-zag difference from the previous frame's), symbol length; then
// the symbols' bytes, back to back.
std::vector<std::string> EncodeFrameBlocks(const std::vector<BlockFrame>& frames) {
  std::vector<std::string> blocks;
  size_t begin = 0;
  while (begin < frames.size()) {
    std::string module, flags, address, length, symbols;
    size_t end = begin;
    uint64_t previous = 0;
    while (end < frames.size() &&
           (end == begin ||
            module.size() + flags.size() + address.size() + length.size() + symbols.size() <
                kBlockTargetBytes)) {
      const FrameRecord& f = *frames[end].frame;
      PutVarint(module, frames[end].module);
      PutVarint(flags, FrameFlags(f));
      PutVarint(address, ZigZag(f.address - previous));
      previous = f.address;
      PutVarint(length, f.symbol.size());
      symbols += f.symbol;
      ++end;
    }
    std::string raw;
    PutVarint(raw, end - begin);
    raw += module;
    raw += flags;
    raw += address;
    raw += length;
    raw += symbols;
    blocks.push_back(std::move(raw));
    begin = end;
  }
  return blocks;
}

Result<void> DecodeFrameBlock(std::string_view raw, size_t module_count,
                              std::vector<std::pair<uint32_t, FrameRecord>>& out) {
  ByteReader in(raw);
  uint64_t count = 0;
  // Each frame takes at least four bytes (one per column).
  if (!in.Varint(count) || count == 0 || count > in.remaining() / 4) {
    return Bad("a frame block with an impossible frame count");
  }
  const size_t first = out.size();
  out.resize(first + count);
  for (size_t i = 0; i < count; ++i) {
    uint32_t module = 0;
    if (!in.Varint32(module) || module >= module_count) {
      return Bad("a frame block naming module " + std::to_string(module) + ", which does not exist");
    }
    out[first + i].first = module;
  }
  for (size_t i = 0; i < count; ++i) {
    uint64_t flags = 0;
    if (!in.Varint(flags)) return Bad("a truncated frame block");
    const uint64_t kind = flags & 7, reason = flags >> 3 & 15;
    if (flags >> 8 || kind > static_cast<uint64_t>(FrameKind::kUnknown) ||
        reason >= static_cast<uint64_t>(kUnknownReasonCount)) {
      return Bad("a frame with an invalid kind, reason or inlined flag");
    }
    FrameRecord& f = out[first + i].second;
    f.kind = static_cast<FrameKind>(kind);
    f.reason = static_cast<UnknownReason>(reason);
    f.inlined = (flags >> 7) != 0;
  }
  uint64_t previous = 0;
  for (size_t i = 0; i < count; ++i) {
    uint64_t delta = 0;
    if (!in.Varint(delta)) return Bad("a truncated frame block");
    previous += UnZigZag(delta);  // wraps like the writer's subtraction
    out[first + i].second.address = previous;
  }
  std::vector<uint32_t> lengths(count);
  uint64_t total = 0;
  for (size_t i = 0; i < count; ++i) {
    if (!in.Varint32(lengths[i]) || lengths[i] > kMaxBlockSymbolBytes) {
      return Bad("a frame with a symbol longer than " + std::to_string(kMaxBlockSymbolBytes) + " bytes");
    }
    total += lengths[i];
  }
  if (total != in.remaining()) return Bad("a frame block whose symbols do not fill it");
  for (size_t i = 0; i < count; ++i) {
    std::string_view symbol;
    if (!in.Bytes(lengths[i], symbol)) return Bad("a truncated frame block");
    out[first + i].second.symbol.assign(symbol);
  }
  return {};
}

// ------------------------------------------------------------ call trees

namespace {

// Columns of one block under construction.
class TreeBlockBuilder {
 public:
  explicit TreeBlockBuilder(size_t value_count) : values_(value_count) {}

  void StartRecord(uint32_t thread, bool continues) {
    CloseRecord();
    thread_ = thread;
    continues_ = continues;
    open_ = true;
  }
  void Root(uint64_t n, const uint64_t* values) {
    ++nodes_;
    PutValues(n, values);
  }
  void Node(uint64_t pops, uint32_t frame, uint64_t n, const uint64_t* values) {
    ++nodes_;
    PutVarint(pops_, pops);
    PutVarint(frames_, frame);
    PutValues(n, values);
  }
  size_t size() const {
    size_t total = headers_.size() + pops_.size() + frames_.size() + n_.size();
    for (const std::string& v : values_) total += v.size();
    return total;
  }
  bool empty() const { return records_ == 0 && !open_; }
  std::string Finish() {
    CloseRecord();
    std::string raw;
    PutVarint(raw, records_);
    raw += headers_;
    raw += pops_;
    raw += frames_;
    raw += n_;
    for (const std::string& v : values_) raw += v;
    return raw;
  }

 private:
  void PutValues(uint64_t n, const uint64_t* values) {
    PutVarint(n_, n);
    // Value j as its difference from n: a count equal to n (CPU samples) is
    // one zero byte, other values cost what they would anyway.
    for (size_t j = 0; j < values_.size(); ++j) PutVarint(values_[j], ZigZag(values[j] - n));
  }
  void CloseRecord() {
    if (!open_) return;
    PutVarint(headers_, thread_);
    PutVarint(headers_, continues_ ? 1 : 0);
    PutVarint(headers_, nodes_);
    ++records_;
    open_ = false;
    nodes_ = 0;
  }

  std::string headers_, pops_, frames_, n_;
  std::vector<std::string> values_;
  uint64_t records_ = 0;
  bool open_ = false;
  uint32_t thread_ = 0;
  bool continues_ = false;
  uint64_t nodes_ = 0;
};

}  // namespace

// Block layout: record count; per record its thread, flags (bit 0: continues
// the previous record's tree) and node count; then the columns over all
// records' nodes in order: pops and frame ids of non-root nodes, n of every
// node, then for each value type j the zig-zag difference value j - n.
std::vector<std::string> EncodeTreeBlocks(const std::vector<FlatTree>& trees, size_t value_count) {
  std::vector<std::string> blocks;
  TreeBlockBuilder block(value_count);
  const std::vector<uint64_t> zeros(value_count, 0);
  std::vector<uint32_t> child_begin, children, stack;
  for (const FlatTree& tree : trees) {
    const size_t size = tree.n.size();
    if (size == 0) continue;
    auto values_of = [&](size_t i) {
      return value_count == 0 ? zeros.data() : tree.values.data() + i * value_count;
    };
    // Children of each node in index order (counting sort by parent).
    child_begin.assign(size + 1, 0);
    for (size_t i = 1; i < size; ++i) ++child_begin[tree.parent[i] + 1];
    for (size_t i = 0; i < size; ++i) child_begin[i + 1] += child_begin[i];
    children.assign(size > 0 ? size - 1 : 0, 0);
    {
      std::vector<uint32_t> fill(child_begin.begin(), child_begin.end() - 1);
      for (size_t i = 1; i < size; ++i) children[fill[tree.parent[i]]++] = static_cast<uint32_t>(i);
    }
    block.StartRecord(tree.thread, false);
    block.Root(tree.n[0], values_of(0));
    // Depth-first preorder; a node's pops is how many levels up from the
    // previous node its parent is (0: a child of the previous node).
    struct Item {
      uint32_t node, depth;
    };
    std::vector<Item> todo;
    for (uint32_t c = child_begin[1]; c-- > child_begin[0];) todo.push_back({children[c], 1});
    uint32_t previous_depth = 0;
    while (!todo.empty()) {
      const Item item = todo.back();
      todo.pop_back();
      if (block.size() >= kBlockTargetBytes) {
        blocks.push_back(block.Finish());
        block = TreeBlockBuilder(value_count);
        block.StartRecord(tree.thread, true);
      }
      block.Node(previous_depth + 1 - item.depth, tree.frame[item.node], tree.n[item.node],
                 values_of(item.node));
      previous_depth = item.depth;
      for (uint32_t c = child_begin[item.node + 1]; c-- > child_begin[item.node];) {
        todo.push_back({children[c], item.depth + 1});
      }
    }
  }
  if (!block.empty()) blocks.push_back(block.Finish());
  return blocks;
}

Result<std::vector<TreeRecord>> DecodeTreeBlock(std::string_view raw, size_t value_count,
                                                size_t thread_count, size_t frame_count) {
  if (value_count > kMaxValueTypes) return Bad("too many value types");
  ByteReader in(raw);
  uint64_t count = 0;
  // Each record takes at least four bytes (three header fields, one n).
  if (!in.Varint(count) || count == 0 || count > in.remaining() / 4) {
    return Bad("a tree block with an impossible record count");
  }
  std::vector<TreeRecord> records(count);
  uint64_t nodes = 0, inner = 0;
  for (TreeRecord& r : records) {
    uint64_t flags = 0, size = 0;
    if (!in.Varint32(r.thread) || !in.Varint(flags) || !in.Varint(size)) {
      return Bad("a truncated tree block");
    }
    if (r.thread >= thread_count) {
      return Bad("a call tree of thread " + std::to_string(r.thread) + ", which does not exist");
    }
    if (flags > 1 || size == 0) return Bad("a tree record with invalid flags or no nodes");
    r.continues = flags == 1;
    // Every node takes at least one byte of n: more nodes than bytes is a lie.
    if (size > in.remaining()) return Bad("a tree block with an impossible node count");
    r.n.resize(size);
    r.values.resize(size * value_count);
    const uint64_t non_root = r.continues ? size : size - 1;
    r.pops.resize(non_root);
    r.frames.resize(non_root);
    nodes += size;
    inner += non_root;
    if (nodes > in.remaining()) return Bad("a tree block with an impossible node count");
  }
  for (TreeRecord& r : records) {
    for (uint32_t& pops : r.pops) {
      if (!in.Varint32(pops)) return Bad("a truncated tree block");
    }
  }
  for (TreeRecord& r : records) {
    for (uint32_t& frame : r.frames) {
      if (!in.Varint32(frame) || frame >= frame_count) {
        return Bad("a call tree node with frame " + std::to_string(frame) + ", which does not exist");
      }
    }
  }
  for (TreeRecord& r : records) {
    for (uint64_t& n : r.n) {
      if (!in.Varint(n)) return Bad("a truncated tree block");
    }
  }
  for (size_t j = 0; j < value_count; ++j) {
    for (TreeRecord& r : records) {
      for (size_t i = 0; i < r.n.size(); ++i) {
        uint64_t z = 0;
        if (!in.Varint(z)) return Bad("a truncated tree block");
        r.values[i * value_count + j] = r.n[i] + UnZigZag(z);
      }
    }
  }
  if (in.remaining() != 0) return Bad("a tree block with trailing bytes");
  (void)inner;
  return records;
}

// ------------------------------------------------------------ row blocks

// Block layout: row count, then column after column: an integer column as the
// zig-zag difference of each row's value from the previous row's (the first
// from 0), a text column as the rows' lengths and then their bytes.
std::vector<std::string> EncodeRowBlocks(const RowBlock& rows) {
  size_t int_columns = 0, text_columns = 0;
  for (char k : rows.kinds) (k == 't' ? text_columns : int_columns) += 1;
  std::vector<std::string> blocks;
  size_t begin = 0;
  while (begin < rows.rows) {
    // Whole rows until the block's estimated size reaches the target.
    size_t end = begin, estimate = 0;
    while (end < rows.rows && (end == begin || estimate < kBlockTargetBytes)) {
      estimate += int_columns * 4;
      for (size_t t = 0; t < text_columns; ++t) estimate += rows.texts[end * text_columns + t].size() + 1;
      ++end;
    }
    std::string raw;
    PutVarint(raw, end - begin);
    size_t int_column = 0, text_column = 0;
    for (char k : rows.kinds) {
      if (k == 't') {
        for (size_t r = begin; r < end; ++r) PutVarint(raw, rows.texts[r * text_columns + text_column].size());
        for (size_t r = begin; r < end; ++r) raw += rows.texts[r * text_columns + text_column];
        ++text_column;
      } else {
        uint64_t previous = 0;
        for (size_t r = begin; r < end; ++r) {
          const uint64_t v = rows.ints[r * int_columns + int_column];
          PutVarint(raw, ZigZag(v - previous));
          previous = v;
        }
        ++int_column;
      }
    }
    blocks.push_back(std::move(raw));
    begin = end;
  }
  return blocks;
}

Result<RowBlock> DecodeRowBlock(std::string_view raw, std::string_view kinds, size_t max_text_bytes) {
  RowBlock out;
  out.kinds.assign(kinds);
  size_t int_columns = 0, text_columns = 0;
  for (char k : kinds) {
    if (k != 'i' && k != 't') return Bad("a row block of an unknown column kind");
    (k == 't' ? text_columns : int_columns) += 1;
  }
  if (kinds.empty()) return Bad("a row block without columns");
  ByteReader in(raw);
  uint64_t count = 0;
  // Every value takes at least one byte (a varint, or a text's length).
  if (!in.Varint(count) || count == 0 || count > in.remaining() / kinds.size()) {
    return Bad("a row block with an impossible row count");
  }
  out.rows = count;
  out.ints.resize(count * int_columns);
  out.texts.resize(count * text_columns);
  size_t int_column = 0, text_column = 0;
  std::vector<uint32_t> lengths(count);
  for (char k : kinds) {
    if (k == 't') {
      uint64_t total = 0;
      for (size_t r = 0; r < count; ++r) {
        if (!in.Varint32(lengths[r]) || lengths[r] > max_text_bytes) {
          return Bad("a row with a text longer than " + std::to_string(max_text_bytes) + " bytes");
        }
        total += lengths[r];
      }
      if (total > in.remaining()) return Bad("a truncated row block");
      for (size_t r = 0; r < count; ++r) {
        std::string_view text;
        if (!in.Bytes(lengths[r], text)) return Bad("a truncated row block");
        out.texts[r * text_columns + text_column].assign(text);
      }
      ++text_column;
    } else {
      uint64_t previous = 0;
      for (size_t r = 0; r < count; ++r) {
        uint64_t z = 0;
        if (!in.Varint(z)) return Bad("a truncated row block");
        previous += UnZigZag(z);  // wraps like the writer's subtraction
        out.ints[r * int_columns + int_column] = previous;
      }
      ++int_column;
    }
  }
  if (in.remaining() != 0) return Bad("a row block with trailing bytes");
  return out;
}

}  // namespace arcprof::store
