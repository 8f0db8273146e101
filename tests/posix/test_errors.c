/* SPDX-License-Identifier: MIT */
/*
 * What is refused at submit (-1 and errno) and what is the request's own
 * error (accepted, then aio_error gives it and aio_return -1), as glibc
 * draws the line.
 */
#include <fcntl.h>
#include <limits.h>
#include <unistd.h>

#include "t_px.h"

TestSuite(errors, .init = t_setup, .fini = t_teardown);

static char buf[4096];

/* Accepted, then failed with err. */
static void request_error(struct aiocb *cb, int (*submit)(struct aiocb *), int err)
{
	cr_assert_eq(submit(cb), 0, "refused at submit: %s", strerror(errno));
	cr_assert_eq(t_wait(cb), err, "aio_error %d, want %d", aio_error(cb), err);
	cr_assert_eq(aio_return(cb), -1);
}

Test(errors, bad_fd_is_the_requests_error)
{
	struct aiocb cb;

	t_cb(&cb, -1, buf, 16, 0, LIO_READ);
	request_error(&cb, aio_read, EBADF);
	t_cb(&cb, 1000, buf, 16, 0, LIO_WRITE);
	request_error(&cb, aio_write, EBADF);
}

Test(errors, wrong_access_mode)
{
	char path[PATH_MAX];
	struct aiocb cb;
	int fd = t_file_path(4096, 1, path, sizeof(path)), rd, wr;

	close(fd);
	rd = open(path, O_RDONLY);
	wr = open(path, O_WRONLY);
	t_cb(&cb, rd, buf, 16, 0, LIO_WRITE);
	request_error(&cb, aio_write, EBADF);
	t_cb(&cb, wr, buf, 16, 0, LIO_READ);
	request_error(&cb, aio_read, EBADF);
	close(rd);
	close(wr);
}

Test(errors, negative_offset_is_the_requests_einval)
{
	struct aiocb cb;
	int fd = t_file(4096, 2);

	t_cb(&cb, fd, buf, 16, -4096, LIO_READ);
	request_error(&cb, aio_read, EINVAL);
	t_cb(&cb, fd, buf, 16, -1, LIO_WRITE);
	request_error(&cb, aio_write, EINVAL);
	/* Before the fd is looked at, as pread(2) checks. */
	t_cb(&cb, -1, buf, 16, -1, LIO_READ);
	request_error(&cb, aio_read, EINVAL);
	close(fd);
}

Test(errors, bad_reqprio_is_refused_at_submit)
{
	struct aiocb cb;
	int fd = t_file(4096, 3);

	t_cb(&cb, fd, buf, 16, 0, LIO_READ);
	cb.aio_reqprio = -1;
	errno = 0;
	cr_assert_eq(aio_read(&cb), -1);
	cr_assert_eq(errno, EINVAL);
	cr_assert_eq(aio_error(&cb), EINVAL);
	cr_assert_eq(aio_return(&cb), -1);
	cb.aio_reqprio = AIO_PRIO_DELTA_MAX + 1;
	errno = 0;
	cr_assert_eq(aio_write(&cb), -1);
	cr_assert_eq(errno, EINVAL);
	/* The largest allowed is accepted. */
	cb.aio_reqprio = AIO_PRIO_DELTA_MAX;
	cr_assert_eq(aio_read(&cb), 0);
	T_RETURNS(&cb, 16);
	close(fd);
}

Test(errors, fsync_op_and_fd_are_checked_at_submit)
{
	struct aiocb cb;
	int fd = t_file(4096, 4);

	t_cb(&cb, fd, NULL, 0, 0, 0);
	errno = 0;
	cr_assert_eq(aio_fsync(O_RDWR, &cb), -1);
	cr_assert_eq(errno, EINVAL);
	errno = 0;
	cr_assert_eq(aio_fsync(0, &cb), -1);
	cr_assert_eq(errno, EINVAL);
	t_cb(&cb, -1, NULL, 0, 0, 0);
	errno = 0;
	cr_assert_eq(aio_fsync(O_SYNC, &cb), -1);
	cr_assert_eq(errno, EBADF);
	/* glibc does not look at an fsync's priority. */
	t_cb(&cb, fd, NULL, 0, 0, 0);
	cb.aio_reqprio = -5;
	cr_assert_eq(aio_fsync(O_DSYNC, &cb), 0);
	T_RETURNS(&cb, 0);
	close(fd);
}

/* A read-only fd passes aio_fsync's check; fsync(2) itself succeeds on it. */
Test(errors, fsync_on_a_read_only_fd)
{
	char path[PATH_MAX];
	struct aiocb cb;
	int fd = t_file_path(4096, 5, path, sizeof(path)), rd;

	rd = open(path, O_RDONLY);
	t_cb(&cb, rd, NULL, 0, 0, 0);
	cr_assert_eq(aio_fsync(O_SYNC, &cb), 0);
	T_RETURNS(&cb, 0);
	close(rd);
	close(fd);
}

Test(errors, cancel_checks)
{
	struct aiocb cb;
	int fd = t_file(4096, 6);

	errno = 0;
	cr_assert_eq(aio_cancel(-1, NULL), -1);
	cr_assert_eq(errno, EBADF);
	errno = 0;
	cr_assert_eq(aio_cancel(1000, NULL), -1);
	cr_assert_eq(errno, EBADF);
	/* The aiocb's fd must be the one given. */
	t_cb(&cb, fd + 1000, buf, 16, 0, LIO_READ);
	errno = 0;
	cr_assert_eq(aio_cancel(fd, &cb), -1);
	cr_assert_eq(errno, EINVAL);
	/* Nothing in flight on the fd. */
	cr_assert_eq(aio_cancel(fd, NULL), AIO_ALLDONE);
	close(fd);
}

Test(errors, suspend_with_nothing_to_wait_for)
{
	const struct aiocb *list[3] = { NULL, NULL, NULL };
	struct timespec zero = { 0, 0 };

	cr_assert_eq(aio_suspend(list, 3, &zero), 0);
	cr_assert_eq(aio_suspend(list, 0, NULL), 0);
}

Test(errors, read_from_a_directory)
{
	struct aiocb cb;
	int fd = open(t_dir(), O_RDONLY | O_DIRECTORY);

	cr_assert_geq(fd, 0);
	t_cb(&cb, fd, buf, 16, 0, LIO_READ);
	request_error(&cb, aio_read, EISDIR);
	close(fd);
}

/* A count over SSIZE_MAX: pread(2)'s and pwrite(2)'s answers (EFAULT, or
 * EBADF first for an fd not open for it), the request's error. */
Test(errors, count_over_ssize_max)
{
	struct aiocb cb;
	int fd = t_file(4096, 7), ro = open("/dev/null", O_RDONLY);

	cr_assert_geq(ro, 0);
	t_cb(&cb, fd, buf, (size_t)SSIZE_MAX + 1, 0, LIO_READ);
	request_error(&cb, aio_read, EFAULT);
	t_cb(&cb, fd, buf, SIZE_MAX, 0, LIO_WRITE);
	request_error(&cb, aio_write, EFAULT);
	t_cb(&cb, -1, buf, (size_t)SSIZE_MAX + 1, 0, LIO_READ);
	request_error(&cb, aio_read, EBADF);
	t_cb(&cb, ro, buf, (size_t)SSIZE_MAX + 1, 0, LIO_WRITE);
	request_error(&cb, aio_write, EBADF);
	close(ro);
	close(fd);
}

/* aio_cancel of an aiocb never submitted: one that says EINPROGRESS (a
 * copy of a request in progress) is EINVAL; any other is AIO_ALLDONE. */
Test(errors, cancel_of_an_aiocb_never_submitted)
{
	struct aiocb cb, copy, zero;
	int p[2];

	cr_assert_eq(pipe(p), 0);
	t_read_start(&cb, p[0], buf, 16, 0);
	/* A copy made while it is in progress: its fields, and its status
	 * read as aio_error reads it (a plain memcpy races with the
	 * completion's store, as ThreadSanitizer says). */
	t_cb(&copy, p[0], buf, 16, 0, LIO_READ);
	copy.__error_code = aio_error(&cb);
	errno = 0;
	cr_assert_eq(aio_cancel(p[0], &copy), -1);
	cr_assert_eq(errno, EINVAL);
	t_cb(&zero, p[0], buf, 16, 0, LIO_READ);
	cr_assert_eq(aio_cancel(p[0], &zero), AIO_ALLDONE);
	cr_assert_eq(t_feed(&cb, p[1], "x"), 1);
	t_close_pair(p);
}
