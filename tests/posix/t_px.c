/* SPDX-License-Identifier: MIT */
#include "t_px.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

const char *t_mode(void)
{
	const char *m = getenv("T_PX_MODE");

	return m ? m : "glibc";
}

bool t_dropin(void)
{
	return strcmp(t_mode(), "glibc") != 0;
}

/* Where the program's aio_read comes from, so that a broken preload cannot
 * pass for the drop-in, nor the drop-in for glibc. */
static const char *origin(void)
{
	Dl_info info;

	if (!dladdr((void *)&aio_read, &info) || !info.dli_fname)
		return "?";
	return info.dli_fname;
}

void t_setup(void)
{
	const char *o = origin();

	cr_assert_eq(strstr(o, "libfsaio-posixaio") != NULL, t_dropin(),
		     "T_PX_MODE=%s but aio_read comes from %s", t_mode(), o);
	t_files_setup("px-test");
}

void t_teardown(void)
{
	t_files_teardown();
}

void t_cb(struct aiocb *cb, int fd, void *buf, size_t len, off_t off, int op)
{
	memset(cb, 0, sizeof(*cb));
	cb->aio_fildes = fd;
	cb->aio_buf = buf;
	cb->aio_nbytes = len;
	cb->aio_offset = off;
	cb->aio_lio_opcode = op;
	cb->aio_sigevent.sigev_notify = SIGEV_NONE;
}

void t_read_start(struct aiocb *cb, int fd, void *buf, size_t len, off_t off)
{
	t_cb(cb, fd, buf, len, off, LIO_READ);
	cr_assert_eq(aio_read(cb), 0, "aio_read of %zu at %lld on fd %d: %s", len, (long long)off,
		     fd, strerror(errno));
}

void t_write_start(struct aiocb *cb, int fd, void *buf, size_t len, off_t off)
{
	t_cb(cb, fd, buf, len, off, LIO_WRITE);
	cr_assert_eq(aio_write(cb), 0, "aio_write of %zu at %lld on fd %d: %s", len,
		     (long long)off, fd, strerror(errno));
}

ssize_t t_feed(struct aiocb *cb, int wfd, const char *data)
{
	ssize_t len = (ssize_t)strlen(data);

	cr_assert_eq(aio_error(cb), EINPROGRESS, "the read fed \"%s\" is no longer in progress", data);
	cr_assert_eq(write(wfd, data, (size_t)len), len, "writing \"%s\"", data);
	cr_assert_eq(t_wait(cb), 0, "the read fed \"%s\" failed", data);
	return aio_return(cb);
}

void t_close_pair(const int p[2])
{
	close(p[0]);
	close(p[1]);
}

void t_still_waits(const struct aiocb *cb, const char *what)
{
	const struct aiocb *list[1] = { cb };
	struct timespec brief = { 0, 50 * 1000 * 1000 };

	errno = 0;
	cr_assert_eq(aio_suspend(list, 1, &brief), -1, "%s", what);
	cr_assert_eq(errno, EAGAIN, "%s: aio_suspend: %s", what, strerror(errno));
	cr_assert_eq(aio_error(cb), EINPROGRESS, "%s: aio_error %d", what, aio_error(cb));
}

int t_wait(struct aiocb *cb)
{
	const struct aiocb *list[1] = { cb };
	struct timespec ts = { T_WAIT_SEC, 0 };
	int e;

	while ((e = aio_error(cb)) == EINPROGRESS) {
		int r = aio_suspend(list, 1, &ts);

		cr_assert(r == 0 || errno == EINTR, "aio_suspend: %s; aio_error now %d",
			  strerror(errno), aio_error(cb));
	}
	return e;
}
