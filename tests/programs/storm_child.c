/* One member of a process storm: burns about `ms` milliseconds of CPU in
 * storm_work, then exits. Usage: storm_child [ms] (default 20). */
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

volatile uint64_t storm_sink;

static double cpu_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

__attribute__((noinline)) void storm_work(double ms)
{
	uint64_t acc = storm_sink;
	double end = cpu_ms() + ms;
	while (cpu_ms() < end)
		for (int i = 0; i < 20000; i++)
			acc = acc * 2862933555777941757ull + 3037000493ull;
	storm_sink = acc;
}

int main(int argc, char **argv)
{
	storm_work(argc > 1 ? atof(argv[1]) : 20.0);
	return 0;
}
