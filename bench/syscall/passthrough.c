/* SPDX-License-Identifier: MIT */
/*
 * DESIGN: the cost of a system call made through syscall(2), in a bare
 * loop, for bench/syscall/passthrough.sh to compare plain (glibc's
 * syscall()) with the libaio drop-in preloaded (its syscall(), which hands
 * every number but the io_* ones to the kernel).
 *
 *   fsaio-syscall-loop getpid|futex ITERATIONS
 *
 * getpid: syscall(SYS_getpid); futex: syscall(SYS_futex, FUTEX_WAKE) on a
 * word nobody waits on (six arguments). Prints the nanoseconds per call in
 * the thread's CPU time (what the loop itself spent, user and kernel, not
 * the time other programs held the CPU) and in wall time.
 */
#include <linux/futex.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static int64_t ns(clockid_t clk)
{
	struct timespec t;

	clock_gettime(clk, &t);
	return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

int main(int argc, char **argv)
{
	static uint32_t word;
	int64_t cpu0, wall0, cpu, wall;
	long n, sink = 0;
	int futex;

	if (argc != 3 || (strcmp(argv[1], "getpid") && strcmp(argv[1], "futex")) ||
	    (n = atol(argv[2])) <= 0) {
		fprintf(stderr, "usage: %s getpid|futex ITERATIONS\n", argv[0]);
		return 2;
	}
	futex = strcmp(argv[1], "futex") == 0;
	cpu0 = ns(CLOCK_THREAD_CPUTIME_ID);
	wall0 = ns(CLOCK_MONOTONIC);
	if (futex)
		for (long i = 0; i < n; i++)
			sink += syscall(SYS_futex, &word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
	else
		for (long i = 0; i < n; i++)
			sink += syscall(SYS_getpid);
	cpu = ns(CLOCK_THREAD_CPUTIME_ID) - cpu0;
	wall = ns(CLOCK_MONOTONIC) - wall0;
	if (futex ? sink != 0 : sink != (long)getpid() * n) {
		fprintf(stderr, "%s: unexpected results (sum %ld)\n", argv[1], sink);
		return 1;
	}
	printf("%s cpu_ns_per_call %.2f wall_ns_per_call %.2f\n", argv[1], (double)cpu / (double)n,
	       (double)wall / (double)n);
	return 0;
}
