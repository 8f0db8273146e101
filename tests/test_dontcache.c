/* SPDX-License-Identifier: MIT */
/*
 * RWF_DONTCACHE on the native API, next to the kernel's own answer for the
 * same file: a cold range read with it is left out of the page cache, as
 * the kernel's AIO leaves it, on every backend (the ring, the pool with its
 * starter, a call's batched attempt), with the right bytes; a file whose
 * filesystem cannot (tmpfs, a pipe, a block device) is refused at submit
 * with the kernel's -EOPNOTSUPP; a write with it has its pages written
 * back without an fsync, as the kernel's does.
 */
#include "t_helpers.h"
#include "t_prio.h"

#include <linux/loop.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#define KiB 1024u
#define SEED 41u
#define FILE_SIZE (2048 * KiB)
/* Rounds made again when the range is found cached after a DONTCACHE read:
 * the kernel drops each page with a trylock, and a page briefly locked by
 * someone else (reclaim, compaction) stays. A flag that is not passed on
 * leaves every page in every round. */
#define ROUNDS 5

TestSuite(dontcache, .init = t_setup, .fini = t_teardown, .timeout = 120);

/* Read [off, off+len) of cold fd with RWF_DONTCACHE through ctx (NULL:
 * the kernel's AIO) until a round leaves the range uncached: whether one
 * did. The bytes are checked each round. */
/* One RWF_DONTCACHE read or write of [off, off + len) through ctx, or
 * through the kernel's AIO when ctx is NULL: its result. */
static int64_t dontcache_rw(fsaio_ctx_t *ctx, int fd, bool write, void *buf, size_t len,
			    uint64_t off)
{
	struct fsaio_req req;

	if (!ctx)
		return t_kaio(fd, write ? IOCB_CMD_PWRITE : IOCB_CMD_PREAD, buf, len, (int64_t)off,
			      RWF_DONTCACHE, false, 0);
	if (write)
		fsaio_prep_pwrite(&req, fd, buf, len, (int64_t)off);
	else
		fsaio_prep_pread(&req, fd, buf, len, (int64_t)off);
	req.rw_flags = RWF_DONTCACHE;
	return t_run1(ctx, &req).res;
}

static bool read_leaves_uncached(fsaio_ctx_t *ctx, int fd, uint64_t off, size_t len)
{
	uint8_t *buf = malloc(len);

	cr_assert_not_null(buf);
	for (int round = 0; round < ROUNDS; round++) {
		int64_t res;

		t_make_cold(fd);
		res = dontcache_rw(ctx, fd, false, buf, len, off);
		cr_assert_eq(res, (int64_t)len, "%s: res %lld", ctx ? "fsaio" : "kernel",
			     (long long)res);
		t_check_pattern(buf, len, off, SEED);
		if (t_cached_pages(fd, off, len) == 0) {
			free(buf);
			return true;
		}
	}
	free(buf);
	return false;
}

static void cold_read_on(uint32_t backend, uint32_t flags)
{
	struct fsaio_params p = { .miss_backend = backend, .flags = flags };
	int fd = t_coldfile(FILE_SIZE, SEED);
	fsaio_ctx_t *ctx = t_ctx(&p);
	struct fsaio_stats st;

	cr_assert(read_leaves_uncached(NULL, fd, 256 * KiB, 64 * KiB),
		  "the kernel's AIO left a DONTCACHE read's pages cached");
	/* 64 KiB: a miss the pool has started by its starter; 16 KiB: one
	 * whose NOWAIT attempt was made first; 512 KiB: a worker's whole. */
	cr_assert(read_leaves_uncached(ctx, fd, 256 * KiB, 64 * KiB),
		  "backend %u: a 64 KiB DONTCACHE read's pages stayed cached", backend);
	cr_assert(read_leaves_uncached(ctx, fd, 1024 * KiB, 16 * KiB),
		  "backend %u: a 16 KiB DONTCACHE read's pages stayed cached", backend);
	cr_assert(read_leaves_uncached(ctx, fd, 1024 * KiB, 512 * KiB),
		  "backend %u: a 512 KiB DONTCACHE read's pages stayed cached", backend);
	T_ASSERT_RET(fsaio_get_stats(ctx, &st), 0);
	cr_assert_eq(st.readahead_calls, 0, "the engine read ahead for DONTCACHE reads");
	t_ctx_destroy(ctx);
}

Test(dontcache, cold_read_stays_uncached_by_the_pool)
{
	cold_read_on(FSAIO_BACKEND_THREADS, 0);
}

Test(dontcache, cold_read_stays_uncached_with_every_read_ahead)
{
	/* The pool, each miss's read started up front where it would be. */
	cold_read_on(FSAIO_BACKEND_THREADS, FSAIO_CTX_NO_PROBE);
}

Test(dontcache, cold_read_stays_uncached_by_the_ring)
{
	if (!t_ring_ok())
		cr_skip_test("io_uring is refused here: the pool's test covers this process\n");
	cold_read_on(FSAIO_BACKEND_URING, 0);
}

/* A call of several small reads: their first attempts made in one
 * io_submit (rw_batch.c), RWF_NOWAIT with the caller's DONTCACHE. A
 * plain NOWAIT miss would start readahead that keeps the pages. */
Test(dontcache, a_batch_keeps_the_flag)
{
	enum { N = 8 };
	int fd = t_coldfile(FILE_SIZE, SEED);
	bool clean = false;

	for (int round = 0; round < ROUNDS && !clean; round++) {
		fsaio_ctx_t *ctx = t_ctx_backend(FSAIO_BACKEND_THREADS);
		static uint8_t buf[N][16 * KiB];
		struct fsaio_req req[N], *list[N];
		struct fsaio_event ev[N];
		struct fsaio_stats st;

		t_make_cold(fd);
		for (int i = 0; i < N; i++) {
			fsaio_prep_pread(&req[i], fd, buf[i], sizeof(buf[i]), (int64_t)i * 256 * KiB);
			req[i].rw_flags = RWF_DONTCACHE;
			list[i] = &req[i];
		}
		t_submit(ctx, list, N);
		t_reap_all(ctx, N, ev, T_EVENT_TIMEOUT_MS);
		for (int i = 0; i < N; i++) {
			const struct fsaio_event *e = t_event_of(ev, N, &req[i]);

			cr_assert_eq(e->res, (int64_t)sizeof(buf[i]));
			t_check_pattern(buf[i], sizeof(buf[i]), (uint64_t)i * 256 * KiB, SEED);
		}
		T_ASSERT_RET(fsaio_get_stats(ctx, &st), 0);
		if (!getenv("FSAIO_TEST_NO_URING"))
			cr_assert_geq(st.batch_requests + st.batch_refused, 1,
				      "the call's reads were not attempted as a batch");
		clean = true;
		for (int i = 0; i < N; i++)
			clean = clean && t_cached_pages(fd, (uint64_t)i * 256 * KiB, 16 * KiB) == 0;
		t_ctx_destroy(ctx);
	}
	cr_assert(clean, "the batch's DONTCACHE reads left their pages cached");
}

/* What the kernel answers a DONTCACHE read of fd (preadv2), and submit. */
static void refused_as_the_kernel(fsaio_ctx_t *ctx, int fd, int64_t off, const char *what)
{
	char buf[4096];
	struct iovec iov = { buf, sizeof(buf) };
	struct fsaio_req req, *list[1] = { &req };
	long k = syscall(SYS_preadv2, fd, &iov, 1, (long)off, (long)((uint64_t)off >> 32),
			 RWF_DONTCACHE);

	cr_assert_eq(k, -1, "%s: the kernel took a DONTCACHE read", what);
	cr_assert_eq(errno, EOPNOTSUPP, "%s: the kernel answered %s", what, strerror(errno));
	fsaio_prep_pread(&req, fd, buf, sizeof(buf), off);
	req.rw_flags = RWF_DONTCACHE;
	T_ASSERT_RET(fsaio_submit(ctx, list, 1), -EOPNOTSUPP);
	/* Without it, the same read is taken. */
	req.rw_flags = 0;
	T_ASSERT_RET(fsaio_submit(ctx, list, 1), 1);
	{
		struct fsaio_event ev;

		t_reap_all(ctx, 1, &ev, T_EVENT_TIMEOUT_MS);
	}
}

Test(dontcache, refused_where_the_kernel_refuses_it)
{
	fsaio_ctx_t *ctx = t_ctx(NULL);
	int p[2], fd, lc, dev;

	fd = t_shmfile(64 * KiB, SEED);
	refused_as_the_kernel(ctx, fd, 0, "tmpfs");
	cr_assert_eq(pipe(p), 0);
	cr_assert_eq(write(p[1], "0123456789", 10), 10);
	{
		char buf[16];
		struct iovec iov = { buf, sizeof(buf) };
		struct fsaio_req req, *list[1] = { &req };

		cr_assert_eq(syscall(SYS_preadv2, p[0], &iov, 1, -1L, -1L, RWF_DONTCACHE), -1);
		cr_assert_eq(errno, EOPNOTSUPP);
		fsaio_prep_pread(&req, p[0], buf, sizeof(buf), -1);
		req.rw_flags = RWF_DONTCACHE;
		T_ASSERT_RET(fsaio_submit(ctx, list, 1), -EOPNOTSUPP);
	}
	close(p[0]);
	close(p[1]);
	/* A sync takes no rw_flags at all. */
	{
		struct fsaio_req req, *list[1] = { &req };
		int f = t_tmpfile(4096, SEED);

		fsaio_prep_fsync(&req, f);
		req.rw_flags = RWF_DONTCACHE;
		T_ASSERT_RET(fsaio_submit(ctx, list, 1), -EINVAL);
	}
	/* A block device: a loop device over a file of the test's. */
	lc = open("/dev/loop-control", O_RDWR | O_CLOEXEC);
	if (lc < 0) {
		t_ctx_destroy(ctx);
		cr_skip_test("no /dev/loop-control (%s): block devices not tried\n", strerror(errno));
	}
	{
		char path[64];
		int n = ioctl(lc, LOOP_CTL_GET_FREE), back = t_tmpfile(1024 * KiB, SEED);
		struct loop_config cfg = { .fd = (uint32_t)back,
					   .info = { .lo_flags = LO_FLAGS_AUTOCLEAR } };

		cr_assert_geq(n, 0, "LOOP_CTL_GET_FREE: %s", strerror(errno));
		snprintf(path, sizeof(path), "/dev/loop%d", n);
		dev = open(path, O_RDWR | O_CLOEXEC);
		cr_assert_geq(dev, 0, "open %s: %s", path, strerror(errno));
		if (ioctl(dev, LOOP_CONFIGURE, &cfg) < 0) {
			int e = errno;

			close(dev);
			close(lc);
			t_ctx_destroy(ctx);
			cr_skip_test("LOOP_CONFIGURE: %s: block devices not tried\n", strerror(e));
		}
		refused_as_the_kernel(ctx, dev, 0, "block device");
		close(dev);     /* autoclear: detached at the last close */
		close(back);
	}
	close(lc);
	t_ctx_destroy(ctx);
}

/*
 * A DONTCACHE write has its pages written back by the kernel at once (it
 * kicks writeback when the write returns) rather than left dirty for the
 * flusher's 30 seconds; whether the clean pages then leave the cache
 * depends on where the kernel finishes the writeback, so that is not
 * asserted. The kernel's AIO and the engine, on each backend, alike.
 */
static bool write_goes_clean(fsaio_ctx_t *ctx, int fd, uint64_t off, size_t len)
{
	uint8_t *buf = malloc(len);
	int64_t res;

	cr_assert_not_null(buf);
	t_fill_pattern(buf, len, off, SEED);
	res = dontcache_rw(ctx, fd, true, buf, len, off);
	free(buf);
	cr_assert_eq(res, (int64_t)len, "%s: res %lld", ctx ? "fsaio" : "kernel", (long long)res);
	for (int i = 0; i < 1000; i++) {
		if (t_dirty_pages(fd, off, len) == 0)
			return true;
		t_sleep_ms(10);
	}
	return false;
}

Test(dontcache, a_write_is_written_back_at_once)
{
	static const uint32_t backends[] = { FSAIO_BACKEND_THREADS, FSAIO_BACKEND_AUTO };
	uint64_t range[2] = { 0, 4096 }, cs[5];
	int fd = t_coldfile(FILE_SIZE, SEED);

	if (syscall(451 /* cachestat */, fd, range, cs, 0) != 0)
		cr_skip_test("no cachestat(2) here (%s): dirty pages cannot be counted\n",
			     strerror(errno));
	cr_assert(write_goes_clean(NULL, fd, 0, 64 * KiB),
		  "the kernel's DONTCACHE write stayed dirty for 10 s");
	for (unsigned b = 0; b < 2; b++) {
		fsaio_ctx_t *ctx = t_ctx_backend(backends[b]);

		cr_assert(write_goes_clean(ctx, fd, (1 + b) * 256 * KiB, 64 * KiB),
			  "backend %u: a DONTCACHE write stayed dirty for 10 s", backends[b]);
		t_ctx_destroy(ctx);
	}
	t_check_file(fd, 0, FILE_SIZE, SEED);
}
