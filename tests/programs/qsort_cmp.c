/* Sorting with a CPU-heavy comparator through libc's qsort (built without
 * frame pointers on Debian): the comparator's samples must still show
 * main -> sort_rounds -> qsort -> ... -> cmp_heavy. Usage: qsort_cmp [seconds] */
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

static volatile uint64_t cmp_sink;

__attribute__((noinline)) static int cmp_heavy(const void *a, const void *b)
{
	uint64_t x = *(const uint32_t *)a, y = *(const uint32_t *)b, acc = x ^ y;
	for (int i = 0; i < 2000; i++)
		acc = acc * 6364136223846793005ull + 1;
	cmp_sink = acc;
	return x < y ? -1 : x > y;
}

__attribute__((noinline)) void sort_rounds(double seconds)
{
	enum { N = 4096 };
	static uint32_t v[N];
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	double end = ts.tv_sec + ts.tv_nsec / 1e9 + seconds, now;
	uint32_t seed = 1;
	do {
		for (int i = 0; i < N; i++)
			v[i] = seed = seed * 1103515245u + 12345u;
		qsort(v, N, sizeof(v[0]), cmp_heavy);
		clock_gettime(CLOCK_MONOTONIC, &ts);
		now = ts.tv_sec + ts.tv_nsec / 1e9;
	} while (now < end);
}

int main(int argc, char **argv)
{
	sort_rounds(argc > 1 ? atof(argv[1]) : 3.0);
	return 0;
}
