/* SPDX-License-Identifier: MIT */
/*
 * The engine's own readahead: a sequential stream that misses gets the
 * ranges ahead of it prefetched by a worker; random access gets none;
 * fsaio_fadvise's RANDOM and SEQUENTIAL are honoured. The kernel's own
 * readahead is switched off on the fd (posix_fadvise RANDOM, which does not
 * stop readahead(2)) where a test must tell the engine's prefetch apart
 * from the kernel's. The engine leaves a stream to the kernel until it has
 * covered two device readahead limits (read_ahead_kb), so the streams here
 * run that far before anything is expected of the engine.
 */
#include "t_helpers.h"

#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#define KiB 1024u
#define MiB (1024u * 1024u)
#define PAGE 4096u

TestSuite(readahead, .init = t_setup, .fini = t_teardown, .timeout = 60);

/* The device's readahead limit, as the engine finds it (128 KiB if unknown). */
static uint64_t ra_limit(int fd)
{
	long kb = t_sysfs_ra_kb(fd);

	return kb < 0 ? 128 * KiB : (uint64_t)kb * KiB;
}

/* How far a stream runs before the engine judges the kernel's readahead
 * (the files are extended with ftruncate: holes cost no disk, so no cap). */
static uint64_t warm_bytes(int fd)
{
	return 2 * ra_limit(fd) + 1 * MiB;
}

/* Wait up to ms for [off, off+len) to be wholly in the cache. */
/* A range the test will wait on, with its evicted count before anything
 * could have read it. */
struct watch {
	int fd;
	uint64_t off, len, evicted0;
};

static struct watch watch(int fd, uint64_t off, uint64_t len)
{
	return (struct watch){ fd, off, len, t_evicted_pages(fd, off, len) };
}

/* Pages of the range read in since watch(): cached now, or cached and
 * evicted again since. Reclaim runs here while tests do (DAMON pageout of
 * physical regions idle for a minute takes fresh, never-mapped pages with
 * them), so a prefetched page may be gone before it is looked at; its
 * shadow entry still says it was read. A page evicted before watch() and
 * read again counts 0 (its old shadow is replaced): the count errs low,
 * never high. */
static uint64_t brought_in(const struct watch *w)
{
	uint64_t ev = t_evicted_pages(w->fd, w->off, w->len);
	return t_cached_pages(w->fd, w->off, w->len) + (ev > w->evicted0 ? ev - w->evicted0 : 0);
}

static bool wait_cached(const struct watch *w, unsigned ms)
{
	for (unsigned i = 0; i < ms / 5; i++) {
		if (brought_in(w) >= w->len / PAGE)
			return true;
		t_sleep_ms(5);
	}
	return brought_in(w) >= w->len / PAGE;
}

/* Read the first n blocks of len bytes of fd in order, one t_read1 each;
 * each must read all len bytes. */
static void read_blocks(fsaio_ctx_t *ctx, int fd, uint8_t *buf, size_t len, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		cr_assert_eq(t_read1(ctx, fd, buf, len, (uint64_t)i * len), (int64_t)len,
			     "block %u", i);
}

Test(readahead, missed_stream_gets_the_next_ranges_cached)
{
	enum { LEN = 1 * MiB };
	int fd = t_tmpfile(16 * MiB, 21);
	uint64_t warm = warm_bytes(fd), size = warm + 16 * MiB;
	static uint8_t buf[LEN];

	cr_assert_eq(ftruncate(fd, (off_t)size), 0);
	t_make_cold(fd);
	/* The kernel reads nothing ahead now: every stream read misses. */
	cr_assert_eq(posix_fadvise(fd, 0, 0, POSIX_FADV_RANDOM), 0);
	fsaio_ctx_t *ctx = t_ctx(NULL);
	const struct watch ahead = watch(fd, (warm + LEN - 1) / LEN * LEN, 2 * LEN);

	uint64_t off = 0;
	for (; off < warm; off += LEN) {
		cr_assert_eq(t_read1(ctx, fd, buf, LEN, off), LEN);
		if (off < 16 * MiB)     /* beyond, ftruncate's zeros */
			t_check_pattern(buf, LEN, off, 21);
	}
	/* The miss that ended the warm-up started the window (4 requests; it
	 * is topped up when half is used): the 2 requests ahead of the
	 * stream's end come into the cache with no read. */
	struct fsaio_stats st;
	cr_assert_eq(ahead.off, off);
	bool ok = wait_cached(&ahead, 10000);
	st = t_stats(ctx);
	cr_assert(ok, "the 4 requests ahead were not prefetched: %llu pages read in "
		  "(%llu calls, %llu bytes prefetched)",
		  (unsigned long long)brought_in(&ahead),
		  (unsigned long long)st.readahead_calls, (unsigned long long)st.prefetched_bytes);
	cr_assert_geq(st.readahead_calls, 1);
	cr_assert_geq(st.prefetched_bytes, 2 * LEN);

	/* The next read of the stream is a cache hit, counted as such. */
	cr_assert_eq(t_read1(ctx, fd, buf, LEN, off), LEN);
	st = t_stats(ctx);
	cr_assert_geq(st.stream_hits, 1);
	/* Nothing far beyond the window was read. */
	cr_assert_eq(t_cached_pages(fd, size - 4 * MiB, 4 * MiB), 0);
	t_ctx_destroy(ctx);
}

Test(readahead, several_in_flight_are_one_stream)
{
	enum { LEN = 64 * KiB, D = 8 };
	int fd = t_tmpfile(32 * MiB, 22);
	uint64_t warm = warm_bytes(fd);
	unsigned ROUNDS = (unsigned)((warm + D * LEN - 1) / (D * LEN)) + 2;
	uint8_t *buf = malloc((size_t)LEN * D);

	cr_assert_eq(ftruncate(fd, (off_t)(warm + 32 * MiB)), 0);
	t_make_cold(fd);
	cr_assert_eq(posix_fadvise(fd, 0, 0, POSIX_FADV_RANDOM), 0);
	uint64_t end = (uint64_t)ROUNDS * D * LEN;
	const struct watch ahead = watch(fd, end, 2 * LEN);
	fsaio_ctx_t *ctx = t_ctx(NULL);
	for (unsigned r = 0; r < ROUNDS; r++) {
		struct fsaio_req req[D], *rp[D];
		struct fsaio_event ev[D];

		for (unsigned i = 0; i < D; i++) {
			uint64_t off = ((uint64_t)r * D + i) * LEN;
			fsaio_prep_pread(&req[i], fd, buf + (size_t)i * LEN, LEN, (int64_t)off);
			rp[i] = &req[i];
		}
		t_submit(ctx, rp, D);
		t_reap_all(ctx, D, ev, T_EVENT_TIMEOUT_MS);
		for (unsigned i = 0; i < D; i++) {
			cr_assert_eq(ev[i].res, LEN);
			t_check_pattern(ev[i].req->buf, LEN, (uint64_t)ev[i].req->offset, 22);
		}
	}
	cr_assert(wait_cached(&ahead, 10000), "nothing prefetched past %llu",
		  (unsigned long long)end);
	cr_assert_geq(t_stats(ctx).readahead_calls, 1);
	t_ctx_destroy(ctx);
	free(buf);
}

Test(readahead, random_access_prefetches_nothing)
{
	enum { N = 200 };
	int fd = t_tmpfile(64 * MiB, 23);
	uint8_t buf[PAGE];

	t_make_cold(fd);
	cr_assert_eq(posix_fadvise(fd, 0, 0, POSIX_FADV_RANDOM), 0);
	fsaio_ctx_t *ctx = t_ctx(NULL);
	uint64_t x = 12345;
	for (unsigned i = 0; i < N; i++) {
		/* Distinct pages, far apart (a multiplicative walk over 16384). */
		x = (x * 2654435761u + 1) % 16384;
		uint64_t off = x * PAGE;
		cr_assert_eq(t_read1(ctx, fd, buf, PAGE, off), PAGE);
		t_check_pattern(buf, PAGE, off, 23);
	}
	struct fsaio_stats st = t_stats(ctx);
	cr_assert_eq(st.readahead_calls, 0);
	cr_assert_eq(st.prefetched_bytes, 0);
	cr_assert_eq(st.stream_hits, 0);
	/* No page beyond the ones read (a few may repeat in the walk). */
	cr_assert_leq(t_cached_pages(fd, 0, 0), N);
	t_ctx_destroy(ctx);
}

Test(readahead, fadvise_random_turns_detection_off)
{
	enum { LEN = 128 * KiB };
	int fd = t_coldfile(16 * MiB, 24);
	static uint8_t buf[LEN];

	fsaio_ctx_t *ctx = t_ctx(NULL);
	T_ASSERT_RET(fsaio_fadvise(ctx, fd, POSIX_FADV_RANDOM), 0);
	read_blocks(ctx, fd, buf, LEN, 16);
	struct fsaio_stats st = t_stats(ctx);
	cr_assert_eq(st.readahead_calls, 0);
	cr_assert_eq(st.stream_hits, 0);
	/* The kernel was told too: it read nothing beyond the requests. */
	cr_assert_eq(t_cached_pages(fd, 16 * LEN, 0), 0);
	t_ctx_destroy(ctx);
}

Test(readahead, fadvise_sequential_prefetches_from_the_first_read)
{
	enum { LEN = 1 * MiB };
	int fd = t_coldfile(32 * MiB, 25);
	static uint8_t buf[LEN];

	const struct watch ahead = watch(fd, 9 * MiB, 4 * MiB);
	fsaio_ctx_t *ctx = t_ctx(NULL);
	T_ASSERT_RET(fsaio_fadvise(ctx, fd, POSIX_FADV_SEQUENTIAL), 0);
	/* One read in the middle: the kernel reads just it (a lone read), the
	 * engine prefetches the window after it at once. */
	cr_assert_eq(t_read1(ctx, fd, buf, LEN, 8 * MiB), LEN);
	t_check_pattern(buf, LEN, 8 * MiB, 25);
	cr_assert(wait_cached(&ahead, 10000), "no prefetch after a SEQUENTIAL read: %llu pages read in",
		  (unsigned long long)brought_in(&ahead));
	cr_assert_geq(t_stats(ctx).readahead_calls, 1);
	t_ctx_destroy(ctx);
}

Test(readahead, no_readahead_flag_turns_it_all_off)
{
	enum { LEN = 128 * KiB };
	int fd = t_coldfile(16 * MiB, 26);
	static uint8_t buf[LEN];

	cr_assert_eq(posix_fadvise(fd, 0, 0, POSIX_FADV_RANDOM), 0);
	struct fsaio_params p = { .flags = FSAIO_CTX_NO_READAHEAD };
	fsaio_ctx_t *ctx = t_ctx(&p);
	read_blocks(ctx, fd, buf, LEN, 16);
	cr_assert_eq(t_stats(ctx).readahead_calls, 0);
	cr_assert_eq(t_cached_pages(fd, 16 * LEN, 0), 0);
	t_ctx_destroy(ctx);
}

Test(readahead, fadvise_bad_arguments)
{
	int fd = t_tmpfile(64 * KiB, 27);
	fsaio_ctx_t *ctx = t_ctx(NULL);

	T_ASSERT_RET(fsaio_fadvise(ctx, fd, 12345), -EINVAL);
	T_ASSERT_RET(fsaio_fadvise(ctx, fd, POSIX_FADV_WILLNEED), -EINVAL);
	T_ASSERT_RET(fsaio_fadvise(ctx, -1, POSIX_FADV_RANDOM), -EBADF);
	int dead = dup(fd);
	close(dead);
	T_ASSERT_RET(fsaio_fadvise(ctx, dead, POSIX_FADV_RANDOM), -EBADF);
	T_ASSERT_RET(fsaio_fadvise(NULL, fd, POSIX_FADV_RANDOM), -EINVAL);
	T_ASSERT_RET(fsaio_fadvise(ctx, fd, POSIX_FADV_NORMAL), 0);
	t_ctx_destroy(ctx);
}
