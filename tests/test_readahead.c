/* SPDX-License-Identifier: MIT */
/*
 * The engine's own readahead: a sequential stream that misses gets the
 * ranges ahead of it prefetched by a worker; random access gets none;
 * fsaio_fadvise's RANDOM and SEQUENTIAL are honoured. The kernel's own
 * readahead is switched off on the fd (posix_fadvise RANDOM, which does not
 * stop readahead(2)) where a test must tell the engine's prefetch apart
 * from the kernel's.
 */
#include "t_helpers.h"

#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#define KiB 1024u
#define MiB (1024u * 1024u)
#define PAGE 4096u

TestSuite(readahead, .init = t_setup, .fini = t_teardown, .timeout = 60);

static int64_t read1(fsaio_ctx_t *ctx, int fd, uint8_t *buf, size_t len, uint64_t off)
{
	struct fsaio_req req;
	struct fsaio_event ev;

	fsaio_prep_pread(&req, fd, buf, len, (int64_t)off);
	t_submit1(ctx, &req);
	t_reap_all(ctx, 1, &ev, T_EVENT_TIMEOUT_MS);
	return ev.res;
}

/* Wait up to ms for [off, off+len) to be wholly in the cache. */
static bool wait_cached(int fd, uint64_t off, uint64_t len, unsigned ms)
{
	for (unsigned i = 0; i < ms / 5; i++) {
		if (t_cached_pages(fd, off, len) >= len / PAGE)
			return true;
		t_sleep_ms(5);
	}
	return t_cached_pages(fd, off, len) >= len / PAGE;
}

Test(readahead, missed_stream_gets_the_next_ranges_cached)
{
	enum { LEN = 128 * KiB };
	int fd = t_tmpfile(32 * MiB, 21);
	uint8_t *buf = malloc(LEN);

	t_make_cold(fd);
	cr_assert_eq(posix_fadvise(fd, 0, 0, POSIX_FADV_RANDOM), 0);
	fsaio_ctx_t *ctx = t_ctx(NULL);

	/* Three reads make a stream; the third misses and starts the window
	 * (4 requests ahead of the furthest end). */
	for (unsigned i = 0; i < 3; i++) {
		cr_assert_eq(read1(ctx, fd, buf, LEN, (uint64_t)i * LEN), LEN);
		t_check_pattern(buf, LEN, (uint64_t)i * LEN, 21);
	}
	cr_assert(wait_cached(fd, 3 * LEN, 4 * LEN, 10000),
		  "the 4 requests ahead were not prefetched: %llu pages cached",
		  (unsigned long long)t_cached_pages(fd, 3 * LEN, 4 * LEN));
	struct fsaio_stats st = t_stats(ctx);
	cr_assert_geq(st.readahead_calls, 1);
	cr_assert_geq(st.prefetched_bytes, 4 * LEN);

	/* The next read of the stream is a cache hit, counted as such. */
	cr_assert_eq(read1(ctx, fd, buf, LEN, 3 * LEN), LEN);
	t_check_pattern(buf, LEN, 3 * LEN, 21);
	st = t_stats(ctx);
	cr_assert_geq(st.stream_hits, 1);
	/* Nothing far beyond the window was read. */
	cr_assert_eq(t_cached_pages(fd, 24 * MiB, 8 * MiB), 0);
	t_ctx_destroy(ctx);
	free(buf);
}

Test(readahead, several_in_flight_are_one_stream)
{
	enum { LEN = 64 * KiB, D = 8, ROUNDS = 4 };
	int fd = t_tmpfile(32 * MiB, 22);
	uint8_t *buf = malloc((size_t)LEN * D);

	t_make_cold(fd);
	cr_assert_eq(posix_fadvise(fd, 0, 0, POSIX_FADV_RANDOM), 0);
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
	uint64_t end = (uint64_t)ROUNDS * D * LEN;
	cr_assert(wait_cached(fd, end, 4 * LEN, 10000), "nothing prefetched past %llu",
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
		cr_assert_eq(read1(ctx, fd, buf, PAGE, off), PAGE);
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
	int fd = t_tmpfile(16 * MiB, 24);
	uint8_t *buf = malloc(LEN);

	t_make_cold(fd);
	fsaio_ctx_t *ctx = t_ctx(NULL);
	T_ASSERT_RET(fsaio_fadvise(ctx, fd, POSIX_FADV_RANDOM), 0);
	for (unsigned i = 0; i < 16; i++)
		cr_assert_eq(read1(ctx, fd, buf, LEN, (uint64_t)i * LEN), LEN);
	struct fsaio_stats st = t_stats(ctx);
	cr_assert_eq(st.readahead_calls, 0);
	cr_assert_eq(st.stream_hits, 0);
	/* The kernel was told too: it read nothing beyond the requests. */
	cr_assert_eq(t_cached_pages(fd, 16 * LEN, 0), 0);
	t_ctx_destroy(ctx);
	free(buf);
}

Test(readahead, fadvise_sequential_prefetches_from_the_first_read)
{
	enum { LEN = 1 * MiB };
	int fd = t_tmpfile(32 * MiB, 25);
	uint8_t *buf = malloc(LEN);

	t_make_cold(fd);
	fsaio_ctx_t *ctx = t_ctx(NULL);
	T_ASSERT_RET(fsaio_fadvise(ctx, fd, POSIX_FADV_SEQUENTIAL), 0);
	/* One read in the middle: the kernel reads just it (a lone read), the
	 * engine prefetches the window after it at once. */
	cr_assert_eq(read1(ctx, fd, buf, LEN, 8 * MiB), LEN);
	t_check_pattern(buf, LEN, 8 * MiB, 25);
	cr_assert(wait_cached(fd, 9 * MiB, 4 * MiB, 10000), "no prefetch after a SEQUENTIAL read");
	cr_assert_geq(t_stats(ctx).readahead_calls, 1);
	t_ctx_destroy(ctx);
	free(buf);
}

Test(readahead, no_readahead_flag_turns_it_all_off)
{
	enum { LEN = 128 * KiB };
	int fd = t_tmpfile(16 * MiB, 26);
	uint8_t *buf = malloc(LEN);

	t_make_cold(fd);
	cr_assert_eq(posix_fadvise(fd, 0, 0, POSIX_FADV_RANDOM), 0);
	struct fsaio_params p = { .flags = FSAIO_CTX_NO_READAHEAD };
	fsaio_ctx_t *ctx = t_ctx(&p);
	for (unsigned i = 0; i < 16; i++)
		cr_assert_eq(read1(ctx, fd, buf, LEN, (uint64_t)i * LEN), LEN);
	cr_assert_eq(t_stats(ctx).readahead_calls, 0);
	cr_assert_eq(t_cached_pages(fd, 16 * LEN, 0), 0);
	t_ctx_destroy(ctx);
	free(buf);
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
