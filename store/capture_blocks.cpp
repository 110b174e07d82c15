#include "store/capture_blocks.h"

#include <zlib.h>

#include <algorithm>
#include <unordered_map>
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
    if (pos_ < data_.size() && static_cast<uint8_t>(data_[pos_]) < 0x80) {  // most are one byte
      out = static_cast<uint8_t>(data_[pos_++]);
      return true;
    }
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

// zlib level 5: on a churning machine's window (docs/performance.md,
// "Capture size") 0.55x level 6's time for 2% more bytes; level 4 was 0.43x
// for 5.6% more, level 1 0.32x for 20% more.
constexpr int kDeflateLevel = 5;

std::string Deflate(std::string_view raw, const std::vector<size_t>& cuts, bool numbers) {
  z_stream z{};
  if (deflateInit2(&z, kDeflateLevel, Z_DEFLATED, 15, 8, numbers ? Z_FILTERED : Z_DEFAULT_STRATEGY) != Z_OK) return {};  // only on out of memory; the reader then rejects the block
  std::string out(deflateBound(&z, static_cast<uLong>(raw.size())) + 16 * (cuts.size() + 1), '\0');
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  size_t at = 0;
  bool ok = true;
  auto feed = [&](size_t end, int flush) {
    z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(raw.data() + at));
    z.avail_in = static_cast<uInt>(end - at);
    const int rc = deflate(&z, flush);
    ok = ok && (flush == Z_FINISH ? rc == Z_STREAM_END : rc == Z_OK || rc == Z_BUF_ERROR) && z.avail_in == 0;
    at = end;
  };
  for (size_t cut : cuts) {
    if (cut > at && cut < raw.size()) feed(cut, Z_BLOCK);
  }
  feed(raw.size(), Z_FINISH);
  out.resize(out.size() - z.avail_out);
  deflateEnd(&z);
  return ok ? out : std::string();
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
std::vector<std::string> EncodeFrameBlocks(const std::vector<BlockFrame>& frames, FrameLayout layout,
                                           std::vector<std::vector<size_t>>* cuts) {
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
      if (layout == FrameLayout::kLengths) {
        PutVarint(length, f.symbol.size());
        symbols += f.symbol;
      } else {
        for (char c : f.symbol) {
          if (c == '\0') {
            symbols += "\\x00";
          } else {
            symbols += c;
          }
        }
        symbols += '\0';
      }
      ++end;
    }
    std::string raw;
    PutVarint(raw, end - begin);
    std::vector<size_t> ends;
    for (const std::string* column : {&module, &flags, &address, &length, &symbols}) {
      if (column->empty()) continue;  // no length column when NUL-ended
      raw += *column;
      ends.push_back(raw.size());
    }
    if (cuts) cuts->push_back(std::move(ends));
    blocks.push_back(std::move(raw));
    begin = end;
  }
  return blocks;
}

Result<void> DecodeFrameBlock(std::string_view raw, size_t module_count,
                              std::vector<std::pair<uint32_t, FrameRecord>>& out, FrameLayout layout) {
  ByteReader in(raw);
  uint64_t count = 0;
  // Each frame takes at least four bytes (one per column, or its NUL).
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
    if (flags >> 8 || kind >= static_cast<uint64_t>(kFrameKindCount) ||
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
  if (layout == FrameLayout::kNulEnded) {
    std::string_view rest;
    (void)in.Bytes(in.remaining(), rest);
    for (size_t i = 0; i < count; ++i) {
      const size_t end = rest.find('\0');
      if (end == std::string_view::npos) return Bad("a frame block whose symbols do not fill it");
      if (end > kMaxBlockSymbolBytes) {
        return Bad("a frame with a symbol longer than " + std::to_string(kMaxBlockSymbolBytes) + " bytes");
      }
      out[first + i].second.symbol.assign(rest.substr(0, end));
      rest.remove_prefix(end + 1);
    }
    if (!rest.empty()) return Bad("a frame block with trailing bytes");
    return {};
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

// The context of a node in kContext blocks: its parent's frame, or this
// (the thread's root, or a parent in an earlier block).
constexpr uint32_t kRootContext = 0xffffffffu;

// Walks a record's nodes the way both coder and decoder see them: `path`
// holds the frames from the record's first known ancestor to the previous
// node. Returns the context of a node `pops` levels above the previous one
// and makes the node (with `frame`) the previous one.
class ContextPath {
 public:
  explicit ContextPath(bool continues) {
    if (!continues) path_.push_back(kRootContext);
  }
  uint32_t Context(uint32_t pops) {
    if (pops < path_.size()) {
      path_.resize(path_.size() - pops);
      return path_.back();
    }
    path_.clear();  // above what this block holds
    return kRootContext;
  }
  void Push(uint32_t frame) { path_.push_back(frame); }

 private:
  std::vector<uint32_t> path_;
};

uint32_t ContextBase(uint32_t context) { return context == kRootContext ? 0 : context; }

size_t VarintSize(uint64_t v) {
  size_t n = 1;
  while (v >= 0x80) {
    v >>= 7;
    ++n;
  }
  return n;
}

// Leaf-like: the last node of its record, or a node the next one is not a
// child of (pops >= 1). Nodes in record order, the root first unless continues.
std::vector<bool> LeafLike(bool continues, const std::vector<uint32_t>& pops, size_t nodes) {
  std::vector<bool> out(nodes, false);
  const size_t first = continues ? 0 : 1;  // index of the node pops[0] belongs to
  for (size_t i = 0; i < nodes; ++i) {
    const size_t next = i + 1;
    out[i] = next >= nodes || (next >= first && pops[next - first] >= 1);
  }
  return out;
}

// One record of a block under construction.
struct OpenRecord {
  uint32_t thread = 0;
  bool continues = false;
  std::vector<uint32_t> pops, frames;  // non-root nodes
  std::vector<uint64_t> n, values;     // every node
};

// The nodes of one block under construction, written in either layout.
class TreeBlockBuilder {
 public:
  TreeBlockBuilder(size_t value_count, TreeLayout layout)
      : value_count_(value_count), layout_(layout), size_(kMaxVarintBytes * (1 + value_count)) {}

  void StartRecord(uint32_t thread, bool continues) {
    records_.push_back(OpenRecord{thread, continues, {}, {}, {}, {}});
    path_ = ContextPath(continues);
    size_ += 3 * kMaxVarintBytes;
  }
  void Root(uint64_t n, const uint64_t* values) { PutValues(n, values); }
  void Node(uint32_t pops, uint32_t frame, uint64_t n, const uint64_t* values) {
    OpenRecord& r = records_.back();
    r.pops.push_back(pops);
    r.frames.push_back(frame);
    if (layout_ == TreeLayout::kColumns) {
      size_ += VarintSize(pops) + VarintSize(frame);
    } else {
      // A zero pops costs at most a byte of its run's length, another pops
      // its own bytes and the run before it (one byte when empty).
      size_ += pops == 0 ? 1 : 1 + VarintSize(pops - 1);
      // The rank exactly as FinishContext codes it.
      const uint32_t context = path_.Context(pops);
      auto [it, added] = rank_of_.try_emplace(uint64_t{context} << 32 | frame, 0);
      if (added) {
        it->second = ++seen_[context];
        size_ += 1 + VarintSize(ZigZag(uint64_t{frame} - ContextBase(context)));
      } else {
        size_ += VarintSize(it->second);
      }
      path_.Push(frame);
    }
    PutValues(n, values);
  }
  // At least the bytes Finish will give: what closes a block.
  size_t size() const { return size_; }
  bool empty() const { return records_.empty(); }
  // `cuts` receives the offsets where the block's columns end (for Deflate).
  std::string Finish(std::vector<size_t>& cuts) const {
    cuts.clear();
    return layout_ == TreeLayout::kColumns ? FinishColumns(cuts) : FinishContext(cuts);
  }

 private:
  void PutValues(uint64_t n, const uint64_t* values) {
    OpenRecord& r = records_.back();
    r.n.push_back(n);
    size_ += VarintSize(n);
    for (size_t j = 0; j < value_count_; ++j) {
      r.values.push_back(values[j]);
      if (j > 0 && layout_ == TreeLayout::kContextSparse) {
        // A gap (below 2^21 nodes in a block: 3 bytes) and the value.
        size_ += values[j] == 0 ? 0 : 3 + VarintSize(values[j]);
      } else {
        size_ += VarintSize(ZigZag(values[j] - n));
      }
    }
  }
  void Headers(std::string& raw) const {
    PutVarint(raw, records_.size());
    for (const OpenRecord& r : records_) {
      PutVarint(raw, r.thread);
      PutVarint(raw, r.continues ? 1 : 0);
      PutVarint(raw, r.n.size());
    }
  }
  // Value j of a node as its difference from n: a count equal to n (CPU
  // samples) is one zero byte, other values cost what they would anyway.
  uint64_t Value(const OpenRecord& r, size_t i, size_t j) const {
    return ZigZag(r.values[i * value_count_ + j] - r.n[i]);
  }
  std::string FinishColumns(std::vector<size_t>& cuts) const {
    std::string raw;
    Headers(raw);
    cuts.push_back(raw.size());
    for (const OpenRecord& r : records_) {
      for (uint32_t p : r.pops) PutVarint(raw, p);
    }
    cuts.push_back(raw.size());
    for (const OpenRecord& r : records_) {
      for (uint32_t f : r.frames) PutVarint(raw, f);
    }
    cuts.push_back(raw.size());
    for (const OpenRecord& r : records_) {
      for (uint64_t n : r.n) PutVarint(raw, n);
    }
    cuts.push_back(raw.size());
    for (size_t j = 0; j < value_count_; ++j) {
      for (const OpenRecord& r : records_) {
        for (size_t i = 0; i < r.n.size(); ++i) PutVarint(raw, Value(r, i, j));
      }
      cuts.push_back(raw.size());
    }
    return raw;
  }
  std::string FinishContext(std::vector<size_t>& cuts) const {
    std::string raw;
    Headers(raw);
    cuts.push_back(raw.size());
    // pops as runs: the zeros before each non-zero pops, then that pops - 1.
    uint64_t zeros = 0;
    for (const OpenRecord& r : records_) {
      for (uint32_t p : r.pops) {
        if (p == 0) {
          ++zeros;
          continue;
        }
        PutVarint(raw, zeros);
        PutVarint(raw, p - 1);
        zeros = 0;
      }
    }
    if (zeros > 0) PutVarint(raw, zeros);
    cuts.push_back(raw.size());
    // Frames as ranks among the frames seen before under the same context
    // (the parent's frame) in this block, 0 for a new one; new ones follow.
    std::string ranks, fresh;
    std::unordered_map<uint64_t, uint32_t> rank_of;  // context << 32 | frame -> rank
    std::unordered_map<uint32_t, uint32_t> seen;     // context -> frames seen under it
    for (const OpenRecord& r : records_) {
      ContextPath path(r.continues);
      for (size_t k = 0; k < r.pops.size(); ++k) {
        const uint32_t context = path.Context(r.pops[k]);
        const uint32_t frame = r.frames[k];
        auto [it, added] = rank_of.try_emplace(uint64_t{context} << 32 | frame, 0);
        if (added) {
          it->second = ++seen[context];
          PutVarint(ranks, 0);
          PutVarint(fresh, ZigZag(uint64_t{frame} - ContextBase(context)));
        } else {
          PutVarint(ranks, it->second);
        }
        path.Push(frame);
      }
    }
    raw += ranks;
    cuts.push_back(raw.size());
    raw += fresh;
    cuts.push_back(raw.size());
    // n and then each value, first of the leaf-like nodes, then of the others.
    std::vector<std::vector<bool>> leafy;
    for (const OpenRecord& r : records_) leafy.push_back(LeafLike(r.continues, r.pops, r.n.size()));
    for (bool leaf : {true, false}) {
      for (size_t k = 0; k < records_.size(); ++k) {
        for (size_t i = 0; i < records_[k].n.size(); ++i) {
          if (leafy[k][i] == leaf) PutVarint(raw, records_[k].n[i]);
        }
      }
      cuts.push_back(raw.size());
    }
    for (size_t j = 0; j < value_count_; ++j) {
      if (j > 0 && layout_ == TreeLayout::kContextSparse) {
        // The nodes (in block order) with a value: how many, the gap before
        // each (nodes without a value skipped since the previous one), the values.
        std::string gaps, values;
        uint64_t count = 0, skipped = 0;
        for (const OpenRecord& r : records_) {
          for (size_t i = 0; i < r.n.size(); ++i) {
            const uint64_t v = r.values[i * value_count_ + j];
            if (v == 0) {
              ++skipped;
              continue;
            }
            ++count;
            PutVarint(gaps, skipped);
            PutVarint(values, v);
            skipped = 0;
          }
        }
        PutVarint(raw, count);
        raw += gaps;
        cuts.push_back(raw.size());
        raw += values;
        cuts.push_back(raw.size());
        continue;
      }
      for (bool leaf : {true, false}) {
        for (size_t k = 0; k < records_.size(); ++k) {
          for (size_t i = 0; i < records_[k].n.size(); ++i) {
            if (leafy[k][i] == leaf) PutVarint(raw, Value(records_[k], i, j));
          }
        }
        cuts.push_back(raw.size());
      }
    }
    return raw;
  }

  static constexpr size_t kMaxVarintBytes = 10;
  size_t value_count_;
  TreeLayout layout_;
  std::vector<OpenRecord> records_;
  size_t size_;
  // The context layout's ranks so far (FinishContext computes them again).
  ContextPath path_{false};
  std::unordered_map<uint64_t, uint32_t> rank_of_;  // context << 32 | frame -> rank
  std::unordered_map<uint32_t, uint32_t> seen_;     // context -> frames seen under it
};

}  // namespace

// Block layouts: see capture_blocks.h (TreeLayout) and docs/capture-format.md.
std::vector<std::string> EncodeTreeBlocks(const std::vector<FlatTree>& trees, size_t value_count,
                                          TreeLayout layout, std::vector<std::vector<size_t>>* cuts) {
  std::vector<std::string> blocks;
  TreeBlockBuilder block(value_count, layout);
  std::vector<size_t> block_cuts;
  auto finish = [&] {
    blocks.push_back(block.Finish(block_cuts));
    if (cuts) cuts->push_back(block_cuts);
  };
  const size_t target = layout == TreeLayout::kColumns ? kBlockTargetBytes : kContextTreeBlockTargetBytes;
  const std::vector<uint64_t> zeros(value_count, 0);
  std::vector<uint32_t> child_begin, children;
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
      if (block.size() >= target) {
        finish();
        block = TreeBlockBuilder(value_count, layout);
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
  if (!block.empty()) finish();
  return blocks;
}

Result<std::vector<TreeRecord>> DecodeTreeBlock(std::string_view raw, size_t value_count,
                                                size_t thread_count, size_t frame_count, TreeLayout layout) {
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
    const uint64_t non_root = r.continues ? size : size - 1;
    nodes += size;
    inner += non_root;
    if (nodes > in.remaining()) return Bad("a tree block with an impossible node count");
    r.n.resize(size);
    r.values.resize(size * value_count);
    r.pops.resize(non_root);
    r.frames.resize(non_root);
  }
  if (layout == TreeLayout::kColumns) {
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
    return records;
  }

  // kContext: pops as runs of zeros, each but a last one ending in a pops >= 1.
  {
    size_t k = 0, i = 0;  // record, node within its pops
    uint64_t filled = 0;
    auto put = [&](uint32_t value) {
      while (i >= records[k].pops.size()) {
        ++k;
        i = 0;
      }
      records[k].pops[i++] = value;
      ++filled;
    };
    while (filled < inner) {
      uint64_t zeros = 0;
      if (!in.Varint(zeros)) return Bad("a truncated tree block");
      if (zeros > inner - filled) return Bad("a tree block with more pops than nodes");
      for (uint64_t z = 0; z < zeros; ++z) put(0);
      if (filled == inner) break;
      uint64_t p = 0;
      if (!in.Varint(p) || p >= UINT32_MAX) return Bad("a truncated tree block");
      put(static_cast<uint32_t>(p + 1));
    }
  }
  // Ranks, then the new frames (one per rank 0).
  std::vector<uint32_t> ranks(inner);
  for (uint32_t& rank : ranks) {
    if (!in.Varint32(rank)) return Bad("a truncated tree block");
  }
  {
    // Context -> its list of frames in order of first appearance: a slot per
    // frame id (and one for the root), lists only for contexts that occur.
    // Most contexts have one to three frames: those are held in place, the
    // rest of a longer list in a vector of its own (a heap allocation per
    // context was a tenth of reading a g++ capture's tree block).
    struct List {
      uint32_t size = 0;
      uint32_t first[3] = {0, 0, 0};
      uint32_t more = 0;  // index in `spill` (0: none yet)
    };
    std::vector<uint32_t> slot_of(frame_count + 1, 0);  // 0: no list yet
    std::vector<List> lists(1);
    std::vector<std::vector<uint32_t>> spill(1);
    size_t at = 0;
    for (TreeRecord& r : records) {
      ContextPath path(r.continues);
      for (size_t k = 0; k < r.pops.size(); ++k) {
        const uint32_t context = path.Context(r.pops[k]);
        uint32_t& slot = slot_of[context == kRootContext ? frame_count : context];
        if (slot == 0) {
          slot = static_cast<uint32_t>(lists.size());
          lists.emplace_back();
        }
        List& list = lists[slot];
        const uint32_t rank = ranks[at++];
        uint32_t frame = 0;
        if (rank == 0) {
          uint64_t z = 0;
          if (!in.Varint(z)) return Bad("a truncated tree block");
          const uint64_t id = ContextBase(context) + UnZigZag(z);  // wraps like the writer's subtraction
          if (id >= frame_count) {
            return Bad("a call tree node with frame " + std::to_string(id) + ", which does not exist");
          }
          frame = static_cast<uint32_t>(id);
          if (list.size < 3) {
            list.first[list.size] = frame;
          } else {
            if (list.more == 0) {
              list.more = static_cast<uint32_t>(spill.size());
              spill.emplace_back();
            }
            spill[list.more].push_back(frame);
          }
          ++list.size;
        } else {
          if (rank > list.size) return Bad("a call tree node naming a frame its context has not seen");
          frame = rank <= 3 ? list.first[rank - 1] : spill[list.more][rank - 4];
        }
        r.frames[k] = frame;
        path.Push(frame);
      }
    }
  }
  // Leaf-like as LeafLike() says, once for every node in block order.
  std::vector<uint8_t> leafy(nodes);
  {
    size_t at = 0;
    for (const TreeRecord& r : records) {
      const size_t first = r.continues ? 0 : 1;
      for (size_t i = 0; i < r.n.size(); ++i) {
        const size_t next = i + 1;
        leafy[at++] = next >= r.n.size() || (next >= first && r.pops[next - first] >= 1);
      }
    }
  }
  for (uint8_t leaf : {1, 0}) {
    size_t at = 0;
    for (TreeRecord& r : records) {
      for (size_t i = 0; i < r.n.size(); ++i) {
        if (leafy[at++] == leaf && !in.Varint(r.n[i])) return Bad("a truncated tree block");
      }
    }
  }
  for (size_t j = 0; j < value_count; ++j) {
    if (j > 0 && layout == TreeLayout::kContextSparse) {
      // Values left 0 by resize, but for the nodes listed.
      uint64_t count = 0;
      if (!in.Varint(count) || count > nodes || count > in.remaining() / 2) {
        return Bad("a tree block with an impossible count of values");
      }
      std::vector<std::pair<size_t, size_t>> at(count);  // (record, node)
      size_t k = 0, i = 0;  // the next node in block order
      for (auto& [record, node] : at) {
        uint64_t gap = 0;
        if (!in.Varint(gap)) return Bad("a truncated tree block");
        for (;;) {
          if (k >= records.size()) return Bad("a tree block with values beyond its nodes");
          const size_t left = records[k].n.size() - i;
          if (gap < left) break;
          gap -= left;
          ++k;
          i = 0;
        }
        i += gap;
        record = k;
        node = i++;
      }
      for (const auto& [record, node] : at) {
        uint64_t v = 0;
        if (!in.Varint(v) || v == 0) return Bad("a tree block with a listed value of 0 or truncated");
        records[record].values[node * value_count + j] = v;
      }
      continue;
    }
    for (uint8_t leaf : {1, 0}) {
      size_t at = 0;
      for (TreeRecord& r : records) {
        for (size_t i = 0; i < r.n.size(); ++i) {
          if (leafy[at++] != leaf) continue;
          uint64_t z = 0;
          if (!in.Varint(z)) return Bad("a truncated tree block");
          r.values[i * value_count + j] = r.n[i] + UnZigZag(z);
        }
      }
    }
  }
  if (in.remaining() != 0) return Bad("a tree block with trailing bytes");
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
