/* Off-CPU ground truth: the main thread sleeps SECS in nanosleep, blocks SECS
 * on a pipe read (a child writes after SECS) and spins SECS on the CPU, each
 * in a function of its own called from main. Wall clock: one third each.
 * Usage: offcpu_mix [SECS [WAIT]]: with WAIT, it first and last waits WAIT
 * seconds in poll() (another kernel path), so that a tool started after it
 * sees every phase. */
#define _GNU_SOURCE
#include <stdio.h>
#include <poll.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

__attribute__((noinline)) void sleep_phase(double secs)
{
	struct timespec ts = {(time_t)secs, (long)((secs - (time_t)secs) * 1e9)};
	while (nanosleep(&ts, &ts) != 0)
		;
}

__attribute__((noinline)) void pipe_phase(double secs)
{
	int fds[2];
	if (pipe(fds) != 0) {
		perror("offcpu_mix: pipe");
		exit(1);
	}
	/* The child writes at start + secs, however late it got to run. */
	struct timespec at;
	clock_gettime(CLOCK_MONOTONIC, &at);
	at.tv_sec += (time_t)secs;
	at.tv_nsec += (long)((secs - (time_t)secs) * 1e9);
	if (at.tv_nsec >= 1000000000L) {
		at.tv_sec += 1;
		at.tv_nsec -= 1000000000L;
	}
	pid_t child = fork();
	if (child == 0) {
		while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &at, NULL) != 0)
			;
		if (write(fds[1], "x", 1) != 1)
			_exit(1);
		_exit(0);
	}
	char c;
	if (read(fds[0], &c, 1) != 1) {
		perror("offcpu_mix: read");
		exit(1);
	}
	waitpid(child, NULL, 0);
	close(fds[0]);
	close(fds[1]);
}

volatile unsigned long sink;

__attribute__((noinline)) void burn_phase(double secs)
{
	double end = now_s() + secs;
	unsigned long x = 1;
	while (now_s() < end) {
		for (int i = 0; i < 10000; i++)
			x = x * 6364136223846793005ul + 1442695040888963407ul;
	}
	sink = x;
}

__attribute__((noinline)) void wait_phase(double secs)
{
	double end = now_s() + secs;
	while (now_s() < end)
		poll(NULL, 0, (int)((end - now_s()) * 1000) + 1);
}

int main(int argc, char **argv)
{
	double secs = argc > 1 ? atof(argv[1]) : 1.0;
	double wait = argc > 2 ? atof(argv[2]) : 0;
	if (wait > 0)
		wait_phase(wait);
	sleep_phase(secs);
	pipe_phase(secs);
	burn_phase(secs);
	if (wait > 0)
		wait_phase(wait);
	return 0;
}
