/* A call chain main -> level_one -> level_two -> level_three -> burn. Built twice:
 * without frame pointers (deep_calls_nofp) and with them (deep_calls_fp).
 * Usage: deep_calls [seconds] */
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

volatile uint64_t deep_sink;

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

__attribute__((noinline)) void burn(int n)
{
	uint64_t acc = deep_sink;
	for (int i = 0; i < n; i++)
		acc = acc * 2862933555777941757ull + (uint64_t)i;
	deep_sink = acc;
}

__attribute__((noinline)) void level_three(int n) { burn(n); deep_sink += 3; }
__attribute__((noinline)) void level_two(int n) { level_three(n); deep_sink += 2; }
__attribute__((noinline)) void level_one(int n) { level_two(n); deep_sink += 1; }

int main(int argc, char **argv)
{
	double end = now() + (argc > 1 ? atof(argv[1]) : 3.0);
	while (now() < end)
		level_one(100000);
	return 0;
}
