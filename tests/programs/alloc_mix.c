// Allocations in known amounts for record --alloc (tests/loader/alloc_runtime_test.cpp).
//   alloc_mix mix MB    alloc_a allocates and frees 60% of MB MiB, alloc_b
//                       (calloc) 30%, leak_c 10% and keeps it all: in use at
//                       exit is leak_c's 10%.
//   alloc_mix churn     realloc_chain grows 16 blocks by realloc from 1 KiB
//                       to 1 MiB and keeps them (16 MiB in use, each block
//                       moved many times); cross_alloc hands 200 MiB of
//                       blocks to another thread, which frees them all.
//   alloc_mix many N    N live blocks of 64 bytes (the tracked-blocks cap).
//   alloc_mix bench N   N malloc(64)/free pairs; prints the ns per pair.
//   alloc_mix preexisting  leaks 64 MiB, says "ready" on stderr, waits for
//                       SIGUSR1, frees it all (blocks never seen when recorded
//                       with -p after "ready"), then alloc_a allocates and frees
//                       32 MiB.
//   alloc_mix phases    for continuous windows, each step after a SIGUSR1
//                       (says "ready", "a", "b" on stderr when each is done):
//                       leak_c keeps 24 MiB ("a"); then those are freed,
//                       alloc_a allocates and frees 32 MiB and leak_d keeps
//                       8 MiB ("b"); then it exits with leak_d's blocks live.
// Sizes come from a fixed pseudo-random sequence (1-32 KiB).
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static uint64_t state = 0x9e3779b97f4a7c15ull;
// Every block escapes through here: the compiler may not drop a malloc/free pair.
void* volatile sink;
static size_t next_size(void) {
  state ^= state << 13;
  state ^= state >> 7;
  state ^= state << 17;
  return 1024 + (size_t)(state % (31 * 1024));
}

__attribute__((noinline)) void alloc_a(size_t bytes) {
  for (size_t done = 0; done < bytes;) {
    const size_t n = next_size();
    char* p = malloc(n);
    p[0] = 1;
    sink = p;
    free(p);
    done += n;
  }
}

__attribute__((noinline)) void alloc_b(size_t bytes) {
  for (size_t done = 0; done < bytes;) {
    const size_t n = next_size();
    char* p = calloc(1, n);
    p[n - 1] = 1;
    sink = p;
    free(p);
    done += n;
  }
}

static void** leaked;
static size_t nleaked;

// n blocks of `bytes` in all, kept in a new array (inlined: its caller is the frame).
static inline __attribute__((always_inline)) void** keep_blocks(size_t bytes, size_t* n) {
  void** kept = malloc(sizeof(void*) * (bytes / 1024 + 1));
  for (size_t done = 0; done < bytes;) {
    const size_t size = next_size();
    char* p = malloc(size);
    p[0] = 1;
    kept[(*n)++] = p;
    done += size;
  }
  return kept;
}

__attribute__((noinline)) void leak_c(size_t bytes) { leaked = keep_blocks(bytes, &nleaked); }

static void** leaked_d;
static size_t nleaked_d;

__attribute__((noinline)) void leak_d(size_t bytes) { leaked_d = keep_blocks(bytes, &nleaked_d); }

// Blocks SIGUSR1 (once) and waits for it.
static void wait_usr1(void) {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGUSR1);
  sigprocmask(SIG_BLOCK, &set, NULL);
  int sig;
  sigwait(&set, &sig);
}

__attribute__((noinline)) void realloc_chain(int chains) {
  void** kept = malloc(sizeof(void*) * chains);
  for (int c = 0; c < chains; ++c) {
    char* p = NULL;
    for (size_t n = 1024; n <= 1024 * 1024; n += 16384) {
      p = realloc(p, n);
      p[n - 1] = 1;
      sink = p;
    }
    p = realloc(p, 1024 * 1024);
    kept[c] = p;
  }
  leaked = kept;
}

#define QUEUE 4096
static void* queue[QUEUE];
static size_t head, tail;
static int done_producing;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;

static void* consumer(void* arg) {
  (void)arg;
  for (;;) {
    pthread_mutex_lock(&mu);
    while (head == tail && !done_producing) pthread_cond_wait(&cv, &mu);
    if (head == tail && done_producing) {
      pthread_mutex_unlock(&mu);
      return NULL;
    }
    void* p = queue[tail++ % QUEUE];
    pthread_cond_broadcast(&cv);
    pthread_mutex_unlock(&mu);
    free(p);  // freed by another thread than the one that allocated it
  }
}

__attribute__((noinline)) void cross_alloc(size_t bytes) {
  pthread_t t;
  pthread_create(&t, NULL, consumer, NULL);
  for (size_t done = 0; done < bytes;) {
    const size_t n = next_size();
    char* p = malloc(n);
    p[0] = 1;
    sink = p;
    pthread_mutex_lock(&mu);
    while (head - tail >= QUEUE) pthread_cond_wait(&cv, &mu);
    queue[head++ % QUEUE] = p;
    pthread_cond_broadcast(&cv);
    pthread_mutex_unlock(&mu);
    done += n;
  }
  pthread_mutex_lock(&mu);
  done_producing = 1;
  pthread_cond_broadcast(&cv);
  pthread_mutex_unlock(&mu);
  pthread_join(t, NULL);
}

__attribute__((noinline)) void many_blocks(int n) {
  void** kept = malloc(sizeof(void*) * n);
  for (int i = 0; i < n; ++i) kept[i] = malloc(64);
  leaked = kept;
}

int main(int argc, char** argv) {
  const char* mode = argc > 1 ? argv[1] : "mix";
  if (strcmp(mode, "mix") == 0) {
    const size_t total = (size_t)(argc > 2 ? atoi(argv[2]) : 400) << 20;
    alloc_a(total / 10 * 6);
    alloc_b(total / 10 * 3);
    leak_c(total / 10);
  } else if (strcmp(mode, "churn") == 0) {
    realloc_chain(16);
    cross_alloc((size_t)200 << 20);
  } else if (strcmp(mode, "cross") == 0) {
    cross_alloc((size_t)200 << 20);
  } else if (strcmp(mode, "chain") == 0) {
    realloc_chain(argc > 2 ? atoi(argv[2]) : 64);
  } else if (strcmp(mode, "bench") == 0) {
    const long n = argc > 2 ? atol(argv[2]) : 1000000;
    struct timespec t0, t1, c0, c1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c0);
    for (long i = 0; i < n; ++i) {
      char* p = malloc(64);
      p[0] = 1;
      sink = p;
      free(p);
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c1);
    // Wall time per pair, and this thread's CPU time per pair (user and
    // kernel: the uprobes' traps count here, waits for a CPU do not).
    printf("alloc_mix bench pairs=%ld ns_per_pair=%.1f cpu_ns_per_pair=%.1f\n", n,
           ((t1.tv_sec - t0.tv_sec) * 1e9 + (t1.tv_nsec - t0.tv_nsec)) / (double)n,
           ((c1.tv_sec - c0.tv_sec) * 1e9 + (c1.tv_nsec - c0.tv_nsec)) / (double)n);
  } else if (strcmp(mode, "many") == 0) {
    many_blocks(argc > 2 ? atoi(argv[2]) : 5000);
  } else if (strcmp(mode, "phases") == 0) {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGUSR1);
    sigprocmask(SIG_BLOCK, &set, NULL);
    fprintf(stderr, "ready\n");
    wait_usr1();
    leak_c((size_t)24 << 20);
    fprintf(stderr, "a\n");
    wait_usr1();
    for (size_t i = 0; i < nleaked; ++i) free(leaked[i]);
    free(leaked);
    alloc_a((size_t)32 << 20);
    leak_d((size_t)8 << 20);
    fprintf(stderr, "b\n");
    wait_usr1();
  } else if (strcmp(mode, "preexisting") == 0) {
    leak_c((size_t)64 << 20);
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGUSR1);
    sigprocmask(SIG_BLOCK, &set, NULL);
    fprintf(stderr, "ready\n");
    int sig;
    sigwait(&set, &sig);
    for (size_t i = 0; i < nleaked; ++i) free(leaked[i]);
    alloc_a((size_t)32 << 20);
    sleep(1);
  }
  return 0;
}
