/* A SIGPROF handler that spins, run on a CPU-time timer (setitimer
 * ITIMER_PROF, every 2 ms of the process's CPU time, the way a sampling
 * profiler's signals arrive): a good share of the samples are taken inside
 * the handler, on top of the signal frame the kernel pushed over whatever
 * the thread was running.
 * As a program: main -> work -> interrupted_loop spins for [seconds] of CPU
 * time while the handler interrupts it. Built with -DPRELOAD, a library whose
 * constructor installs the handler and the timer in any process it is
 * preloaded into (a JVM: compiled Java code is interrupted).
 * Usage: signal_spin [seconds] */
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>

volatile uint64_t signal_sink;

__attribute__((noinline)) void spin_handler(int sig)
{
	uint64_t acc = signal_sink + (uint64_t)sig;
	for (int i = 0; i < 800000; i++)
		acc = acc * 6364136223846793005ull + (uint64_t)i;
	signal_sink = acc;
}

#ifdef PRELOAD
__attribute__((constructor))
#endif
void install_spin_handler(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = spin_handler;
	sa.sa_flags = SA_RESTART;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGPROF, &sa, NULL) != 0)
		abort();
	struct itimerval every = {{0, 2000}, {0, 2000}};
	if (setitimer(ITIMER_PROF, &every, NULL) != 0)
		abort();
}

#ifndef PRELOAD
/* Spins until the process has used `seconds` of CPU time. */
__attribute__((noinline)) void interrupted_loop(double seconds)
{
	const clock_t end = clock() + (clock_t)(seconds * CLOCKS_PER_SEC);
	uint64_t acc = 1;
	while (clock() < end)
		for (int i = 0; i < 100000; i++)
			acc = acc * 2862933555777941757ull + (uint64_t)i;
	signal_sink += acc;
}

__attribute__((noinline)) void work(double seconds)
{
	interrupted_loop(seconds);
	signal_sink++; /* not a tail call */
}

int main(int argc, char **argv)
{
	install_spin_handler();
	work(argc > 1 ? atof(argv[1]) : 3.0);
	return 0;
}
#endif
