#include "symbolize/jitdump.h"

#include <algorithm>
#include <cstring>
#include <optional>

#include "symbolize/jitdump_format.h"

namespace arcprof::jitdump {
namespace {

// Caps from docs/formats.md §1.12: a header larger than this or a record larger
// than 64 MiB is not something a runtime writes.
constexpr uint32_t kMaxHeaderSize = 4096;
constexpr uint32_t kMaxRecordSize = 64u << 20;

class Reader {
 public:
  Reader(std::string_view data, bool swapped) : data_(data), swapped_(swapped) {}
  uint32_t U32(size_t off) const {
    uint32_t v;
    memcpy(&v, data_.data() + off, 4);
    return swapped_ ? __builtin_bswap32(v) : v;
  }
  uint64_t U64(size_t off) const {
    uint64_t v;
    memcpy(&v, data_.data() + off, 8);
    return swapped_ ? __builtin_bswap64(v) : v;
  }

 private:
  std::string_view data_;
  bool swapped_;
};

// The NUL-terminated string at [off, end); false when no NUL lies inside.
bool CString(std::string_view data, size_t off, size_t end, std::string* out, size_t* len_with_nul) {
  if (off >= end) return false;
  const void* nul = memchr(data.data() + off, '\0', end - off);
  if (!nul) return false;
  const size_t len = static_cast<const char*>(nul) - (data.data() + off);
  out->assign(data.data() + off, len);
  *len_with_nul = len + 1;
  return true;
}

ParseProgress Corrupt(size_t consumed, std::string message) {
  ParseProgress p;
  p.consumed = consumed;
  p.corrupt = true;
  p.error = std::move(message);
  return p;
}


// Walks the records of `data`: each starts with {u32 id, u32 total size, u64
// timestamp}. `handle(id, total, t_ns, off, end)` reads one record and returns
// an error to stop with it. A size out of range is corruption; a record whose
// end lies past the data is still being written, and the walk stops before it.
template <class Handle>
ParseProgress ForEachRecord(std::string_view data, const Reader& r, const char* what, Handle&& handle) {
  size_t off = 0;
  while (data.size() - off >= kRecordHeaderSize) {
    const uint32_t id = r.U32(off);
    const uint32_t total = r.U32(off + 4);
    const uint64_t t_ns = r.U64(off + 8);
    if (total < kRecordHeaderSize || total > kMaxRecordSize) {
      return Corrupt(off, std::string(what) + " size " + std::to_string(total) + " at offset " + std::to_string(off));
    }
    if (total > data.size() - off) break;  // still being written
    const size_t end = off + total;
    if (std::optional<ParseProgress> error = handle(id, total, t_ns, off, end)) return *std::move(error);
    off = end;
  }
  ParseProgress p;
  p.consumed = off;
  return p;
}

// Checks the INLINE record `rec` (header included, native byte order) and,
// when out is given, decodes it; the error, or nullptr.
const char* WalkInline(std::string_view rec, InlineInfo* out) {
  const Reader r(rec, false);
  const size_t total = rec.size();
  if (total < kSideInlineFixedSize) return "INLINE too short";
  const uint32_t name_count = r.U32(32);
  const uint32_t pc_count = r.U32(36);
  size_t pos = kSideInlineFixedSize;
  // Each name needs at least its NUL, each entry 8 bytes: the counts
  // cannot exceed the record, which bounds every allocation below.
  if (name_count > total || pc_count > total / 8) return "INLINE counts exceed the record";
  if (out) {
    out->t_ns = r.U64(8);
    out->addr = r.U64(16);
    out->index = r.U64(24);
    out->names.reserve(name_count);
  }
  for (uint32_t i = 0; i < name_count; ++i) {
    const void* nul = pos < total ? memchr(rec.data() + pos, '\0', total - pos) : nullptr;
    if (!nul) return "INLINE name unterminated";
    const size_t len = static_cast<const char*>(nul) - (rec.data() + pos);
    if (out) out->names.emplace_back(rec.substr(pos, len));
    pos += len + 1;
  }
  if (out) out->entries.reserve(pc_count);
  for (uint32_t i = 0; i < pc_count; ++i) {
    if (total - pos < 8) return "INLINE entries overrun the record";
    InlineEntry e;
    e.pc_offset = r.U32(pos);
    const uint32_t depth = r.U32(pos + 4);
    pos += 8;
    if (depth == 0 || depth > (total - pos) / 4) return "INLINE chain overruns the record";
    if (out) e.chain.reserve(depth);
    for (uint32_t d = 0; d < depth; ++d, pos += 4) {
      const uint32_t name = r.U32(pos);
      if (name >= name_count) return "INLINE chain names a missing method";
      if (out) e.chain.push_back(name);
    }
    if (out) out->entries.push_back(std::move(e));
  }
  return nullptr;
}

}  // namespace

Result<FileHeader> ParseFileHeader(std::string_view data) {
  if (data.size() < kFileHeaderSize) return MakeError("shorter than a jitdump header (40 bytes)");
  uint32_t magic;
  memcpy(&magic, data.data(), 4);
  FileHeader h;
  if (magic == kMagicSwapped) h.swapped = true;
  else if (magic != kMagic) return MakeError("not a jitdump file (bad magic)");
  Reader r(data, h.swapped);
  const uint32_t version = r.U32(4);
  if (version > kVersion) return MakeError("jitdump version " + std::to_string(version) + " is newer than 1");
  h.header_size = r.U32(8);
  if (h.header_size < kFileHeaderSize || h.header_size > kMaxHeaderSize) {
    return MakeError("jitdump header size " + std::to_string(h.header_size) + " is out of range");
  }
  h.elf_mach = r.U32(12);
  h.pid = r.U32(20);
  h.timestamp_ns = r.U64(24);
  h.flags = r.U64(32);
  if (h.flags & ~(kFlagArchTimestamp | kFlagNoCode)) return MakeError("jitdump has unknown flags set");
  if (h.flags & kFlagArchTimestamp) {
    return MakeError("jitdump uses TSC timestamps (JITDUMP_USE_ARCH_TIMESTAMP); unset it for arcprof");
  }
  return h;
}

ParseProgress ParseRecords(std::string_view data, bool swapped, Records* out) {
  const Reader r(data, swapped);
  return ForEachRecord(data, r, "record", [&](uint32_t id, uint32_t total, uint64_t t_ns, size_t off,
                                              size_t end) -> std::optional<ParseProgress> {
    switch (id) {
      case kCodeLoad: {
        if (total < kCodeLoadFixedSize) return Corrupt(off, "CODE_LOAD shorter than 56 bytes");
        CodeLoad load;
        load.t_ns = t_ns;
        load.pid = r.U32(off + 16);
        load.tid = r.U32(off + 20);
        load.addr = r.U64(off + 32);
        load.size = r.U64(off + 40);
        load.index = r.U64(off + 48);
        size_t name_len = 0;
        if (!CString(data, off + kCodeLoadFixedSize, end, &load.name, &name_len)) {
          return Corrupt(off, "CODE_LOAD name is not terminated inside its record");
        }
        const uint64_t rest = total - kCodeLoadFixedSize - name_len;
        // Code bytes are optional (symbol-only writers); padding up to 7 bytes is tolerated.
        if (rest != 0 && rest != load.size && (rest < load.size || rest - load.size > 7)) {
          return Corrupt(off, "CODE_LOAD code size does not match its record");
        }
        if (load.addr + load.size < load.addr) return Corrupt(off, "CODE_LOAD address range overflows");
        out->loads.push_back(std::move(load));
        break;
      }
      case kCodeMove: {
        if (total < kCodeMoveSize) return Corrupt(off, "CODE_MOVE shorter than 64 bytes");
        CodeMove move;
        move.t_ns = t_ns;
        move.old_addr = r.U64(off + 32);
        move.new_addr = r.U64(off + 40);
        move.size = r.U64(off + 48);
        move.index = r.U64(off + 56);
        if (move.new_addr + move.size < move.new_addr) return Corrupt(off, "CODE_MOVE address range overflows");
        out->moves.push_back(move);
        break;
      }
      case kCodeClose:
        out->closed = true;
        break;
      default:
        // DEBUG_INFO and UNWINDING_INFO are not needed to name code; unknown
        // ids are skipped as perf does.
        ++out->skipped;
        break;
    }
    return std::nullopt;
  });
}

Result<uint32_t> ParseSideHeader(std::string_view data) {
  if (data.size() < kSideHeaderSize) return MakeError("shorter than an arcprof side-file header (16 bytes)");
  if (memcmp(data.data(), kSideMagic, sizeof(kSideMagic)) != 0) return MakeError("not an arcprof side file");
  Reader r(data, false);
  if (r.U32(8) != kSideVersion) return MakeError("side file version " + std::to_string(r.U32(8)) + " is not 1");
  const uint32_t size = r.U32(12);
  if (size < kSideHeaderSize || size > kMaxHeaderSize) return MakeError("side-file header size out of range");
  return size;
}

ParseProgress ParseSideRecords(std::string_view data, SideRecords* out) {
  const Reader r(data, false);
  return ForEachRecord(data, r, "side record", [&](uint32_t id, uint32_t total, uint64_t t_ns, size_t off,
                                                   size_t end) -> std::optional<ParseProgress> {
    size_t len = 0;
    switch (id) {
      case kSideVmInfo: {
        if (total < kSideVmInfoFixedSize) return Corrupt(off, "VM_INFO too short");
        VmInfo vm;
        vm.t_ns = t_ns;
        vm.pid = r.U32(off + 16);
        vm.flags = r.U32(off + 20);
        if (!CString(data, off + kSideVmInfoFixedSize, end, &vm.vm, &len)) return Corrupt(off, "VM_INFO name unterminated");
        out->vm.push_back(std::move(vm));
        break;
      }
      case kSideThreadName: {
        if (total < kSideThreadNameFixedSize) return Corrupt(off, "THREAD_NAME too short");
        ThreadName t;
        t.t_ns = t_ns;
        t.tid = r.U32(off + 16);
        if (!CString(data, off + kSideThreadNameFixedSize, end, &t.name, &len)) {
          return Corrupt(off, "THREAD_NAME name unterminated");
        }
        out->threads.push_back(std::move(t));
        break;
      }
      case kSideUnload: {
        if (total < kSideUnloadSize) return Corrupt(off, "UNLOAD too short");
        out->unloads.push_back(Unload{t_ns, r.U64(off + 16), r.U64(off + 24)});
        break;
      }
      case kSideInline: {
        if (const char* error = WalkInline(data.substr(off, total), nullptr)) return Corrupt(off, error);
        out->inlines.push_back(InlineBlock{t_ns, r.U64(off + 16), r.U64(off + 24), data.substr(off, total)});
        break;
      }
      case kSideMethods: {
        if (total < kSideMethodsFixedSize) return Corrupt(off, "METHODS too short");
        const uint32_t count = r.U32(off + 16);
        // 8 bytes of address and at least a NUL per method.
        if (count > (total - kSideMethodsFixedSize) / 9) return Corrupt(off, "METHODS count exceeds the record");
        MethodBlock block;
        block.t_ns = t_ns;
        block.count = count;
        block.bytes = data.substr(off + kSideMethodsFixedSize, end - (off + kSideMethodsFixedSize));
        // Every name ends in a NUL: the i-th name is after the i-th NUL.
        // (memchr per name: std::count's byte loop was most of this parse.)
        const std::string_view names = block.names();
        const char* at = names.data();
        const char* const names_end = names.data() + names.size();
        for (uint32_t i = 0; i < count; ++i) {
          const void* nul = at < names_end ? memchr(at, '\0', static_cast<size_t>(names_end - at)) : nullptr;
          if (!nul) return Corrupt(off, "METHODS name unterminated");
          at = static_cast<const char*>(nul) + 1;
        }
        out->methods.push_back(block);
        break;
      }
      case kSideFrame: {
        if (total < kSideFrameSize) return Corrupt(off, "FRAME too short");
        FrameInfo f;
        f.t_ns = t_ns;
        f.addr = r.U64(off + 16);
        f.index = r.U64(off + 24);
        f.frame_size = static_cast<int32_t>(r.U32(off + 32));
        f.frame_complete = static_cast<int32_t>(r.U32(off + 36));
        // A frame larger than a thread's stack is no frame.
        if (f.frame_size <= 0 || f.frame_size > (64 << 20) || (f.frame_size & 7) != 0) {
          return Corrupt(off, "FRAME size out of range");
        }
        out->frames.push_back(f);
        break;
      }
      default:
        ++out->skipped;
        break;
    }
    return std::nullopt;
  });
}

bool DecodeInline(std::string_view record, InlineInfo* out) { return WalkInline(record, out) == nullptr; }

uint64_t MethodBlock::method(uint32_t i) const {
  uint64_t v = 0;
  if (size_t{i} < count) std::memcpy(&v, bytes.data() + size_t{i} * 8, 8);
  return v;
}

std::vector<MethodName> MethodNames(const MethodBlock& block) {
  std::vector<MethodName> out;
  std::string_view names = block.names();
  for (uint32_t i = 0; i < block.count; ++i) {
    const size_t nul = names.find('\0');
    if (nul == std::string_view::npos) break;
    out.push_back({block.t_ns, block.method(i), names.substr(0, nul)});
    names.remove_prefix(nul + 1);
  }
  return out;
}

}  // namespace arcprof::jitdump
