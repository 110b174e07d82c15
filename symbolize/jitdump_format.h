// On-disk layouts shared by the JVMTI agent (writer) and the recorder
// (reader): the jitdump file (docs/formats.md §1, perf's format, unchanged) and
// arcprof's side file `jit-<pid>.arcprof` next to it, which carries what
// jitdump has no record for (inlining chains, unloads, Java thread names, VM
// facts). Keeping those out of the jitdump keeps `perf inject --jit` quiet:
// perf warns once per unknown record. docs/java.md describes both files.
//
// Plain constants and packed sizes only: the agent is built without the
// rest of the project.
#pragma once

#include <cstdint>

namespace arcprof::jitdump {

inline constexpr uint32_t kMagic = 0x4A695444;         // "JiTD" as a native u32
inline constexpr uint32_t kMagicSwapped = 0x4454694A;  // written by the other byte order
inline constexpr uint32_t kVersion = 1;
inline constexpr uint32_t kFileHeaderSize = 40;
inline constexpr uint32_t kRecordHeaderSize = 16;      // id, total_size, timestamp
inline constexpr uint64_t kFlagArchTimestamp = 1;
// arcprof's own flag: CODE_LOAD records carry no code bytes (the agent's
// `nocode`, which arcprof's attach asks for). A bit perf reserves, so that
// perf refuses such a file ("unsupported flags") rather than read names as
// code.
inline constexpr uint64_t kFlagNoCode = 1ull << 63;

enum RecordId : uint32_t {
  kCodeLoad = 0,
  kCodeMove = 1,
  kCodeDebugInfo = 2,
  kCodeClose = 3,
  kCodeUnwindingInfo = 4,
};

inline constexpr uint32_t kCodeLoadFixedSize = 56;  // header + pid, tid, vma, addr, size, index
inline constexpr uint32_t kCodeMoveSize = 64;
inline constexpr uint32_t kDebugInfoFixedSize = 32;
inline constexpr uint32_t kUnwindingInfoFixedSize = 40;

// ---- the side file ----
// Header (16 bytes): magic "ARCPJIT1" (8 bytes), u32 version (1), u32 header
// size (16). Then records with the jitdump record header (u32 id, u32
// total_size, u64 CLOCK_MONOTONIC ns), native byte order, packed.
inline constexpr char kSideMagic[8] = {'A', 'R', 'C', 'P', 'J', 'I', 'T', '1'};
inline constexpr uint32_t kSideVersion = 1;
inline constexpr uint32_t kSideHeaderSize = 16;

enum SideRecordId : uint32_t {
  // u32 pid (namespace pid), u32 flags (kVm*), then the VM's name and
  // version, NUL-terminated.
  kSideVmInfo = 1,
  // u32 tid (namespace tid), u32 reserved, then the Java thread name, NUL-terminated.
  kSideThreadName = 2,
  // u64 code_addr, u64 code_index of the CODE_LOAD whose code is gone.
  kSideUnload = 3,
  // u64 code_addr, u64 code_index, u32 name_count, u32 pc_count, then
  // name_count NUL-terminated method names, then pc_count entries of
  // (u32 pc_offset, u32 depth, depth x u32 name index), innermost method
  // first. An entry covers the code from the previous entry's pc_offset
  // (exclusive) up to its own pc_offset (inclusive): HotSpot records its
  // scopes at call return addresses and safepoint polls.
  kSideInline = 4,
  // u32 count, u32 reserved, then count x u64 Method* (HotSpot's address of
  // the method's metadata), then count NUL-terminated method names in the
  // same order. Valid from the record's time on (a later record for the same
  // Method* replaces it: class unloading frees and reuses them).
  kSideMethods = 5,
  // u64 code_addr, u64 code_index, i32 frame_size (bytes from the stack
  // pointer inside the method's body to just above its return address: the
  // caller's stack pointer; the return address is at frame_size - 8 and the
  // caller's rbp at frame_size - 16), i32 frame_complete (code offset where
  // the frame is set up; -1 never), from HotSpot's CodeBlob.
  kSideFrame = 6,
};

inline constexpr uint32_t kVmPreserveFramePointer = 1u << 0;
inline constexpr uint32_t kVmAttachedLate = 1u << 1;  // Agent_OnAttach, not -agentpath

inline constexpr uint32_t kSideVmInfoFixedSize = 24;
inline constexpr uint32_t kSideThreadNameFixedSize = 24;
inline constexpr uint32_t kSideUnloadSize = 32;
inline constexpr uint32_t kSideInlineFixedSize = 40;
inline constexpr uint32_t kSideMethodsFixedSize = 24;
inline constexpr uint32_t kSideFrameSize = 40;

}  // namespace arcprof::jitdump
