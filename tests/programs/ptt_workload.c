/* PTT test workload: one thread spins, one alternates 10 ms busy / 10 ms
 * asleep, for the seconds given in argv[1] (default 3). When both are done they
 * park (asleep, off CPU) and the main thread reads their kernel accounting, so
 * that nothing runs on their account between the reading and the end of the
 * recording's view of them; it prints to stderr:
 *   ptt_workload tid=N name=NAME schedstat_ns=N ctxsw=N
 * schedstat_ns is the first field of /proc/self/task/TID/schedstat (time on
 * CPU), ctxsw = voluntary + nonvoluntary context switches from .../status.
 * After both threads end, the process prints its page faults (getrusage):
 *   ptt_workload pid=N minflt=N majflt=N */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define TOUCHED_PAGES 4000 /* ptt_busy faults in this many fresh pages */

static double seconds = 3;

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void spin_until(double t)
{
	volatile unsigned long x = 0;
	while (now_s() < t)
		for (int i = 0; i < 1000; i++)
			x += i;
}

static void report(long tid, const char *name)
{
	char path[128];
	unsigned long long run_ns = 0, vol = 0, invol = 0;
	snprintf(path, sizeof(path), "/proc/self/task/%ld/schedstat", tid);
	FILE *f = fopen(path, "r");
	if (f) {
		if (fscanf(f, "%llu", &run_ns) != 1)
			run_ns = 0;
		fclose(f);
	}
	snprintf(path, sizeof(path), "/proc/self/task/%ld/status", tid);
	f = fopen(path, "r");
	if (f) {
		char line[256];
		while (fgets(line, sizeof(line), f)) {
			sscanf(line, "voluntary_ctxt_switches: %llu", &vol);
			sscanf(line, "nonvoluntary_ctxt_switches: %llu", &invol);
		}
		fclose(f);
	}
	fprintf(stderr, "ptt_workload tid=%ld name=%s schedstat_ns=%llu ctxsw=%llu\n", tid, name,
		run_ns, vol + invol);
}

static pthread_mutex_t park_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t park_cond = PTHREAD_COND_INITIALIZER;
static int parked, released;
static long worker_tid[2];
static const char *worker_name[2];

/* A worker is done: it waits, asleep, until main has read its accounting. */
static void park(int slot, const char *name)
{
	worker_tid[slot] = syscall(SYS_gettid);
	worker_name[slot] = name;
	pthread_mutex_lock(&park_lock);
	parked++;
	pthread_cond_broadcast(&park_cond);
	while (!released)
		pthread_cond_wait(&park_cond, &park_lock);
	pthread_mutex_unlock(&park_lock);
}

static void *busy(void *arg)
{
	(void)arg;
	prctl(PR_SET_NAME, "ptt_busy");
	/* A known number of page faults for the counter path (--ptt-events page-faults). */
	size_t bytes = (size_t)TOUCHED_PAGES * 4096;
	char *pages = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (pages != MAP_FAILED) {
		for (size_t i = 0; i < bytes; i += 4096)
			pages[i] = 1;
		munmap(pages, bytes);
	}
	spin_until(now_s() + seconds);
	park(0, "ptt_busy");
	return NULL;
}

static void *alternate(void *arg)
{
	(void)arg;
	prctl(PR_SET_NAME, "ptt_alternate");
	double end = now_s() + seconds;
	while (now_s() < end) {
		spin_until(now_s() + 0.010);
		struct timespec nap = {0, 10 * 1000 * 1000};
		nanosleep(&nap, NULL);
	}
	park(1, "ptt_alternate");
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc > 1)
		seconds = atof(argv[1]);
	pthread_t a, b;
	pthread_create(&a, NULL, busy, NULL);
	pthread_create(&b, NULL, alternate, NULL);
	pthread_mutex_lock(&park_lock);
	while (parked < 2)
		pthread_cond_wait(&park_cond, &park_lock);
	pthread_mutex_unlock(&park_lock);
	/* Let the last worker reach its futex wait and leave the CPU. */
	struct timespec settle = {0, 20 * 1000 * 1000};
	nanosleep(&settle, NULL);
	for (int i = 0; i < 2; i++)
		report(worker_tid[i], worker_name[i]);
	pthread_mutex_lock(&park_lock);
	released = 1;
	pthread_cond_broadcast(&park_cond);
	pthread_mutex_unlock(&park_lock);
	pthread_join(a, NULL);
	pthread_join(b, NULL);
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	fprintf(stderr, "ptt_workload pid=%d minflt=%ld majflt=%ld\n", getpid(), ru.ru_minflt,
		ru.ru_majflt);
	return 0;
}
