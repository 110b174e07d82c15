/* Built with frame pointers, yet gcc 12 gives the hot leaf no frame of its own
 * (it is a leaf): a frame-pointer walk from inside `leaf` skips `mid`. The test
 * checks the disassembly. Usage: frameless_leaf [seconds] */
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

volatile uint64_t leaf_sink;

__attribute__((noinline)) void leaf(void)
{
	uint64_t acc = leaf_sink;
	for (int i = 0; i < 200000; i++)
		acc = acc * 6364136223846793005ull + (uint64_t)i;
	leaf_sink = acc;
}

__attribute__((noinline)) void mid(double seconds)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	double end = ts.tv_sec + ts.tv_nsec / 1e9 + seconds, t;
	do {
		leaf();
		clock_gettime(CLOCK_MONOTONIC, &ts);
		t = ts.tv_sec + ts.tv_nsec / 1e9;
	} while (t < end);
}

int main(int argc, char **argv)
{
	mid(argc > 1 ? atof(argv[1]) : 3.0);
	return 0;
}
