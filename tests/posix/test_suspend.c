/* SPDX-License-Identifier: MIT */
/*
 * aio_suspend: returns at once when one entry is complete, EAGAIN when the
 * timeout passes first, EINTR when a signal handler runs, NULL entries
 * ignored.
 */
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include "t_px.h"

TestSuite(suspend, .init = t_setup, .fini = t_teardown);

static char buf[64];

Test(suspend, done_entry_returns_at_once)
{
	struct aiocb cb, never;
	const struct aiocb *list[3] = { NULL, &never, &cb };
	struct timespec zero = { 0, 0 }, bad = { 0, 2000000000L };
	int fd = t_file(4096, 40), p[2];

	cr_assert_eq(pipe(p), 0);
	t_read_start(&never, p[0], buf, sizeof(buf), 0);
	t_read_start(&cb, fd, buf, sizeof(buf), 0);
	cr_assert_eq(t_wait(&cb), 0);
	cr_assert_eq(aio_suspend(list, 3, &zero), 0);
	cr_assert_eq(aio_suspend(list, 3, NULL), 0);
	/* Whatever the timeout says. */
	cr_assert_eq(aio_suspend(list, 3, &bad), 0);
	cr_assert_eq(write(p[1], "y", 1), 1);
	T_RETURNS(&never, 1);
	t_close_pair(p);
	close(fd);
}

Test(suspend, timeout_is_eagain)
{
	struct aiocb cb;
	const struct aiocb *list[2] = { &cb, NULL };
	struct timespec zero = { 0, 0 }, brief = { 0, 20 * 1000 * 1000 };
	int p[2];

	cr_assert_eq(pipe(p), 0);
	t_read_start(&cb, p[0], buf, sizeof(buf), 0);
	errno = 0;
	cr_assert_eq(aio_suspend(list, 2, &zero), -1);
	cr_assert_eq(errno, EAGAIN);
	errno = 0;
	cr_assert_eq(aio_suspend(list, 2, &brief), -1);
	cr_assert_eq(errno, EAGAIN);
	cr_assert_eq(t_feed(&cb, p[1], "z"), 1);
	t_close_pair(p);
}

static void on_alarm(int sig)
{
	(void)sig;
}

static void *poke(void *arg)
{
	pthread_t main_thread = *(pthread_t *)arg;

	/* Until the waiter is seen interrupted (it sets the flag). */
	for (int i = 0; i < 3000; i++) {
		pthread_kill(main_thread, SIGUSR1);
		usleep(10000);
		if (__atomic_load_n(&((int *)arg)[sizeof(pthread_t) / sizeof(int)], __ATOMIC_ACQUIRE))
			break;
	}
	return NULL;
}

/* A handler without SA_RESTART ends an untimed wait with EINTR; with a
 * timeout, any handler does. */
static void interrupted(bool restart, bool timed)
{
	struct sigaction sa = { .sa_handler = on_alarm, .sa_flags = restart ? SA_RESTART : 0 };
	struct aiocb cb;
	const struct aiocb *list[1] = { &cb };
	struct timespec ts = { T_WAIT_SEC, 0 };
	struct { pthread_t t; int done; } arg = { pthread_self(), 0 };
	pthread_t th;
	int p[2];

	sigemptyset(&sa.sa_mask);
	cr_assert_eq(sigaction(SIGUSR1, &sa, NULL), 0);
	cr_assert_eq(pipe(p), 0);
	t_read_start(&cb, p[0], buf, sizeof(buf), 0);
	cr_assert_eq(pthread_create(&th, NULL, poke, &arg), 0);
	errno = 0;
	int r = aio_suspend(list, 1, timed ? &ts : NULL);
	int e = errno;
	__atomic_store_n(&arg.done, 1, __ATOMIC_RELEASE);
	pthread_join(th, NULL);
	cr_assert_eq(r, -1);
	cr_assert_eq(e, EINTR);
	cr_assert_eq(t_feed(&cb, p[1], "z"), 1);
	t_close_pair(p);
}

Test(suspend, signal_is_eintr)
{
	interrupted(false, false);
}

Test(suspend, signal_is_eintr_with_a_timeout_even_with_sa_restart)
{
	interrupted(true, true);
}

/* Many threads suspended on one request each; all are woken. */
static void *waiter(void *arg)
{
	struct aiocb *cb = arg;

	return (void *)(intptr_t)t_wait(cb);
}

Test(suspend, many_waiters)
{
	enum { T = 8 };
	static struct aiocb cbs[T];
	static char bufs[T][8];
	pthread_t th[T];
	int p[T][2];

	for (int i = 0; i < T; i++) {
		cr_assert_eq(pipe(p[i]), 0);
		t_read_start(&cbs[i], p[i][0], bufs[i], 8, 0);
		cr_assert_eq(pthread_create(&th[i], NULL, waiter, &cbs[i]), 0);
	}
	for (int i = 0; i < T; i++)
		cr_assert_eq(write(p[i][1], "abc", 3), 3);
	for (int i = 0; i < T; i++) {
		void *ret;

		pthread_join(th[i], &ret);
		cr_assert_eq((intptr_t)ret, 0);
		cr_assert_eq(aio_return(&cbs[i]), 3);
		close(p[i][0]);
		close(p[i][1]);
	}
}

/* With only requests in progress, a timeout out of range: the drop-in
 * answers EINVAL; glibc 2.36 stops on an assertion (not run there). */
Test(suspend, bad_timeout_is_einval)
{
	struct aiocb cb;
	const struct aiocb *list[1] = { &cb };
	struct timespec bad[] = { { 0, 1000000000L }, { 0, -1 }, { -1, 0 } };
	int p[2];

	if (!t_dropin())
		return;
	cr_assert_eq(pipe(p), 0);
	t_read_start(&cb, p[0], buf, sizeof(buf), 0);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		errno = 0;
		cr_assert_eq(aio_suspend(list, 1, &bad[i]), -1);
		cr_assert_eq(errno, EINVAL);
	}
	cr_assert_eq(write(p[1], "y", 1), 1);
	cr_assert_eq(t_wait(&cb), 0);
	t_close_pair(p);
}

/* A copy of an aiocb in progress says EINPROGRESS but is no request: it
 * will never complete, so aio_suspend does not sleep on it. */
Test(suspend, copy_of_a_request_in_progress_returns_at_once)
{
	struct aiocb cb, copy;
	const struct aiocb *list[1] = { &copy };
	struct timespec ts = { T_WAIT_SEC, 0 };
	int p[2];

	cr_assert_eq(pipe(p), 0);
	t_read_start(&cb, p[0], buf, sizeof(buf), 0);
	/* A copy made while it is in progress: its fields, and its status
	 * read as aio_error reads it (a plain memcpy races with the
	 * completion's store, as ThreadSanitizer says). */
	t_cb(&copy, p[0], buf, sizeof(buf), 0, LIO_READ);
	copy.__error_code = aio_error(&cb);
	cr_assert_eq(aio_error(&copy), EINPROGRESS);
	cr_assert_eq(aio_suspend(list, 1, &ts), 0);
	cr_assert_eq(t_feed(&cb, p[1], "y"), 1);
	t_close_pair(p);
}
