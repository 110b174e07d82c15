/* Thread churn for the one-shot record's thread budget: starts `threads`
 * threads, `batch` at a time, each burning about `ms` milliseconds of its own
 * CPU time in thread_work, and joins them. Usage: thread_churn THREADS [MS] [BATCH]
 * (defaults 2 ms, 4 at a time). Prints the process's CPU seconds at the end. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static volatile uint64_t sink;
static double ms_each = 2.0;

static double thread_cpu_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

__attribute__((noinline)) static void thread_work(void)
{
	uint64_t acc = sink;
	double end = thread_cpu_ms() + ms_each;
	while (thread_cpu_ms() < end)
		for (int i = 0; i < 20000; i++)
			acc = acc * 2862933555777941757ull + 3037000493ull;
	sink = acc;
}

static void *thread_main(void *arg)
{
	(void)arg;
	thread_work();
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: thread_churn THREADS [MS] [BATCH]\n");
		return 2;
	}
	const long threads = atol(argv[1]);
	if (argc > 2)
		ms_each = atof(argv[2]);
	long batch = argc > 3 ? atol(argv[3]) : 4;
	if (batch < 1 || batch > 64)
		batch = 4;
	pthread_t ids[64];
	for (long started = 0; started < threads;) {
		long n = 0;
		for (; n < batch && started < threads; ++n, ++started) {
			if (pthread_create(&ids[n], NULL, thread_main, NULL) != 0) {
				perror("pthread_create");
				return 1;
			}
		}
		for (long i = 0; i < n; ++i)
			pthread_join(ids[i], NULL);
	}
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	printf("%.3f\n", ts.tv_sec + ts.tv_nsec / 1e9);
	return 0;
}
