// The heap arcprof runs on, and the few calls that depend on which one it is.
//
// The arcprof executable links jemalloc (cli/CMakeLists.txt): under process
// churn the daemon allocates and frees short-lived blocks of every size (a
// JVM's JIT records, a window's trees, symbol tables of files that close), and
// glibc's malloc, tuned so that RSS follows what is held (freed large blocks
// unmapped at once), paid for it in page faults and trims: jemalloc took the
// churn daemon's CPU to 0.81-0.88x with the same RSS (docs/performance.md,
// "Memory and open files under churn"). Test binaries and fuzzers keep glibc;
// these calls work on either, found at run time through a weak `mallctl`.
#pragma once

#include <malloc.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <sys/types.h>

extern "C" int mallctl(const char* name, void* oldp, size_t* oldlenp, void* newp, size_t newlen)
    __attribute__((weak));

namespace arcprof::heap {

inline bool IsJemalloc() { return mallctl != nullptr; }

// For a process that lives for days: under glibc, at most two arenas and a
// fixed mmap threshold, so that large short-lived blocks go back to the
// kernel when freed (glibc otherwise raises the threshold after the first
// such free, and later ones stay in the heap where a small block above them
// keeps the pages). jemalloc returns unused pages by itself after its decay
// time, for a daemon 30 s instead of 10: under process churn a JVM's JIT
// tables and processes' mappings are freed and allocated again within
// seconds, and each page handed back was faulted in again by the next
// allocation (the churn daemon took half the page faults and 0.93x the CPU,
// RSS +10 MB). The window close still hands every free page back
// (ReleaseFree).
inline void ConfigureForDaemon() {
  if (IsJemalloc()) {
    ssize_t decay_ms = 30000;
    // Arenas made from now on, then each one that exists.
    mallctl("arenas.dirty_decay_ms", nullptr, nullptr, &decay_ms, sizeof(decay_ms));
    unsigned arenas = 0;
    size_t len = sizeof(arenas);
    if (mallctl("arenas.narenas", &arenas, &len, nullptr, 0) != 0) return;
    for (unsigned i = 0; i < arenas; ++i) {
      char name[64];
      snprintf(name, sizeof(name), "arena.%u.dirty_decay_ms", i);
      mallctl(name, nullptr, nullptr, &decay_ms, sizeof(decay_ms));  // fails for arenas not made yet
    }
    return;
  }
  mallopt(M_ARENA_MAX, 2);
  mallopt(M_MMAP_THRESHOLD, 256 * 1024);
  mallopt(M_TRIM_THRESHOLD, 4 * 1024 * 1024);
}

// Hands the free pages the heap keeps back to the kernel now (after a large
// free: a window's trees, the symbol tables of closed files), so that RSS
// follows what is held rather than the last peak.
inline void ReleaseFree() {
  if (IsJemalloc()) {
    // "arena.<MALLCTL_ARENAS_ALL>.purge": every arena's unused dirty pages.
    mallctl("arena.4096.purge", nullptr, nullptr, nullptr, 0);
    return;
  }
  malloc_trim(0);
}

struct Stats {
  size_t in_use = 0;      // bytes handed out and not freed
  size_t mapped_big = 0;  // of which large blocks mapped on their own (glibc only)
  size_t kept_free = 0;   // bytes the heap holds without handing them out
  size_t heap = 0;        // bytes the heap has from the kernel (resident, for jemalloc)
};

inline Stats Read() {
  Stats s;
  if (IsJemalloc()) {
    uint64_t epoch = 1;
    size_t len = sizeof(epoch);
    mallctl("epoch", &epoch, &len, &epoch, len);  // the stats below are cached until this
    size_t allocated = 0, resident = 0;
    len = sizeof(size_t);
    mallctl("stats.allocated", &allocated, &len, nullptr, 0);
    len = sizeof(size_t);
    mallctl("stats.resident", &resident, &len, nullptr, 0);
    s.in_use = allocated;
    s.heap = resident;
    s.kept_free = resident > allocated ? resident - allocated : 0;
    return s;
  }
  const struct mallinfo2 mi = mallinfo2();
  s.in_use = mi.uordblks + mi.hblkhd;
  s.mapped_big = mi.hblkhd;
  s.kept_free = mi.fordblks;
  s.heap = mi.arena;
  return s;
}

}  // namespace arcprof::heap
