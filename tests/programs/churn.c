/* Process churn for the memory/fd soak test and benchmark: starts `rate`
 * short processes per second for `seconds` seconds, cycling through
 *   storm_child 3    (a named function, storm_work, burning 3 ms of CPU),
 *   /bin/true, /bin/sh -c :, /usr/bin/env true   (exec, ld.so, exit).
 * Children are reaped as they exit; at most `rate` run at once.
 * Usage: churn RATE SECONDS STORM_CHILD */
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	if (argc < 4) {
		fprintf(stderr, "usage: churn RATE SECONDS STORM_CHILD\n");
		return 2;
	}
	const double rate = atof(argv[1]);
	const double seconds = atof(argv[2]);
	char *const cmds[4][4] = {
		{argv[3], "3", NULL, NULL},
		{"/bin/true", NULL, NULL, NULL},
		{"/bin/sh", "-c", ":", NULL},
		{"/usr/bin/env", "true", NULL, NULL},
	};
	const double start = now_s();
	long started = 0, running = 0;
	while (now_s() - start < seconds) {
		while (running > 0 && waitpid(-1, NULL, WNOHANG) > 0)
			running--;
		const double due = start + started / rate;
		const double now = now_s();
		if (now < due) {
			struct timespec ts = {0, (long)((due - now) * 1e9)};
			nanosleep(&ts, NULL);
			continue;
		}
		if (running >= (long)rate) {
			if (waitpid(-1, NULL, 0) > 0)
				running--;
			continue;
		}
		pid_t pid;
		if (posix_spawn(&pid, cmds[started % 4][0], NULL, NULL, cmds[started % 4], environ) == 0)
			running++;
		started++;
	}
	while (waitpid(-1, NULL, 0) > 0)
		;
	printf("%ld\n", started);
	return 0;
}
