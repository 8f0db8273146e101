/* SPDX-License-Identifier: MIT */
/*
 * io_getevents and io_pgetevents: min_nr/nr/timeout rules and signals.
 */
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include "t_aio.h"

TestSuite(getevents, .init = t_setup, .fini = t_teardown);

Test(getevents, argument_rules)
{
	io_context_t ctx = t_ctx(8);
	struct io_event ev[4];
	struct timespec zero = { 0, 0 }, ms = { 0, 1000000 };

	T_EXPECT(io_getevents(ctx, -1, 1, ev, &ms), -EINVAL);
	T_EXPECT(io_getevents(ctx, 2, 1, ev, &ms), -EINVAL);
	T_EXPECT(io_getevents(ctx, 0, -1, ev, &ms), -EINVAL);
	/* {0,0} polls; a relative timeout returns what is there (nothing). */
	T_EXPECT(io_getevents(ctx, 1, 4, ev, &zero), 0);
	T_EXPECT(io_getevents(ctx, 1, 4, ev, &ms), 0);
	/* min_nr 0 returns at once even without a timeout. */
	T_EXPECT(io_getevents(ctx, 0, 4, ev, NULL), 0);
	T_EXPECT(io_destroy(ctx), 0);
}

Test(getevents, min_nr_and_nr)
{
	io_context_t ctx = t_ctx(16);
	int fd = t_file(65536, 20);
	static struct t_batch b;
	struct timespec zero = { 0, 0 }, wait = { T_WAIT_SEC, 0 };

	t_batch_reads(&b, 6, fd, 4096);
	T_EXPECT(io_submit(ctx, 6, b.list), 6);
	/* nr bounds what one call takes; the rest stays for the next. */
	T_EXPECT(io_getevents(ctx, 2, 2, b.ev, &wait), 2);
	T_EXPECT(io_getevents(ctx, 4, 6, b.ev + 2, &wait), 4);
	T_EXPECT(io_getevents(ctx, 0, 6, b.ev, &zero), 0);
	T_DONE(ctx, fd);
}

static void eintr_case(int sa_flags)
{
	io_context_t ctx = t_ctx(8);
	struct io_event ev;
	struct timespec ts = { T_WAIT_SEC, 0 };
	struct t_poker pk;

	t_count_signal(SIGUSR1, sa_flags);
	t_poker_start(&pk, SIGUSR1);
	/* Nothing will complete: only the signal ends the wait. */
	T_EXPECT(io_getevents(ctx, 1, 1, &ev, &ts), -EINTR);
	t_poker_stop(&pk);
	cr_assert_geq(t_signals_handled(), 1);
	T_EXPECT(io_destroy(ctx), 0);
}

Test(getevents, eintr_without_sa_restart)
{
	eintr_case(0);
}

/* The kernel's io_getevents is never restarted, SA_RESTART or not. */
Test(getevents, eintr_with_sa_restart)
{
	eintr_case(SA_RESTART);
}

/* io_pgetevents unblocks the mask's signals only while it waits. */
Test(getevents, pgetevents_mask)
{
	io_context_t ctx = t_ctx(8);
	sigset_t block, during, now;
	struct io_event ev;
	struct timespec ts = { T_WAIT_SEC, 0 };

	t_count_signal(SIGUSR2, 0);
	sigemptyset(&block);
	sigaddset(&block, SIGUSR2);
	cr_assert_eq(pthread_sigmask(SIG_BLOCK, &block, NULL), 0);
	/* Pending, blocked: delivered as soon as the wait unblocks it. */
	cr_assert_eq(pthread_kill(pthread_self(), SIGUSR2), 0);
	cr_assert_eq(t_signals_handled(), 0);
	pthread_sigmask(SIG_SETMASK, NULL, &during);
	sigdelset(&during, SIGUSR2);
	T_EXPECT(io_pgetevents(ctx, 1, 1, &ev, &ts, &during), -EINTR);
	cr_assert_eq(t_signals_handled(), 1);
	pthread_sigmask(SIG_SETMASK, NULL, &now);
	cr_assert(sigismember(&now, SIGUSR2), "the caller's mask is back after the wait");
	T_EXPECT(io_destroy(ctx), 0);
}

/* An event ends the wait of a sleeping io_getevents. */
struct later {
	io_context_t ctx;
	int fd;
	char buf[4096];
	struct iocb cb;
};

static void *submit_later(void *arg)
{
	struct later *l = arg;
	struct iocb *list[1] = { &l->cb };

	usleep(50000);
	io_prep_pread(&l->cb, l->fd, l->buf, sizeof(l->buf), 0);
	return (void *)(intptr_t)io_submit(l->ctx, 1, list);
}

Test(getevents, wakes_on_completion)
{
	static struct later l;
	struct io_event ev;
	struct timespec ts = { T_WAIT_SEC, 0 };
	pthread_t th;
	void *ret;

	l.ctx = t_ctx(8);
	l.fd = t_file(8192, 21);
	t_cold(l.fd);
	cr_assert_eq(pthread_create(&th, NULL, submit_later, &l), 0);
	T_EXPECT(io_getevents(l.ctx, 1, 1, &ev, &ts), 1);
	pthread_join(th, &ret);
	cr_assert_eq((intptr_t)ret, 1);
	cr_assert_eq(ev.res, 4096);
	t_check(l.buf, 4096, 0, 21);
	T_EXPECT(io_destroy(l.ctx), 0);
}
