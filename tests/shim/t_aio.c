/* SPDX-License-Identifier: MIT */
#include "t_aio.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

static char dir[PATH_MAX];
static unsigned nfiles;

const char *t_mode(void)
{
	const char *m = getenv("T_AIO_MODE");

	return m ? m : "kernel";
}

/* Where io_submit really comes from, so a broken preload cannot pass for
 * the shim (nor the shim for the kernel). */
static const char *io_submit_origin(void)
{
	Dl_info info;
	void *sym = dlsym(RTLD_DEFAULT, "io_submit");

	if (!sym || !dladdr(sym, &info) || !info.dli_fname)
		return "?";
	return info.dli_fname;
}

bool t_shim(void)
{
	return strcmp(t_mode(), "kernel") != 0;
}

void t_setup(void)
{
	const char *base = getenv("FSAIO_TEST_BUILDDIR");
	const char *origin = io_submit_origin();
	bool ours = strstr(origin, "fsaio") || strstr(origin, "/lib/shim/");

	cr_assert_eq(ours, t_shim(), "T_AIO_MODE=%s but io_submit comes from %s", t_mode(), origin);
	snprintf(dir, sizeof(dir), "%s/shim-test-XXXXXX", base ? base : ".");
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
	char buf[65536];
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

#ifndef SYS_cachestat
#define SYS_cachestat 451
#endif

uint64_t t_cached_pages(int fd, uint64_t off, uint64_t len)
{
	struct { uint64_t off, len; } range = { off, len };
	struct { uint64_t cache, dirty, writeback, evicted, recently_evicted; } cs;
	long page = sysconf(_SC_PAGESIZE);
	unsigned char *vec;
	uint64_t n = 0, start = off / (uint64_t)page * (uint64_t)page;
	void *m;

	if (syscall(SYS_cachestat, fd, &range, &cs, 0) == 0)
		return cs.cache;
	m = mmap(NULL, off + len - start, PROT_READ, MAP_SHARED, fd, (off_t)start);
	cr_assert_neq(m, MAP_FAILED);
	vec = calloc((off + len - start + (uint64_t)page - 1) / (uint64_t)page, 1);
	cr_assert_eq(mincore(m, off + len - start, vec), 0);
	for (uint64_t i = 0; i < (off + len - start + (uint64_t)page - 1) / (uint64_t)page; i++)
		n += vec[i] & 1;
	free(vec);
	munmap(m, off + len - start);
	return n;
}

void t_cold(int fd)
{
	struct stat st;

	cr_assert_eq(fsync(fd), 0);
	cr_assert_eq(fstat(fd, &st), 0);
	cr_assert_eq(posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED), 0);
	cr_assert_eq(t_cached_pages(fd, 0, (uint64_t)st.st_size), 0,
		     "the file is still cached after POSIX_FADV_DONTNEED");
}

io_context_t t_ctx(int nr)
{
	io_context_t ctx = 0;

	T_EXPECT(io_setup(nr, &ctx), 0);
	cr_assert_not_null(ctx);
	return ctx;
}

int t_submit1(io_context_t ctx, struct iocb *cb)
{
	struct iocb *list[1] = { cb };

	return io_submit(ctx, 1, list);
}

void t_reap(io_context_t ctx, long n, struct io_event *ev)
{
	long got = 0;

	while (got < n) {
		struct timespec ts = { T_WAIT_SEC, 0 };
		int r = T_CALL(io_getevents(ctx, 1, n - got, ev + got, &ts));

		cr_assert_gt(r, 0, "io_getevents: %d with %ld of %ld events reaped", r, got, n);
		got += r;
	}
}

long t_do(io_context_t ctx, struct iocb *cb)
{
	struct io_event ev;

	T_EXPECT(t_submit1(ctx, cb), 1);
	t_reap(ctx, 1, &ev);
	cr_assert_eq((void *)ev.obj, (void *)cb);
	return (long)ev.res;
}

long t_getevents_any(io_context_t ctx, long min_nr, long nr, struct io_event *ev,
		     struct timespec *ts)
{
	long r;

	if (t_shim())
		return io_getevents(ctx, min_nr, nr, ev, ts);
	int saved = errno;

	r = syscall(SYS_io_getevents, ctx, min_nr, nr, ev, ts);
	if (r < 0)
		r = -errno;
	errno = saved;
	return r;
}
