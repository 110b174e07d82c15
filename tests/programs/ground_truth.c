/* Ground truth for the sampler: f_heavy and f_light burn CPU 3:1 under outer.
 * Built with frame pointers (-fno-omit-frame-pointer). Usage: ground_truth [seconds] [heavy:light]
 * The ratio argument (e.g. "1:3") lets differential tests swap the weights. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>

#define UNIT 20000

volatile uint64_t sink;
static int heavy_units = 3;
static int light_units = 1;

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

__attribute__((noinline)) void f_heavy(void)
{
	uint64_t acc = sink;
	for (int i = 0; i < heavy_units * UNIT; i++)
		acc = acc * 6364136223846793005ull + (uint64_t)i;
	sink = acc;
}

__attribute__((noinline)) void f_light(void)
{
	uint64_t acc = sink;
	for (int i = 0; i < light_units * UNIT; i++)
		acc = acc * 6364136223846793005ull + (uint64_t)i;
	sink = acc;
}

__attribute__((noinline)) void outer(double seconds)
{
	double end = now() + seconds;
	while (now() < end) {
		f_heavy();
		f_light();
	}
}

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 3.0;
	if (argc > 2 && sscanf(argv[2], "%d:%d", &heavy_units, &light_units) != 2) {
		fprintf(stderr, "usage: ground_truth [seconds] [heavy:light]\n");
		return 2;
	}
	outer(seconds);
	/* The kernel's own account of our CPU time, for tests to cross-check sample counts. */
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	fprintf(stderr, "ground_truth cpu_ms=%ld\n",
		ru.ru_utime.tv_sec * 1000L + ru.ru_utime.tv_usec / 1000 +
			ru.ru_stime.tv_sec * 1000L + ru.ru_stime.tv_usec / 1000);
	return 0;
}
