// Two programs one after the other under the same pid (pid reuse made
// deterministic): the parent creates a child with clone3's set_tid (root in
// its pid namespace may choose the pid), the child runs as "reuse_first" in
// first_program_work; once it is reaped, a second child takes the same pid
// and runs as "reuse_second" in second_program_work. Each child execs this
// program again, so each is a fresh image (fork, exec, comm as in real churn).
//   pid_reuse SECONDS [sleep] [GAP]  the parent (each child spins SECONDS of CPU, or with
//                                    "sleep" sleeps SECONDS in 9-10 ms naps; the second starts GAP
//                                    seconds after the first ended, default 0); prints "pid N" for the reused pid
//   pid_reuse first|second S [sleep] a child (run by the parent)
// Exit 77 when the pid cannot be chosen (no CAP_SYS_ADMIN, no clone3).
#define _GNU_SOURCE
#include <errno.h>
#include <linux/sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static volatile uint64_t sink;

// CPU time: each program is sampled for about as long on a loaded machine.
static double Now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

__attribute__((noinline)) static void first_program_work(double seconds) {
  const double end = Now() + seconds;
  uint64_t x = 1;
  while (Now() < end) {
    for (int i = 0; i < 2000000; ++i) x = x * 6364136223846793005ull + 1;
    sink = x;
  }
}

__attribute__((noinline)) static void second_program_work(double seconds) {
  const double end = Now() + seconds;
  uint64_t x = 3;
  while (Now() < end) {
    for (int i = 0; i < 2000000; ++i) x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    sink = x;
  }
}

// Off CPU: SECONDS of wall time asleep, in naps of `ms`.
static inline __attribute__((always_inline)) void Nap(double seconds, long ms) {
  struct timespec start, now, nap = {0, ms * 1000 * 1000};
  clock_gettime(CLOCK_MONOTONIC, &start);
  do {
    nanosleep(&nap, NULL);
    clock_gettime(CLOCK_MONOTONIC, &now);
  } while ((double)(now.tv_sec - start.tv_sec) + (now.tv_nsec - start.tv_nsec) / 1e9 < seconds);
}

// Each its own frame (the store after the naps keeps them from being tail
// calls) and its own body (naps of different lengths: identical bodies are
// folded into one function by the compiler).
__attribute__((noinline)) static void first_program_sleep(double seconds) {
  Nap(seconds, 10);
  sink = 1;
}

__attribute__((noinline)) static void second_program_sleep(double seconds) {
  Nap(seconds, 9);
  sink = 2;
}

// A child at pid `want` that execs this program as `mode` (`sleep`: NULL
// or "sleep"); -1 with errno.
static pid_t Spawn(pid_t want, const char* mode, const char* seconds, const char* sleep) {
  pid_t tids[1] = {want};
  struct clone_args args;
  memset(&args, 0, sizeof(args));
  args.exit_signal = SIGCHLD;
  args.set_tid = (uint64_t)(uintptr_t)tids;
  args.set_tid_size = 1;
  long r = syscall(SYS_clone3, &args, sizeof(args));
  if (r == 0) {
    execl("/proc/self/exe", "pid_reuse", mode, seconds, sleep, (char*)NULL);
    _exit(127);
  }
  return (pid_t)r;
}

static int Reap(pid_t pid) {
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return -1;
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

int main(int argc, char** argv) {
  if ((argc == 3 || argc == 4) && (strcmp(argv[1], "first") == 0 || strcmp(argv[1], "second") == 0)) {
    const double seconds = atof(argv[2]);
    const int sleep = argc == 4 && strcmp(argv[3], "sleep") == 0;
    if (strcmp(argv[1], "first") == 0) {
      prctl(PR_SET_NAME, "reuse_first");
      if (sleep) first_program_sleep(seconds);
      else first_program_work(seconds);
      return 0;
    }
    prctl(PR_SET_NAME, "reuse_second");
    if (sleep) second_program_sleep(seconds);
    else second_program_work(seconds);
    return 0;
  }
  const char* sleep = NULL;
  double gap = 0;
  int bad = argc < 2 || argc > 4 || atof(argv[1]) <= 0 || atof(argv[1]) > 60;
  for (int i = 2; i < argc && !bad; ++i) {
    char* end = NULL;
    if (strcmp(argv[i], "sleep") == 0) {
      sleep = "sleep";
    } else {
      gap = strtod(argv[i], &end);
      bad = *end != '\0' || gap < 0 || gap > 60;
    }
  }
  if (bad) {
    fprintf(stderr, "usage: pid_reuse SECONDS [sleep] [GAP] (0 < SECONDS <= 60, 0 <= GAP <= 60)\n");
    return 2;
  }
  // A free pid a little above ours: at most 1000 tries.
  pid_t pid = -1, want = getpid() + 1000;
  for (int tries = 0; tries < 1000; ++tries, ++want) {
    if (want > 30000) want = 300;
    pid = Spawn(want, "first", argv[1], sleep);
    if (pid > 0) break;
    if (errno == EPERM || errno == ENOSYS || errno == EINVAL) {
      fprintf(stderr, "pid_reuse: clone3 with set_tid: %s\n", strerror(errno));
      return 77;
    }
    if (errno != EEXIST) break;
  }
  if (pid <= 0) {
    fprintf(stderr, "pid_reuse: no free pid: %s\n", strerror(errno));
    return 1;
  }
  if (Reap(pid) != 0) return 1;
  if (gap > 0) {
    struct timespec pause = {(time_t)gap, (long)((gap - (double)(time_t)gap) * 1e9)};
    while (nanosleep(&pause, &pause) != 0 && errno == EINTR) {
    }
  }
  // Reaped: the pid is free again; the second program takes it.
  pid_t again = Spawn(pid, "second", argv[1], sleep);
  if (again != pid) {
    fprintf(stderr, "pid_reuse: pid %d not reused: %s\n", pid, strerror(errno));
    return 1;
  }
  if (Reap(again) != 0) return 1;
  printf("pid %d\n", pid);
  return 0;
}
