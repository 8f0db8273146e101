/* SPDX-License-Identifier: MIT */
/*
 * fsaio-libaio-hot-loop: what a libaio costs per cached read, with as
 * little else in the loop as a program can have. It makes fio's calls for
 * hot 4 KiB random reads (one iocb per io_submit, one io_getevents after
 * each) on a file it has read into the page cache first, and prints
 * nanoseconds per I/O. Run it on the libaio to measure, side by side in
 * alternating runs (bench/README.md):
 *
 *   fsaio-libaio-hot-loop FILE [IOS [SPAN_MIB]]
 *   LD_PRELOAD=build/dropin/libfsaio-libaio.so fsaio-libaio-hot-loop FILE
 *   LD_PRELOAD=build/bench/libfsaio-libaio-floor.so fsaio-libaio-hot-loop FILE
 *
 * FILE must be on disk and at least SPAN_MIB (default 64) long; IOS
 * defaults to 2,000,000. Exit status 1 on any error or short read.
 */
#include <fcntl.h>
#include <libaio.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#define BS 4096
#define DEPTH 32

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int fail(const char *what, long r)
{
	fprintf(stderr, "fsaio-libaio-hot-loop: %s: %ld\n", what, r);
	return 1;
}

int main(int argc, char **argv)
{
	static char buf[DEPTH][BS] __attribute__((aligned(BS)));
	struct iocb cbs[DEPTH], *idle[DEPTH];
	struct io_event ev[DEPTH];
	io_context_t ctx = 0;
	long ios = argc > 2 ? atol(argv[2]) : 2000000, done = 0;
	uint64_t blocks = (uint64_t)(argc > 3 ? atol(argv[3]) : 64) * (1 << 20) / BS;
	uint64_t x = 88172645463325252ull;
	int fd, nidle = DEPTH;
	double t;
	long r;

	if (argc < 2 || ios <= 0 || !blocks) {
		fprintf(stderr, "usage: fsaio-libaio-hot-loop FILE [IOS [SPAN_MIB]]\n");
		return 2;
	}
	fd = open(argv[1], O_RDONLY);
	if (fd < 0)
		return fail("open", -1);
	for (uint64_t b = 0; b < blocks; b++)
		if (pread(fd, buf[0], BS, (off_t)(b * BS)) != BS)
			return fail("file shorter than the span at block", (long)b);
	r = io_setup(2 * DEPTH, &ctx);
	if (r)
		return fail("io_setup", r);
	for (int i = 0; i < DEPTH; i++)
		idle[i] = &cbs[i];
	t = now();
	for (long submitted = 0; done < ios;) {
		if (nidle && submitted < ios) {
			struct iocb *cb = idle[--nidle];

			/* xorshift64: random blocks, the same for every run. */
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			io_prep_pread(cb, fd, buf[cb - cbs], BS, (long long)(x % blocks * BS));
			r = io_submit(ctx, 1, &cb);
			if (r != 1)
				return fail("io_submit", r);
			submitted++;
		}
		r = io_getevents(ctx, 1, DEPTH, ev, NULL);
		if (r < 0)
			return fail("io_getevents", r);
		for (long i = 0; i < r; i++) {
			if (ev[i].res != BS)
				return fail("read", (long)ev[i].res);
			idle[nidle++] = ev[i].obj;
		}
		done += r;
	}
	t = now() - t;
	io_destroy(ctx);
	printf("%.1f ns per I/O, %.1fk IOPS\n", t / (double)ios * 1e9, (double)ios / t / 1e3);
	return 0;
}
