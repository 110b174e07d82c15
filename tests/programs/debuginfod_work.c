/* The program a stripped twin of which is named through a local debuginfod
 * server: stripped_hot burns CPU under stripped_outer for [seconds] of its own CPU time
 * (not wall time: on a loaded machine the sample count stays the same).
 * Usage: debuginfod_work [seconds] */
#include <stdlib.h>
#include <time.h>

volatile unsigned long sink;

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

__attribute__((noinline)) static void stripped_hot(void)
{
	unsigned long a = sink;
	for (int i = 0; i < 200000; i++)
		a = a * 6364136223846793005ul + i;
	sink = a;
}

__attribute__((noinline)) static void stripped_outer(double seconds)
{
	double t = now();
	while (now() - t < seconds)
		stripped_hot();
}

int main(int argc, char **argv)
{
	stripped_outer(argc > 1 ? atof(argv[1]) : 1.0);
	return 0;
}
