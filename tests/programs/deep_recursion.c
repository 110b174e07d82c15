/* main -> recurse x DEPTH -> burn, without frame pointers: a stack deeper than
 * both the default 64 KiB copy and the 512 frames a sample keeps (each
 * recurse frame holds 64 bytes or more: DEPTH 3000 is about 200 KiB).
 * Usage: deep_recursion [seconds] [depth] */
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

__attribute__((noinline)) void burn(double seconds)
{
	double end = now() + seconds;
	uint64_t acc = deep_sink;
	while (now() < end)
		for (int i = 0; i < 100000; i++)
			acc = acc * 2862933555777941757ull + (uint64_t)i;
	deep_sink = acc;
}

__attribute__((noinline)) uint64_t recurse(int depth, double seconds)
{
	volatile char pad[48];
	pad[0] = (char)depth;
	if (depth == 0)
		burn(seconds);
	else
		deep_sink += recurse(depth - 1, seconds); /* not a tail call */
	return pad[0];
}

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 3.0;
	int depth = argc > 2 ? atoi(argv[2]) : 3000;
	recurse(depth, seconds);
	return 0;
}
