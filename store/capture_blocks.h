// The compact encoding of frames and call trees in a capture (schema 2 on): rows
// of the frame_blocks and tree_blocks tables hold zlib-compressed blocks of
// varint columns. Encoding and decoding only; which rows exist and what they
// mean is in store/capture_writer.cpp, capture_reader.cpp and
// docs/capture-format.md ("Blocks").
//
// A block comes from a capture, which is outside input: every decoder here is
// bounded by the size of its input (no count read from the block can make it
// allocate more than a small multiple of the block's bytes), checks every id
// against the limits it is given and rejects trailing bytes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "model/profile.h"

namespace arcprof::store {

// A block is closed once its columns reach this many bytes, so a block (raw
// and compressed) stays far below the reader's 1 MiB limit on one value.
inline constexpr size_t kBlockTargetBytes = 256 * 1024;
// The largest inflated block a reader accepts.
inline constexpr size_t kMaxBlockRawBytes = 1 << 20;
// Tree blocks of the context layout (schema 4) are larger: frames seen in a
// block are coded by rank in the rest of it, so fewer blocks mean fewer new
// frames. The writer's running size is an upper bound of the block's bytes,
// so a block stays below kMaxBlockRawBytes, and its compressed form below the
// reader's 1 MiB limit on one SQLite value.
inline constexpr size_t kContextTreeBlockTargetBytes = 768 * 1024;
// The most value types a capture may declare (value i of each node).
inline constexpr size_t kMaxValueTypes = 16;
// The longest symbol a frame may hold (same bound as schema 1).
inline constexpr size_t kMaxBlockSymbolBytes = 64 * 1024;

// ------------------------------------------------------------ compression

// zlib (deflate, level 6: zlib's default) of `raw`. Level 9 cost a
// continuous daemon ~40% more CPU per window write for 0.8% fewer bytes
// (docs/performance.md, "Capture size"). `cuts` are the offsets
// where the block's columns end: the stream ends a deflate block there
// (Z_BLOCK), so each column gets Huffman codes of its own (varint columns
// of ranks, addresses and text have very different byte statistics) while
// the stream stays one ordinary zlib stream (Inflate reads both).
// `numbers`: the block is varint columns only (tree blocks): zlib's
// Z_FILTERED strategy (Huffman coding over short matches) makes a g++
// capture's tree blocks 2.4% smaller at the same CPU; frame blocks (mostly
// symbol text) are smaller with the default strategy.
std::string Deflate(std::string_view raw, const std::vector<size_t>& cuts = {}, bool numbers = false);
// Inflates `data`, which must give exactly `raw_bytes` bytes (at most
// kMaxBlockRawBytes). Errors say what is wrong in a few words.
Result<std::string> Inflate(std::string_view data, uint64_t raw_bytes);

// ------------------------------------------------------------ frames

// One frame as a block holds it: the file's module id and the frame's content
// (FrameRecord::module is not encoded).
struct BlockFrame {
  uint32_t module = 0;
  const model::FrameRecord* frame = nullptr;
};

// How a frame block holds its symbols (docs/capture-format.md, "Blocks").
enum class FrameLayout {
  // Schemas 2 to 4: a column of symbol lengths, then the symbols back to back.
  kLengths,
  // Schema 5: each symbol followed by a NUL byte (no length column). A NUL
  // inside a symbol is written as the four characters \x00, which is what a
  // reader's escaping of control characters shows for it anyway.
  kNulEnded,
};

// Encodes frames (in the order given: their file ids) into raw blocks.
// When `cuts` is given, it receives per block the offsets where its columns
// end (for Deflate).
std::vector<std::string> EncodeFrameBlocks(const std::vector<BlockFrame>& frames,
                                           FrameLayout layout = FrameLayout::kNulEnded,
                                           std::vector<std::vector<size_t>>* cuts = nullptr);

// Decodes one raw frame block, appending its frames to `out` with module ids
// in `modules` (checked < module_count); FrameRecord::module is left 0 (the caller maps the file module id).
Result<void> DecodeFrameBlock(std::string_view raw, size_t module_count,
                              std::vector<std::pair<uint32_t, model::FrameRecord>>& out,
                              FrameLayout layout = FrameLayout::kNulEnded);

// ------------------------------------------------------------ call trees

// One call tree to encode: node 0 is the root (the thread itself), every other
// node's parent has a smaller index. values holds value_count values per node,
// node-major (values[i * value_count + j] is value j of node i).
struct FlatTree {
  uint32_t thread = 0;
  std::vector<uint32_t> parent;  // parent[0] is ignored
  std::vector<uint32_t> frame;   // frame[0] is ignored
  std::vector<uint64_t> n;
  std::vector<uint64_t> values;
};

// How the nodes of a tree block are coded (docs/capture-format.md, "Blocks").
enum class TreeLayout {
  // Schemas 2 and 3: a column per field, each node's pops and file frame id.
  kColumns,
  // Schema 4: pops as runs of zeros; each frame as its rank among the frames
  // seen before under the same parent frame in the block (new ones listed
  // apart); n and values of leaf-like nodes apart from the others'.
  kContext,
  // Schema 5: kContext, with every value type but the first (base) coded
  // sparsely: the nodes that have a value, as gaps, and their values.
  // Off-CPU time is on a few hundred of a compile's 150,000 nodes.
  kContextSparse,
};

// Encodes trees (each in depth-first preorder) into raw blocks. A tree larger
// than a block continues in a record of the next block. When `cuts` is given,
// it receives per block the offsets where its columns end (for Deflate).
std::vector<std::string> EncodeTreeBlocks(const std::vector<FlatTree>& trees, size_t value_count,
                                          TreeLayout layout = TreeLayout::kContextSparse,
                                          std::vector<std::vector<size_t>>* cuts = nullptr);

// One record of a tree block: consecutive nodes of one thread's tree in
// depth-first preorder. When `continues` is false the record starts a tree and
// its first node is the root (no pops or frame); otherwise it continues the
// tree of the record before it.
struct TreeRecord {
  uint32_t thread = 0;
  bool continues = false;
  std::vector<uint32_t> pops;    // per non-root node: levels to climb from the previous node
  std::vector<uint32_t> frames;  // per non-root node: file frame id (< frame_count)
  std::vector<uint64_t> n;       // per node
  std::vector<uint64_t> values;  // per node, value_count each, node-major
};

// Decodes one raw tree block. Threads and frames are checked against the
// counts given; pops are checked by whoever rebuilds the tree (it holds the path).
Result<std::vector<TreeRecord>> DecodeTreeBlock(std::string_view raw, size_t value_count,
                                                size_t thread_count, size_t frame_count,
                                                TreeLayout layout = TreeLayout::kContextSparse);

// ------------------------------------------------------------ row blocks

// Table rows of one shape as a block (schema 3: ptt_thread_blocks): every
// column holds only integers (unsigned 64-bit) or only texts.
struct RowBlock {
  std::string kinds;               // per column: 'i' integer or 't' text
  size_t rows = 0;
  std::vector<uint64_t> ints;      // row-major, one per integer column of each row
  std::vector<std::string> texts;  // row-major, one per text column of each row
};

// Encodes `rows` (kinds of 'i' and 't' only) into raw blocks of whole rows.
std::vector<std::string> EncodeRowBlocks(const RowBlock& rows);

// Decodes one raw row block whose columns are `kinds`; every text is at most
// max_text_bytes long.
Result<RowBlock> DecodeRowBlock(std::string_view raw, std::string_view kinds, size_t max_text_bytes);

}  // namespace arcprof::store
