/* main -> recurse x DEPTH -> burn, without frame pointers: a stack deeper than
 * both the default 64 KiB copy and the 512 frames a sample keeps (each
 * recurse frame holds 64 bytes or more: DEPTH 3000 is about 200 KiB). With
 * "thread", the recursion runs in a second thread (glibc's default stack)
 * and main waits for it.
 * Usage: deep_recursion [seconds] [depth] [thread] */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

volatile uint64_t recursion_sink;

/* Spins for `seconds` of this process's CPU time. */
__attribute__((noinline)) void burn(double seconds)
{
	const clock_t end = clock() + (clock_t)(seconds * CLOCKS_PER_SEC);
	uint64_t acc = recursion_sink;
	while (clock() < end)
		for (int i = 0; i < 100000; i++)
			acc = acc * 2862933555777941757ull + (uint64_t)i;
	recursion_sink = acc;
}

__attribute__((noinline)) uint64_t recurse(int depth, double seconds)
{
	volatile char pad[48];
	pad[0] = (char)depth;
	if (depth == 0)
		burn(seconds);
	else
		recursion_sink += recurse(depth - 1, seconds); /* not a tail call */
	return pad[0];
}

struct job {
	int depth;
	double seconds;
};

static void *run(void *arg)
{
	struct job *j = arg;
	recurse(j->depth, j->seconds);
	return NULL;
}

int main(int argc, char **argv)
{
	struct job j = {argc > 2 ? atoi(argv[2]) : 3000, argc > 1 ? atof(argv[1]) : 3.0};
	if (argc > 3) {
		pthread_t t;
		if (pthread_create(&t, NULL, run, &j) != 0)
			return 1;
		pthread_join(t, NULL);
	} else {
		run(&j);
	}
	return 0;
}
