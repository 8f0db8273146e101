/* SPDX-License-Identifier: MIT */
/*
 * RWF_DONTCACHE in aio_rw_flags, on the kernel and on the drop-in alike: a
 * cold range read with it is left out of the page cache, with the right
 * bytes (with the drop-in carried by io_uring or, in the -no-uring run, by
 * the pool); a file that cannot (tmpfs, a pipe) is refused at submit with
 * EOPNOTSUPP; a write with it is written back without an fsync.
 */
#include "t_aio.h"
#define T_PRIO_NO_KAIO
#include "../t_prio.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/statfs.h>
#include <linux/magic.h>
#include <unistd.h>

#define SEED 59u
#define FILE_SIZE (2u << 20)
/* See tests/test_dontcache.c: the kernel may keep a page it could not
 * lock; a flag not passed on keeps every page in every round. */
#define ROUNDS 5

T_AIO_FIXTURE(FILE_SIZE, SEED)

TestSuite(dontcache, .init = setup, .fini = teardown, .timeout = 120);

static long rw(int op, void *buf, size_t len, long long off, int flags)
{
	struct iocb cb;

	if (op == IO_CMD_PREAD)
		io_prep_pread(&cb, fd, buf, len, off);
	else
		io_prep_pwrite(&cb, fd, buf, len, off);
	cb.aio_rw_flags = flags;
	return t_do(ctx, &cb);
}

static bool read_leaves_uncached(long long off, size_t len)
{
	char *buf = malloc(len);

	cr_assert_not_null(buf);
	for (int round = 0; round < ROUNDS; round++) {
		t_cold(fd);
		cr_assert_eq(rw(IO_CMD_PREAD, buf, len, off, RWF_DONTCACHE), (long)len);
		t_check(buf, len, (uint64_t)off, SEED);
		if (t_cached_pages(fd, (uint64_t)off, len) == 0) {
			free(buf);
			return true;
		}
	}
	free(buf);
	return false;
}

Test(dontcache, cold_read_stays_uncached)
{
	cr_assert(read_leaves_uncached(256 << 10, 64 << 10), "%s: 64 KiB read stayed cached",
		  t_mode());
	cr_assert(read_leaves_uncached(1 << 20, 16 << 10), "%s: 16 KiB read stayed cached",
		  t_mode());
	cr_assert(read_leaves_uncached(1 << 20, 512 << 10), "%s: 512 KiB read stayed cached",
		  t_mode());
}

Test(dontcache, refused_where_the_file_cannot)
{
	char path[64], buf[16];
	struct iocb cb;
	struct statfs sf;
	int shm, p[2];

	snprintf(path, sizeof(path), "/dev/shm/fsaio-shim-dc-%d", (int)getpid());
	shm = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	cr_assert_geq(shm, 0);
	unlink(path);
	cr_assert_eq(write(shm, "0123456789abcdef", 16), 16);
	if (fstatfs(shm, &sf) == 0 && sf.f_type == TMPFS_MAGIC) {
		io_prep_pread(&cb, shm, buf, sizeof(buf), 0);
		cb.aio_rw_flags = RWF_DONTCACHE;
		T_EXPECT(t_submit1(ctx, &cb), -EOPNOTSUPP);
		io_prep_pwrite(&cb, shm, buf, sizeof(buf), 0);
		cb.aio_rw_flags = RWF_DONTCACHE;
		T_EXPECT(t_submit1(ctx, &cb), -EOPNOTSUPP);
		cb.aio_rw_flags = 0;
		cr_assert_eq(t_do(ctx, &cb), 16);
	}
	close(shm);
	cr_assert_eq(pipe(p), 0);
	io_prep_pread(&cb, p[0], buf, sizeof(buf), 0);
	cb.aio_rw_flags = RWF_DONTCACHE;
	T_EXPECT(t_submit1(ctx, &cb), -EOPNOTSUPP);
	t_close_pair(p);
}

/* Written back at once by the kernel, not left dirty for the flusher;
 * whether the clean pages then leave depends on where the kernel ends the
 * writeback, and is not asserted. */
Test(dontcache, a_write_is_written_back_at_once)
{
	struct { uint64_t off, len; } range = { 0, 4096 };
	uint64_t cs[5];
	size_t len = 64 << 10;
	char *buf = malloc(len);
	long long off = 512 << 10;
	bool clean = false;

	if (syscall(451 /* cachestat */, fd, &range, cs, 0) != 0)
		cr_skip_test("no cachestat(2) here: dirty pages cannot be counted\n");
	cr_assert_not_null(buf);
	t_fill(buf, len, (uint64_t)off, SEED);
	cr_assert_eq(rw(IO_CMD_PWRITE, buf, len, off, RWF_DONTCACHE), (long)len);
	range.off = (uint64_t)off;
	range.len = len;
	for (int i = 0; i < 1000 && !clean; i++) {
		cr_assert_eq(syscall(451 /* cachestat */, fd, &range, cs, 0), 0);
		clean = cs[1] + cs[2] == 0;     /* nr_dirty + nr_writeback */
		if (!clean)
			usleep(10000);
	}
	cr_assert(clean, "%s: a DONTCACHE write stayed dirty for 10 s", t_mode());
	memset(buf, 0, len);
	cr_assert_eq(pread(fd, buf, len, off), (ssize_t)len);
	t_check(buf, len, (uint64_t)off, SEED);
	free(buf);
}
