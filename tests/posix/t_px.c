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

static char dir[PATH_MAX];
static unsigned nfiles;

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
	const char *base = getenv("FSAIO_TEST_BUILDDIR");
	const char *o = origin();

	cr_assert_eq(strstr(o, "libfsaio-posixaio") != NULL, t_dropin(),
		     "T_PX_MODE=%s but aio_read comes from %s", t_mode(), o);
	snprintf(dir, sizeof(dir), "%s/px-test-XXXXXX", base ? base : ".");
	cr_assert_not_null(mkdtemp(dir), "mkdtemp %s: %s", dir, strerror(errno));
	nfiles = 0;
}

void t_teardown(void)
{
	char path[PATH_MAX + 32];

	for (unsigned i = 0; i < nfiles; i++) {
		snprintf(path, sizeof(path), "%s/f%u", dir, i);
		unlink(path);
	}
	rmdir(dir);
}

const char *t_dir(void)
{
	return dir;
}

uint8_t t_byte(uint64_t off, unsigned seed)
{
	uint64_t x = (off >> 3) * 0x9e3779b97f4a7c15ull + seed * 0xbf58476d1ce4e5b9ull;

	return (uint8_t)((x >> 29) ^ (x >> 47) ^ off);
}

void t_fill(void *buf, size_t len, uint64_t off, unsigned seed)
{
	uint8_t *p = buf;

	for (size_t i = 0; i < len; i++)
		p[i] = t_byte(off + i, seed);
}

void t_check(const void *buf, size_t len, uint64_t off, unsigned seed)
{
	const uint8_t *p = buf;

	for (size_t i = 0; i < len; i++)
		if (p[i] != t_byte(off + i, seed))
			cr_assert_fail("byte at file offset %llu is %#x, want %#x",
				       (unsigned long long)(off + i), p[i], t_byte(off + i, seed));
}

int t_file_path(size_t size, unsigned seed, char *path, size_t pathlen)
{
	static char buf[65536];
	int fd;

	snprintf(path, pathlen, "%s/f%u", dir, nfiles++);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	cr_assert_geq(fd, 0, "open %s: %s", path, strerror(errno));
	for (size_t off = 0; off < size; off += sizeof(buf)) {
		size_t n = size - off < sizeof(buf) ? size - off : sizeof(buf);

		t_fill(buf, n, off, seed);
		cr_assert_eq(pwrite(fd, buf, n, (off_t)off), (ssize_t)n);
	}
	return fd;
}

int t_file(size_t size, unsigned seed)
{
	char path[PATH_MAX + 32];

	return t_file_path(size, seed, path, sizeof(path));
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
