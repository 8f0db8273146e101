/* SPDX-License-Identifier: MIT */
#include "t_files.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

static char dir[PATH_MAX];
static unsigned nfiles;

void t_files_setup(const char *prefix)
{
	const char *base = getenv("FSAIO_TEST_BUILDDIR");

	snprintf(dir, sizeof(dir), "%s/%s-XXXXXX", base ? base : ".", prefix);
	cr_assert_not_null(mkdtemp(dir), "mkdtemp %s: %s", dir, strerror(errno));
	nfiles = 0;
}

void t_files_teardown(void)
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
	char *buf = malloc(65536);
	int fd;

	cr_assert_not_null(buf);
	snprintf(path, pathlen, "%s/f%u", dir, nfiles++);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	cr_assert_geq(fd, 0, "open %s: %s", path, strerror(errno));
	for (size_t off = 0; off < size; off += 65536) {
		size_t n = size - off < 65536 ? size - off : 65536;

		t_fill(buf, n, off, seed);
		cr_assert_eq(pwrite(fd, buf, n, (off_t)off), (ssize_t)n);
	}
	free(buf);
	return fd;
}

int t_file(size_t size, unsigned seed)
{
	char path[PATH_MAX + 32];

	return t_file_path(size, seed, path, sizeof(path));
}

/* Pages of the first size bytes of fd in the page cache (mincore). */
static uint64_t resident(int fd, uint64_t size)
{
	long pg = sysconf(_SC_PAGESIZE);
	size_t n = (size_t)((size + (uint64_t)pg - 1) / (uint64_t)pg);
	unsigned char *vec;
	uint64_t count = 0;
	void *m;

	if (!size)
		return 0;
	m = mmap(NULL, (size_t)size, PROT_READ, MAP_SHARED, fd, 0);
	cr_assert_neq(m, MAP_FAILED, "mmap: %s", strerror(errno));
	vec = calloc(n, 1);
	cr_assert_not_null(vec);
	cr_assert_eq(mincore(m, (size_t)size, vec), 0);
	for (size_t i = 0; i < n; i++)
		count += vec[i] & 1;
	free(vec);
	munmap(m, (size_t)size);
	return count;
}

void t_cold(int fd)
{
	struct stat st;
	uint64_t cached = 0;

	cr_assert_eq(fstat(fd, &st), 0);
	/* DONTNEED leaves pages that are momentarily locked, under writeback
	 * or in another CPU's LRU batch, as a busy machine's sync(2) and
	 * reclaim hold them: the round is done again until the file is cold. */
	for (int i = 0; i < T_COLD_ROUNDS; i++) {
		cr_assert_eq(fsync(fd), 0);
		cr_assert_eq(posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED), 0);
		cached = resident(fd, (uint64_t)st.st_size);
		if (!cached)
			return;
		sched_yield();
	}
	cr_assert_fail("%llu pages still cached after %d rounds of fsync + POSIX_FADV_DONTNEED",
		       (unsigned long long)cached, T_COLD_ROUNDS);
}
