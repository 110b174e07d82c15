/* Context-switch-heavy benchmark workload: two processes pass one byte back
 * and forth over two pipes, argv[1] round trips (default 200000). Prints
 * "ptt_pingpong round_trips=N seconds=S rate=R cpu_ns_per_trip=C" to stderr.
 * argv[2] pins the two processes: "same" (both on CPU 0: every round trip is
 * two switches between them, the rate is bound by CPU) or "split" (parent on
 * CPU 0, child on CPU 1: four switches to and from idle, bound by wakeup
 * latency). Unpinned, the scheduler picks either, and the rate differs
 * threefold between them. */
#define _GNU_SOURCE
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int pin_to(int cpu)
{
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set)) {
		perror("ptt_pingpong: sched_setaffinity");
		return 1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	long rounds = argc > 1 ? atol(argv[1]) : 200000;
	int ping[2], pong[2];
	if (pipe(ping) || pipe(pong)) {
		perror("ptt_pingpong: pipe");
		return 1;
	}
	const char *pin = argc > 2 ? argv[2] : "";
	if (*pin && strcmp(pin, "same") != 0 && strcmp(pin, "split") != 0) {
		fprintf(stderr, "ptt_pingpong: pinning must be same or split, not %s\n", pin);
		return 2;
	}
	if (*pin && pin_to(0))
		return 1;
	char c = 'x';
	pid_t child = fork();
	if (child == 0) {
		/* Only its own ends stay open: when the parent dies (a recording
		 * stopped with SIGINT), read() sees end of file and the child ends. */
		close(ping[1]);
		close(pong[0]);
		if (strcmp(pin, "split") == 0 && pin_to(1))
			_exit(1);
		for (long i = 0; i < rounds; i++) {
			if (read(ping[0], &c, 1) != 1 || write(pong[1], &c, 1) != 1)
				_exit(1);
		}
		_exit(0);
	}
	close(ping[0]);
	close(pong[1]);
	double start = now_s();
	for (long i = 0; i < rounds; i++) {
		if (write(ping[1], &c, 1) != 1 || read(pong[0], &c, 1) != 1)
			return 1;
	}
	double secs = now_s() - start;
	int status = 0;
	waitpid(child, &status, 0);
	/* CPU time of both processes: less disturbed by other load than the rate. */
	struct rusage self, children;
	getrusage(RUSAGE_SELF, &self);
	getrusage(RUSAGE_CHILDREN, &children);
	double cpu = self.ru_utime.tv_sec + self.ru_stime.tv_sec + children.ru_utime.tv_sec +
		     children.ru_stime.tv_sec +
		     (self.ru_utime.tv_usec + self.ru_stime.tv_usec + children.ru_utime.tv_usec +
		      children.ru_stime.tv_usec) / 1e6;
	fprintf(stderr, "ptt_pingpong round_trips=%ld seconds=%.6f rate=%.1f cpu_ns_per_trip=%.1f\n",
		rounds, secs, rounds / secs, cpu * 1e9 / rounds);
	return 0;
}
