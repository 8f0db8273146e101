/* SPDX-License-Identifier: MIT */
/*
 * aio_suspend and lio_listio(LIO_WAIT) as cancellation points: a
 * pthread_cancel sent while the thread sleeps there ends the sleep at once,
 * and the requests it waited for go on: they complete, and aio_error and
 * aio_return report them, as if nobody had waited.
 *
 * The cancel is sent only once the waiter is seen asleep in the call (its
 * /proc state), so that it lands in the sleep, not in a check on entry.
 * Each wait is on a pipe read that cannot complete until the test writes.
 */
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "t_px.h"

#ifdef __SANITIZE_ADDRESS__
#include <sanitizer/asan_interface.h>
#endif

TestSuite(cancelpoint, .init = t_setup, .fini = t_teardown);

enum how { SUSPEND, SUSPEND_TIMED, LIO_WAITING };

struct waiter {
	enum how how;
	struct aiocb cb;
	char buf[8];
	_Atomic pid_t tid;          /* set just before the call that sleeps */
	_Atomic int returned;       /* the call returned instead of being cancelled */
};

/* A cancelled thread is unwound without AddressSanitizer knowing: the
 * frames it leaves stay poisoned under the stack its exit then uses (a
 * false report in glibc's thread exit). Unpoisoned here, from the deepest
 * point of the unwinding up. */
static void unwinding(void *arg)
{
	(void)arg;
#ifdef __SANITIZE_ADDRESS__
	__asan_handle_no_return();
#endif
}

static void *wait_there(void *arg)
{
	struct waiter *w = arg;
	const struct aiocb *list[1] = { &w->cb };
	struct aiocb *lio[1] = { &w->cb };
	struct timespec ts = { 3600, 0 };

	pthread_cleanup_push(unwinding, NULL);
	w->cb.aio_lio_opcode = LIO_READ;
	if (w->how != LIO_WAITING)
		cr_assert_eq(aio_read(&w->cb), 0);
	atomic_store(&w->tid, (pid_t)syscall(SYS_gettid));
	if (w->how == LIO_WAITING)
		(void)lio_listio(LIO_WAIT, lio, 1, NULL);
	else
		(void)aio_suspend(list, 1, w->how == SUSPEND_TIMED ? &ts : NULL);
	atomic_store(&w->returned, 1);
	pthread_cleanup_pop(0);
	return NULL;
}

/* Thread tid of this process is asleep ('S' in its stat). */
static bool asleep(pid_t tid)
{
	char path[64], stat[512];
	const char *p;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/self/task/%d/stat", (int)tid);
	fd = open(path, O_RDONLY);
	cr_assert_geq(fd, 0);
	n = read(fd, stat, sizeof(stat) - 1);
	close(fd);
	cr_assert_gt(n, 0);
	stat[n] = 0;
	p = strrchr(stat, ')');
	cr_assert_not_null(p);
	return p[2] == 'S';
}

/* A waiter on a read of a new pipe p, seen asleep in its call. */
static pthread_t start_waiter(struct waiter *w, int p[2], enum how how)
{
	pthread_t th;

	cr_assert_not_null(w);
	cr_assert_eq(pipe(p), 0);
	w->how = how;
	t_cb(&w->cb, p[0], w->buf, sizeof(w->buf), 0, LIO_READ);
	cr_assert_eq(pthread_create(&th, NULL, wait_there, w), 0);
	while (!atomic_load(&w->tid))
		usleep(1000);
	/* Asleep three looks in a row: in the call's sleep, not on its way. */
	for (int seen = 0; seen < 3; usleep(2000))
		seen = asleep(atomic_load(&w->tid)) ? seen + 1 : 0;
	return th;
}

/* Sleep in the call, be cancelled there; the request completes after. */
static void cancelled_while_asleep(enum how how)
{
	struct waiter *w = calloc(1, sizeof(*w));
	struct timespec dl;
	pthread_t th;
	void *ret = NULL;
	int p[2], j;

	th = start_waiter(w, p, how);
	cr_assert_eq(pthread_cancel(th), 0);
	clock_gettime(CLOCK_REALTIME, &dl);
	dl.tv_sec += T_WAIT_SEC;
	j = pthread_timedjoin_np(th, &ret, &dl);
	if (j == ETIMEDOUT) {
		/* Let it go, so that the process can end. */
		cr_assert_eq(write(p[1], "x", 1), 1);
		pthread_join(th, &ret);
	}
	cr_assert_eq(j, 0, "the waiter was not cancelled in its sleep (%s)", strerror(j));
	cr_assert_eq(ret, PTHREAD_CANCELED);
	cr_assert_eq(atomic_load(&w->returned), 0);

	/* The request was not touched by the cancel: it completes. */
	cr_assert_eq(aio_error(&w->cb), EINPROGRESS);
	cr_assert_eq(write(p[1], "abc", 3), 3);
	T_RETURNS(&w->cb, 3);
	cr_assert_eq(memcmp(w->buf, "abc", 3), 0);

	/* And waiting works as before, in this thread. */
	cr_assert_eq(aio_read(&w->cb), 0);
	cr_assert_eq(write(p[1], "de", 2), 2);
	T_RETURNS(&w->cb, 2);
	t_close_pair(p);
	free(w);
}

Test(cancelpoint, aio_suspend_without_timeout)
{
	cancelled_while_asleep(SUSPEND);
}

Test(cancelpoint, aio_suspend_with_timeout)
{
	cancelled_while_asleep(SUSPEND_TIMED);
}

/* glibc's lio_listio disables cancellation for its LIO_WAIT wait (it
 * returns once the list is complete, and the cancel is left pending);
 * the drop-in's wait is a cancellation point, like aio_suspend's. */
Test(cancelpoint, lio_listio_wait)
{
	struct waiter *w;
	pthread_t th;
	void *ret = NULL;
	int p[2];

	if (t_dropin()) {
		cancelled_while_asleep(LIO_WAITING);
		return;
	}
	w = calloc(1, sizeof(*w));
	th = start_waiter(w, p, LIO_WAITING);
	cr_assert_eq(pthread_cancel(th), 0);
	usleep(100 * 1000);
	cr_assert_eq(pthread_tryjoin_np(th, &ret), EBUSY);
	cr_assert_eq(write(p[1], "abc", 3), 3);
	pthread_join(th, &ret);
	cr_assert_eq(atomic_load(&w->returned), 1);
	cr_assert_eq(aio_return(&w->cb), 3);
	t_close_pair(p);
	free(w);
}
