/* SPDX-License-Identifier: MIT */
/*
 * aio_cancel: one request or all on an fd; AIO_CANCELED, AIO_NOTCANCELED,
 * AIO_ALLDONE; ECANCELED in aio_error; the notification of a cancelled
 * request.
 *
 * A request that waits has to be made deterministic: reads from an empty
 * pipe wait until the test writes. glibc runs one request per fd at a
 * time, so the first read on the pipe is running in its thread (not
 * cancellable) and the ones after it are queued (cancellable). The
 * drop-in waits for the pipe without a thread: every read that has not
 * started is cancellable, the first one too (dropin/posix/README.md).
 */
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include "t_px.h"

TestSuite(cancel, .init = t_setup, .fini = t_teardown);

static char bufs[4][16];

Test(cancel, done_request_is_alldone)
{
	struct aiocb cb;
	int fd = t_file(4096, 50);

	t_read_start(&cb, fd, bufs[0], 16, 0);
	cr_assert_eq(t_wait(&cb), 0);
	cr_assert_eq(aio_cancel(fd, &cb), AIO_ALLDONE);
	cr_assert_eq(aio_cancel(fd, NULL), AIO_ALLDONE);
	cr_assert_eq(aio_error(&cb), 0);
	cr_assert_eq(aio_return(&cb), 16);
	close(fd);
}

/* A queued request behind a waiting one: cancelled on both. */
Test(cancel, queued_request_is_canceled)
{
	struct aiocb first, second;
	int p[2];

	cr_assert_eq(pipe(p), 0);
	t_cb(&first, p[0], bufs[0], 16, 0, LIO_READ);
	t_cb(&second, p[0], bufs[1], 16, 0, LIO_READ);
	cr_assert_eq(aio_read(&first), 0);
	cr_assert_eq(aio_read(&second), 0);
	cr_assert_eq(aio_cancel(p[0], &second), AIO_CANCELED);
	cr_assert_eq(aio_error(&second), ECANCELED);
	cr_assert_eq(aio_return(&second), -1);
	/* Cancelling it again: it is done. */
	cr_assert_eq(aio_cancel(p[0], &second), AIO_ALLDONE);
	cr_assert_eq(t_feed(&first, p[1], "abc"), 3);
	t_close_pair(p);
}

/* All on the fd: glibc cannot take back the running first read. */
Test(cancel, all_on_an_fd)
{
	struct aiocb cbs[3];
	int p[2], q[2], r;

	cr_assert_eq(pipe(p), 0);
	cr_assert_eq(pipe(q), 0);
	for (int i = 0; i < 3; i++)
		t_read_start(&cbs[i], p[0], bufs[i], 16, 0);
	/* A request on another fd is not touched. */
	struct aiocb other;
	t_read_start(&other, q[0], bufs[3], 16, 0);

	r = aio_cancel(p[0], NULL);
	cr_assert_eq(aio_error(&cbs[1]), ECANCELED);
	cr_assert_eq(aio_error(&cbs[2]), ECANCELED);
	if (t_dropin()) {
		cr_assert_eq(r, AIO_CANCELED);
		cr_assert_eq(aio_error(&cbs[0]), ECANCELED);
	} else {
		cr_assert_eq(r, AIO_NOTCANCELED);
		cr_assert_eq(t_feed(&cbs[0], p[1], "x"), 1);
	}
	cr_assert_eq(t_feed(&other, q[1], "qq"), 2);
	t_close_pair(p);
	t_close_pair(q);
}

/* A read of a terminal: glibc's thread is blocked in read(2) and cannot
 * be taken back; the drop-in waits for the terminal to be readable and
 * can (dropin/posix/README.md). Either way the outcome is consistent. */
Test(cancel, waiting_terminal_read)
{
	struct aiocb cb;
	int m = posix_openpt(O_RDWR | O_NOCTTY), s, r;

	cr_assert_geq(m, 0);
	cr_assert_eq(grantpt(m), 0);
	cr_assert_eq(unlockpt(m), 0);
	s = open(ptsname(m), O_RDWR | O_NOCTTY);
	cr_assert_geq(s, 0);
	t_read_start(&cb, s, bufs[0], 16, 0);
	r = aio_cancel(s, &cb);
	if (t_dropin()) {
		cr_assert_eq(r, AIO_CANCELED);
		cr_assert_eq(aio_error(&cb), ECANCELED);
	} else {
		cr_assert_eq(r, AIO_NOTCANCELED);
		cr_assert_eq(aio_error(&cb), EINPROGRESS);
		cr_assert_eq(write(m, "line\n", 5), 5);
		T_RETURNS(&cb, 5);
	}
	close(s);
	close(m);
}

/* A cancelled request is notified like any other. */
Test(cancel, cancelled_request_is_notified)
{
	struct aiocb first, second;
	sigset_t set, old;
	siginfo_t si;
	struct timespec ts = { T_WAIT_SEC, 0 };
	int p[2];

	sigemptyset(&set);
	sigaddset(&set, SIGRTMIN + 3);
	pthread_sigmask(SIG_BLOCK, &set, &old);
	cr_assert_eq(pipe(p), 0);
	t_cb(&first, p[0], bufs[0], 16, 0, LIO_READ);
	t_cb(&second, p[0], bufs[1], 16, 0, LIO_READ);
	second.aio_sigevent.sigev_notify = SIGEV_SIGNAL;
	second.aio_sigevent.sigev_signo = SIGRTMIN + 3;
	second.aio_sigevent.sigev_value.sival_int = 99;
	cr_assert_eq(aio_read(&first), 0);
	cr_assert_eq(aio_read(&second), 0);
	cr_assert_eq(aio_cancel(p[0], &second), AIO_CANCELED);
	cr_assert_eq(sigtimedwait(&set, &si, &ts), SIGRTMIN + 3);
	cr_assert_eq(si.si_value.sival_int, 99);
	cr_assert_eq(si.si_code, SI_ASYNCIO);
	cr_assert_eq(write(p[1], "a", 1), 1);
	cr_assert_eq(t_wait(&first), 0);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	t_close_pair(p);
}

/* An fsync held behind a waiting read is cancelled; the read then
 * completes by itself. */
Test(cancel, held_fsync_is_canceled)
{
	struct aiocb rd, sync;
	int p[2];

	cr_assert_eq(pipe(p), 0);
	t_read_start(&rd, p[0], bufs[0], 16, 0);
	t_cb(&sync, p[0], NULL, 0, 0, 0);
	cr_assert_eq(aio_fsync(O_SYNC, &sync), 0);
	cr_assert_eq(aio_cancel(p[0], &sync), AIO_CANCELED);
	cr_assert_eq(aio_error(&sync), ECANCELED);
	cr_assert_eq(aio_return(&sync), -1);
	cr_assert_eq(write(p[1], "b", 1), 1);
	T_RETURNS(&rd, 1);
	t_close_pair(p);
}
