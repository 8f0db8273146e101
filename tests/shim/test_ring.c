/* SPDX-License-Identifier: MIT */
/*
 * The ring behind io_context_t, read directly as fio --userspace_reap and
 * libaio's own fast path read the kernel's: events appear between head and
 * tail, and a program that advances head itself frees the slots.
 */
#include <stdatomic.h>
#include <stdlib.h>
#include <unistd.h>

#include "t_aio.h"

TestSuite(ring, .init = t_setup, .fini = t_teardown);

/* fio's user_io_getevents(), with the orderings the kernel ABI implies. */
static long user_reap(io_context_t ctx, long max, struct io_event *ev)
{
	struct t_aio_ring *r = (void *)ctx;
	long i = 0;

	while (i < max) {
		unsigned head = __atomic_load_n(&r->head, __ATOMIC_RELAXED);

		if (head == __atomic_load_n(&r->tail, __ATOMIC_ACQUIRE))
			break;
		ev[i++] = r->events[head];
		__atomic_store_n(&r->head, (head + 1) % r->nr, __ATOMIC_RELEASE);
	}
	return i;
}

Test(ring, events_readable_from_the_ring)
{
	io_context_t ctx = t_ctx(8);
	struct t_aio_ring *r = (void *)ctx;
	int fd = t_file(65536, 50);
	static struct t_batch b;
	struct timespec zero = { 0, 0 };

	t_batch_reads(&b, 4, fd, 8192);
	T_EXPECT(io_submit(ctx, 4, b.list), 4);
	/* Cached reads: done when io_submit returned, so in the ring now. */
	cr_assert_eq(r->magic, T_RING_MAGIC);
	cr_assert_eq(user_reap(ctx, 4, b.ev), 4);
	t_batch_check(&b, 4, 8192, 50);
	/* What the program reaped is gone for io_getevents. */
	T_EXPECT(io_getevents(ctx, 0, 4, b.ev, &zero), 0);
	cr_assert_eq(r->head, r->tail);
	T_DONE(ctx, fd);
}

/* Reaping through the ring alone gives the slots back: a full context
 * accepts again, and many rounds wrap the ring. */
Test(ring, user_reaping_frees_slots)
{
	io_context_t ctx = t_ctx(4);
	struct t_aio_ring *r = (void *)ctx;
	int fd = t_file(65536, 51);
	char buf[64];
	struct iocb *cbs = calloc(r->nr, sizeof(*cbs));
	struct io_event *ev = calloc(r->nr, sizeof(*ev));
	unsigned total = 0;

	for (int round = 0; round < 5; round++) {
		unsigned n = 0;
		long got = 0;
		int ret;

		for (;;) {
			io_prep_pread(&cbs[n], fd, buf, 1, n);
			ret = T_CALL(t_submit1(ctx, &cbs[n]));
			if (ret != 1)
				break;
			n++;
			cr_assert_lt(n, r->nr);
		}
		cr_assert_eq(ret, -EAGAIN);
		cr_assert_geq(n, 4);
		while (got < n) {
			long k = user_reap(ctx, n - got, ev + got);

			if (!k)
				usleep(1000);
			got += k;
		}
		for (unsigned i = 0; i < n; i++)
			cr_assert_eq(ev[i].res, 1);
		total += n;
	}
	cr_assert_gt(total, r->nr, "the ring wrapped");
	T_EXPECT(io_destroy(ctx), 0);
	free(cbs);
	free(ev);
	close(fd);
}

/* Cold requests complete later: a program polling the ring sees them arrive. */
Test(ring, cold_completions_arrive_in_the_ring)
{
	io_context_t ctx = t_ctx(32);
	int fd = t_file(4 << 20, 52);
	static struct t_batch b;
	long got = 0;

	t_cold(fd);
	t_batch_reads(&b, 16, fd, 256 * 1024);
	T_EXPECT(io_submit(ctx, 16, b.list), 16);
	for (int spins = 0; got < 16; spins++) {
		got += user_reap(ctx, 16 - got, b.ev + got);
		cr_assert_lt(spins, T_WAIT_SEC * 1000, "only %ld of 16 events", got);
		if (got < 16)
			usleep(1000);
	}
	t_batch_check(&b, 16, 256 * 1024, 52);
	T_DONE(ctx, fd);
}
