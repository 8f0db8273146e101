/* SPDX-License-Identifier: MIT */
/*
 * IOCB_FLAG_RESFD: each event adds exactly 1 to the iocb's eventfd, after
 * the event is in the ring.
 */
#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "t_aio.h"

TestSuite(resfd, .init = t_setup, .fini = t_teardown);

static uint64_t efd_read(int efd)
{
	uint64_t v = 0;

	if (read(efd, &v, sizeof(v)) != sizeof(v))
		return 0;
	return v;
}

/* What the eventfd counts once want events were signalled: its signal may
 * trail an event a program already reaped (the kernel, too, puts the event
 * in the ring before it signals), so collect for up to T_WAIT_SEC, then
 * look once more for anything beyond. */
static uint64_t efd_count(int efd, uint64_t want)
{
	uint64_t sum = 0;

	for (int ms = 0; sum < want && ms < T_WAIT_SEC * 1000; ms++) {
		struct pollfd pfd = { .fd = efd, .events = POLLIN };

		if (poll(&pfd, 1, 1) == 1)
			sum += efd_read(efd);
	}
	return sum + efd_read(efd);
}

Test(resfd, one_per_event)
{
	io_context_t ctx = t_ctx(64);
	int fd = t_file(1 << 20, 30), efd = eventfd(0, EFD_NONBLOCK);
	static char buf[40][4096];
	struct iocb cb[40], *list[40];
	struct io_event ev[40];

	cr_assert_geq(efd, 0);
	t_cold(fd);
	/* Hot and cold requests, some without the flag. */
	for (int i = 0; i < 40; i++) {
		io_prep_pread(&cb[i], fd, buf[i], 4096, (long long)i * 20000);
		if (i % 4 != 3)
			io_set_eventfd(&cb[i], efd);
		list[i] = &cb[i];
	}
	T_EXPECT(io_submit(ctx, 40, list), 40);
	t_reap(ctx, 40, ev);
	cr_assert_eq(efd_count(efd, 30), 30);
	T_EXPECT(io_destroy(ctx), 0);
	close(fd);
	close(efd);
}

/* The eventfd says "ready" only once the event can be reaped. */
Test(resfd, signalled_after_publish)
{
	io_context_t ctx = t_ctx(8);
	int fd = t_file(1 << 20, 31), efd = eventfd(0, 0);
	char buf[65536];
	struct iocb cb;
	struct io_event ev;
	struct timespec zero = { 0, 0 };
	struct pollfd pfd = { .fd = efd, .events = POLLIN };

	t_cold(fd);
	io_prep_pread(&cb, fd, buf, sizeof(buf), 0);
	io_set_eventfd(&cb, efd);
	T_EXPECT(t_submit1(ctx, &cb), 1);
	cr_assert_eq(poll(&pfd, 1, T_WAIT_SEC * 1000), 1);
	T_EXPECT(io_getevents(ctx, 1, 1, &ev, &zero), 1);
	cr_assert_eq(ev.res, (long)sizeof(buf));
	cr_assert_eq(efd_read(efd), 1);
	T_EXPECT(io_destroy(ctx), 0);
	close(fd);
	close(efd);
}

/* The kernel holds its own reference: the caller may close the eventfd. */
Test(resfd, caller_may_close_it)
{
	io_context_t ctx = t_ctx(8);
	int fd = t_file(1 << 20, 32), efd = eventfd(0, 0), other;
	char buf[4096];
	struct iocb cb;
	struct io_event ev;

	t_cold(fd);
	io_prep_pread(&cb, fd, buf, sizeof(buf), 4096 * 100);
	io_set_eventfd(&cb, efd);
	T_EXPECT(t_submit1(ctx, &cb), 1);
	close(efd);
	/* Whatever takes the number now must not be written to. */
	other = eventfd(0, EFD_NONBLOCK);
	t_reap(ctx, 1, &ev);
	cr_assert_eq(ev.res, 4096);
	cr_assert_eq(efd_read(other), 0);
	T_EXPECT(io_destroy(ctx), 0);
	close(fd);
	close(other);
}

/* The number is looked up at each submit: once it names another eventfd,
 * the events go there, and the first one gets nothing more. */
Test(resfd, a_reused_number_names_the_new_eventfd)
{
	io_context_t ctx = t_ctx(8);
	int fd = t_file(1 << 20, 33), efd = eventfd(0, EFD_NONBLOCK), first, second;
	char buf[4096];
	struct iocb cb;
	struct io_event ev;

	cr_assert_geq(efd, 0);
	for (int round = 0; round < 3; round++) {
		io_prep_pread(&cb, fd, buf, sizeof(buf), 4096 * round);
		io_set_eventfd(&cb, efd);
		T_EXPECT(t_submit1(ctx, &cb), 1);
		t_reap(ctx, 1, &ev);
		cr_assert_eq(efd_count(efd, 1), 1);
	}
	/* Keep the first eventfd, put another at its number. */
	first = dup(efd);
	second = eventfd(0, EFD_NONBLOCK);
	cr_assert(first >= 0 && second >= 0);
	cr_assert_eq(dup2(second, efd), efd);
	close(second);
	t_cold(fd);
	for (int round = 0; round < 3; round++) {
		io_prep_pread(&cb, fd, buf, sizeof(buf), 4096 * (100 + round));
		io_set_eventfd(&cb, efd);
		T_EXPECT(t_submit1(ctx, &cb), 1);
		t_reap(ctx, 1, &ev);
		cr_assert_eq(ev.res, 4096);
		cr_assert_eq(efd_count(efd, 1), 1);
		cr_assert_eq(efd_read(first), 0);
	}
	T_EXPECT(io_destroy(ctx), 0);
	close(fd);
	close(efd);
	close(first);
}

/* More eventfds than a context keeps at hand, in turns: each counts
 * exactly its own events. */
Test(resfd, many_eventfds_in_turn)
{
	enum { NEFD = 7, PER = 5 };
	io_context_t ctx = t_ctx(64);
	int fd = t_file(1 << 20, 34), efd[NEFD];
	static char buf[NEFD * PER][4096];
	struct iocb cb[NEFD * PER], *list[NEFD * PER];
	struct io_event ev[NEFD * PER];

	for (int e = 0; e < NEFD; e++)
		cr_assert_geq(efd[e] = eventfd(0, EFD_NONBLOCK), 0);
	t_cold(fd);
	for (int round = 0; round < 3; round++) {
		for (int i = 0; i < NEFD * PER; i++) {
			io_prep_pread(&cb[i], fd, buf[i], 4096, 4096LL * (i + round * NEFD * PER));
			io_set_eventfd(&cb[i], efd[(i + round) % NEFD]);
			list[i] = &cb[i];
		}
		T_EXPECT(io_submit(ctx, NEFD * PER, list), NEFD * PER);
		t_reap(ctx, NEFD * PER, ev);
		for (int e = 0; e < NEFD; e++)
			cr_assert_eq(efd_count(efd[e], PER), PER, "eventfd %d, round %d", e, round);
	}
	T_EXPECT(io_destroy(ctx), 0);
	for (int e = 0; e < NEFD; e++)
		close(efd[e]);
	close(fd);
}
