// `arcprof trace` acceptance program (tests/loader/trace_runtime_test.cpp):
// functions with known call counts under a root, the same functions called
// outside it, threads, a C++ throw and a longjmp across probed frames, and
// outside work whose speed is measured.
//
//   trace_target counts THREADS ROOTS DEPTH   each thread: ROOTS calls of traced_root
//   trace_target loop SECONDS                 traced_root every 10 ms (for -p)
//   trace_target speed SECONDS ROOT_EVERY     outside work in chunks, prints their median ns;
//                                             traced_root every ROOT_EVERY chunks (0: never)
//   trace_target bench ROOTS                  bench_root ROOTS times (100 shared_leaf calls
//                                             each); prints ns per shared_leaf call
//                                             (bench/trace_bench.sh)
#include <pthread.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <algorithm>
#include <stdexcept>
#include <vector>

#define NOINLINE __attribute__((noinline))
#define KEEP(x) asm volatile("" : "+r"(x))

extern "C" {

volatile unsigned long sink;

// Under the root 10 times per root call, and outside it.
NOINLINE unsigned long shared_leaf(unsigned long x) {
  KEEP(x);
  for (int i = 0; i < 50; ++i) x = x * 2654435761u + 1;
  sink = x;
  return x;
}

// Called depth+1 times per call of recurse(depth).
NOINLINE unsigned long recurse(int depth) {
  unsigned long r = shared_leaf(static_cast<unsigned long>(depth));
  if (depth > 0) {
    unsigned long below = recurse(depth - 1);
    KEEP(below);
    r += below;
  }
  KEEP(r);
  return r;
}

NOINLINE void thrower(int i) {
  sink = static_cast<unsigned long>(i);
  throw std::runtime_error("thrown across probed frames");
}

NOINLINE void throw_mid(int i) {
  thrower(i);
  sink = 0;  // never reached
}

// One per thread: a longjmp must land on its own thread's stack.
static thread_local jmp_buf jump_back;
NOINLINE void jumper(int i) {
  sink = static_cast<unsigned long>(i);
  longjmp(jump_back, 1);
}

NOINLINE void jump_mid(int i) {
  jumper(i);
  sink = 0;
}

static int g_depth = 5;

// The root: recurse(depth) once (depth+1 calls), shared_leaf 10 times, one
// throw through throw_mid and thrower, one longjmp through jump_mid and
// jumper.
NOINLINE unsigned long traced_root(int i) {
  unsigned long r = recurse(g_depth);
  for (int k = 0; k < 10; ++k) r += shared_leaf(r);
  try {
    throw_mid(i);
  } catch (const std::exception&) {
    ++r;
  }
  if (setjmp(jump_back) == 0) jump_mid(i);
  KEEP(r);
  return r;
}

// Outside the root: the same functions, never counted.
NOINLINE unsigned long outside_root(int n) {
  unsigned long r = 0;
  for (int i = 0; i < n; ++i) r += shared_leaf(static_cast<unsigned long>(i)) + recurse(3);
  KEEP(r);
  return r;
}

// The benchmark's root: 100 calls of a short leaf.
NOINLINE unsigned long bench_root(unsigned long x) {
  for (int k = 0; k < 100; ++k) x += shared_leaf(x);
  KEEP(x);
  return x;
}

// Work calling nothing that is probed.
NOINLINE unsigned long outside_chunk(unsigned long x) {
  for (int i = 0; i < 200000; ++i) x = x * 6364136223846793005ull + 1442695040888963407ull;
  KEEP(x);
  return x;
}

}  // extern "C"

static uint64_t now_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + ts.tv_nsec;
}

static int g_roots = 0;
static void* thread_main(void*) {
  for (int i = 0; i < g_roots; ++i) sink = traced_root(i);
  return nullptr;
}

int main(int argc, char** argv) {
  if (argc >= 5 && strcmp(argv[1], "counts") == 0) {
    const int threads = atoi(argv[2]);
    g_roots = atoi(argv[3]);
    g_depth = atoi(argv[4]);
    sink = outside_root(100);
    std::vector<pthread_t> ts(static_cast<size_t>(threads));
    for (pthread_t& t : ts) pthread_create(&t, nullptr, thread_main, nullptr);
    for (pthread_t& t : ts) pthread_join(t, nullptr);
    sink = outside_root(100);
    printf("done\n");
    return 0;
  }
  if (argc >= 3 && strcmp(argv[1], "loop") == 0) {
    const uint64_t end = now_ns() + static_cast<uint64_t>(atof(argv[2]) * 1e9);
    for (int i = 0; now_ns() < end; ++i) {
      sink = traced_root(i);
      sink = outside_root(1);
      timespec pause{0, 10'000'000};
      nanosleep(&pause, nullptr);
    }
    return 0;
  }
  if (argc >= 4 && strcmp(argv[1], "speed") == 0) {
    const uint64_t end = now_ns() + static_cast<uint64_t>(atof(argv[2]) * 1e9);
    const int every = atoi(argv[3]);
    std::vector<uint64_t> chunks;
    unsigned long x = 1;
    for (int i = 0; now_ns() < end; ++i) {
      const uint64_t t0 = now_ns();
      x = outside_chunk(x);
      chunks.push_back(now_ns() - t0);
      if (every > 0 && i % every == 0) sink = traced_root(i);
    }
    std::sort(chunks.begin(), chunks.end());
    printf("chunks %zu median_ns %llu\n", chunks.size(),
           static_cast<unsigned long long>(chunks[chunks.size() / 2]));
    return 0;
  }
  if (argc >= 3 && strcmp(argv[1], "bench") == 0) {
    const long roots = atol(argv[2]);
    unsigned long x = 1;
    const uint64_t t0 = now_ns();
    for (long i = 0; i < roots; ++i) x = bench_root(x);
    const uint64_t t1 = now_ns();
    sink = x;
    printf("leaf_calls %ld ns_per_leaf_call %.1f\n", roots * 100, static_cast<double>(t1 - t0) / (roots * 100.0));
    return 0;
  }
  fprintf(stderr, "usage: trace_target counts THREADS ROOTS DEPTH | loop SECONDS | speed SECONDS ROOT_EVERY\n");
  return 1;
}
