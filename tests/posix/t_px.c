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

void t_cold(int fd)
{
	struct stat st;
	unsigned char vec[1];
	void *m;

	cr_assert_eq(fsync(fd), 0);
	cr_assert_eq(fstat(fd, &st), 0);
	cr_assert_eq(posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED), 0);
	/* The first page at least must have left the cache. */
	m = mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd, 0);
	cr_assert_neq(m, MAP_FAILED);
	cr_assert_eq(mincore(m, 4096, vec), 0);
	munmap(m, 4096);
	cr_assert_eq(vec[0] & 1, 0, "the file is still cached after POSIX_FADV_DONTNEED");
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
