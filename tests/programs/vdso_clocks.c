/* main -> clock_work -> read_clocks -> clock_gettime (libc) ->
 * __vdso_clock_gettime -> the kernel: CPU-time clocks are not served from the
 * vDSO's data page, so the vDSO makes a system call, and most of this
 * program's samples are taken in the kernel below a vDSO frame.
 * Usage: vdso_clocks [seconds of CPU time] */
#include <stdlib.h>
#include <time.h>

volatile long clock_sink;

__attribute__((noinline)) long read_clocks(void)
{
	struct timespec a, b;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &a);
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &b);
	return a.tv_nsec ^ b.tv_nsec;
}

__attribute__((noinline)) void clock_work(double seconds)
{
	struct timespec start, now;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &start);
	do {
		for (int i = 0; i < 1000; i++)
			clock_sink += read_clocks();
		clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &now);
	} while ((double)(now.tv_sec - start.tv_sec) + (double)(now.tv_nsec - start.tv_nsec) * 1e-9 <
		 seconds);
}

int main(int argc, char **argv)
{
	clock_work(argc > 1 ? atof(argv[1]) : 3.0);
	return 0;
}
