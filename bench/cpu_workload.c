/* A fixed amount of CPU-bound work; prints the wall seconds it took.
 * Usage: cpu_workload MEGA_ITERATIONS */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

volatile uint64_t bench_sink;

__attribute__((noinline)) static uint64_t mix(uint64_t x, int rounds)
{
	for (int i = 0; i < rounds; i++)
		x = x * 6364136223846793005ull + 1442695040888963407ull;
	return x;
}

int main(int argc, char **argv)
{
	long mega = argc > 1 ? atol(argv[1]) : 1000;
	struct timespec a, b;
	clock_gettime(CLOCK_MONOTONIC, &a);
	uint64_t x = 1;
	for (long m = 0; m < mega; m++)
		x = mix(x, 1000000);
	bench_sink = x;
	clock_gettime(CLOCK_MONOTONIC, &b);
	printf("%.4f\n", (b.tv_sec - a.tv_sec) + (b.tv_nsec - a.tv_nsec) / 1e9);
	return 0;
}
