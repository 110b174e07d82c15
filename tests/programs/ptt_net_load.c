/* Loopback network load for the NET_RX softirq cross-check: a sender process
 * streams TCP data over 127.0.0.1 to a receiver process for argv[1] seconds
 * (default 4). Every loopback transmit is received in the NET_RX softirq. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 4;
	int listener = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = 0};
	addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	socklen_t len = sizeof(addr);
	if (listener < 0 || bind(listener, (struct sockaddr *)&addr, sizeof(addr)) ||
	    listen(listener, 1) || getsockname(listener, (struct sockaddr *)&addr, &len)) {
		perror("ptt_net_load: listen");
		return 1;
	}
	pid_t child = fork();
	if (child == 0) {
		int s = accept(listener, NULL, NULL);
		char buf[65536];
		unsigned long long total = 0;
		ssize_t n;
		while ((n = read(s, buf, sizeof(buf))) > 0)
			total += (unsigned long long)n;
		fprintf(stderr, "ptt_net_load received=%llu\n", total);
		_exit(0);
	}
	close(listener);
	int s = socket(AF_INET, SOCK_STREAM, 0);
	if (s < 0 || connect(s, (struct sockaddr *)&addr, sizeof(addr))) {
		perror("ptt_net_load: connect");
		kill(child, SIGKILL);
		return 1;
	}
	/* Small writes: many packets, so many NET_RX softirqs. */
	int one = 1;
	setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	char buf[1024];
	memset(buf, 'x', sizeof(buf));
	double end = now_s() + seconds;
	while (now_s() < end) {
		if (write(s, buf, sizeof(buf)) < 0)
			break;
	}
	close(s);
	int status = 0;
	waitpid(child, &status, 0);
	return 0;
}
