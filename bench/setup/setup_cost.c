/* SPDX-License-Identifier: MIT */
/*
 * DESIGN: what io_setup costs with many contexts alive, for a libaio
 * implementation chosen at run time (the kernel's through libaio, or a
 * drop-in preloaded). It makes ALIVE contexts and keeps them, then times
 * COUNT more io_setup calls (also kept), then COUNT / 10 io_setup +
 * io_destroy pairs (the kernel's io_destroy waits tens of milliseconds),
 * and prints the mean of each in microseconds. The contexts are left to
 * the process's exit. A mean over many
 * calls, side by side with the other implementation in the same minute,
 * is the figure to compare; one run alone says little on a busy machine.
 *
 *   fsaio-setup-cost [ALIVE [COUNT [NR_EVENTS]]]   (default 10000 1000 1)
 *
 * The kernel counts NR_EVENTS of every live context against
 * /proc/sys/fs/aio-max-nr (system-wide): ALIVE + COUNT contexts must fit.
 */
#include <libaio.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_us(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e6 + (double)t.tv_nsec / 1e3;
}

int main(int argc, char **argv)
{
	long alive = argc > 1 ? atol(argv[1]) : 10000;
	long count = argc > 2 ? atol(argv[2]) : 1000;
	int nr = argc > 3 ? atoi(argv[3]) : 1;
	io_context_t *ctx;
	double t0, t1, t2;
	long pairs;
	int ret;

	if (alive < 0 || count <= 0 || nr <= 0) {
		fprintf(stderr, "usage: fsaio-setup-cost [ALIVE [COUNT [NR_EVENTS]]]\n");
		return 2;
	}
	ctx = calloc((size_t)(alive + count), sizeof(*ctx));
	if (!ctx)
		return 1;
	for (long i = 0; i < alive; i++) {
		if ((ret = io_setup(nr, &ctx[i])) != 0) {
			fprintf(stderr, "fsaio-setup-cost: io_setup #%ld: %s\n", i, strerror(-ret));
			return 1;
		}
	}
	t0 = now_us();
	for (long i = 0; i < count; i++) {
		if ((ret = io_setup(nr, &ctx[alive + i])) != 0) {
			fprintf(stderr, "fsaio-setup-cost: io_setup #%ld: %s\n", alive + i,
				strerror(-ret));
			return 1;
		}
	}
	t1 = now_us();
	pairs = count / 10 ? count / 10 : 1;
	for (long i = 0; i < pairs; i++) {
		io_context_t c = 0;

		if ((ret = io_setup(nr, &c)) != 0 || (ret = io_destroy(c)) != 0) {
			fprintf(stderr, "fsaio-setup-cost: pair #%ld: %s\n", i, strerror(-ret));
			return 1;
		}
	}
	t2 = now_us();
	printf("alive %ld, nr_events %d: io_setup %.1f us, io_setup + io_destroy %.1f us\n",
	       alive, nr, (t1 - t0) / (double)count, (t2 - t1) / (double)pairs);
	return 0;
}
