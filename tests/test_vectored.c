/* SPDX-License-Identifier: MIT */
/*
 * Vectored I/O with many small iovecs of odd sizes (up to IOV_MAX = 1024),
 * laid out in one buffer with sentinel gaps between them, so that a byte
 * scattered to the wrong iovec, or past the end of one, is caught. The
 * half-cached cases put the end of the cached prefix inside an iovec: the
 * worker's retry has to resume in the middle of it.
 */
#include "t_helpers.h"

#include <limits.h>
#include <stdlib.h>
#include <unistd.h>

#define KiB 1024u
#define MiB (1024u * 1024u)
#define SENT 0x5a
#define GAP 3

TestSuite(vectored, .init = t_setup, .fini = t_teardown, .timeout = 60);

struct layout {
	struct iovec iov[IOV_MAX];
	int n;
	uint8_t *buf;
	size_t buflen;
	size_t total;
};

/* size_of(i) gives each iovec's length; the buffer holds them with GAP
 * sentinel bytes before, between and after. */
static void layout_init(struct layout *l, int n, size_t (*size_of)(int))
{
	size_t len = GAP;
	for (int i = 0; i < n; i++)
		len += size_of(i) + GAP;
	l->buf = malloc(len);
	cr_assert_not_null(l->buf);
	memset(l->buf, SENT, len);
	l->buflen = len;
	l->n = n;
	l->total = 0;
	size_t pos = GAP;
	for (int i = 0; i < n; i++) {
		size_t s = size_of(i);
		l->iov[i] = (struct iovec){ l->buf + pos, s };
		pos += s + GAP;
		l->total += s;
	}
}

/* Walk the iovecs as the kernel fills them: the first res bytes hold the
 * file from off on, the rest and every gap still hold the sentinel. */
static void layout_check(const struct layout *l, uint64_t off, size_t res, unsigned seed)
{
	size_t done = 0;
	t_check_bytes(l->buf, GAP, SENT);
	for (int i = 0; i < l->n; i++) {
		const uint8_t *p = l->iov[i].iov_base;
		size_t s = l->iov[i].iov_len;
		size_t filled = res > done ? (res - done < s ? res - done : s) : 0;
		if (filled)
			t_check_pattern(p, filled, off + done, seed);
		t_check_bytes(p + filled, s - filled + GAP, SENT);
		done += s;
	}
}

/* For writes: each iovec holds the pattern of the file offset it goes to. */
static void layout_fill(struct layout *l, uint64_t off, unsigned seed)
{
	size_t done = 0;
	for (int i = 0; i < l->n; i++) {
		t_fill_pattern(l->iov[i].iov_base, l->iov[i].iov_len, off + done, seed);
		done += l->iov[i].iov_len;
	}
}

static size_t odd_size(int i)
{
	if (i % 97 == 13)
		return 0;       /* empty iovecs are legal and must be skipped */
	return 1 + (size_t)((unsigned)i * 37u % 500u);
}

static size_t one_byte(int i)
{
	(void)i;
	return 1;
}

static size_t half_page(int i)
{
	(void)i;
	return 2048;
}

enum cache { HOT, COLD };

static const uint32_t backends[] = {
	FSAIO_BACKEND_THREADS, FSAIO_BACKEND_AUTO, FSAIO_BACKEND_URING,
};
#define NBACKENDS (sizeof(backends) / sizeof(backends[0]))

/* Through each miss backend; the pool's counters only where the pool is
 * asked for. */
static void preadv_case(enum cache c, int n, size_t (*size_of)(int), uint64_t off)
{
	unsigned seed = 70 + (unsigned)c;
	int fd = t_tmpfile(2 * MiB, seed);
	static struct layout l;
	layout_init(&l, n, size_of);

	for (unsigned k = 0; k < NBACKENDS; k++) {
		/* A cold read small enough to be tried inline without a probe
		 * can be finished by the readahead that very attempt starts (the
		 * kernel winning a race, see test_basic): then set up again. */
		for (int round = 0;; round++) {
			cr_assert_lt(round, 5, "5 cold rounds, all read something inline");
			if (c == HOT)
				t_make_hot(fd, 0, 2 * MiB);
			else
				t_make_cold(fd);
			memset(l.buf, SENT, l.buflen);
			struct fsaio_params p = { .miss_backend = backends[k] };
			fsaio_ctx_t *ctx = t_ctx(&p);
			struct fsaio_req req;
			fsaio_prep_preadv(&req, fd, l.iov, n, (int64_t)off);
			struct fsaio_event ev = t_run1(ctx, &req);
			cr_assert_eq(ev.res, (int64_t)l.total, "backend %u: res %lld, want %zu",
				     backends[k], (long long)ev.res, l.total);
			layout_check(&l, off, l.total, seed);

			struct fsaio_stats st = t_stats(ctx);
			t_ctx_destroy(ctx);
			if (c == HOT) {
				cr_assert_eq(st.completed_inline, 1);
				cr_assert_eq(st.queued, 0);
			} else if (backends[k] == FSAIO_BACKEND_THREADS) {
				cr_assert_eq(st.bytes_inline + st.bytes_worker, l.total);
				if (st.bytes_inline > 0)
					continue;
				cr_assert_eq(st.completed_inline, 0);
				cr_assert_eq(st.queued, 1);
			}
			break;
		}
	}
	free(l.buf);
}

Test(vectored, preadv_iov_max_hot)
{
	preadv_case(HOT, IOV_MAX, odd_size, 12345);
}

Test(vectored, preadv_iov_max_cold)
{
	preadv_case(COLD, IOV_MAX, odd_size, 12345);
}

Test(vectored, preadv_one_byte_iovecs)
{
	preadv_case(HOT, IOV_MAX, one_byte, 4095);
	preadv_case(COLD, IOV_MAX, one_byte, 999999);
}

/* The cached prefix [0, hot) ends inside an iovec (or exactly between two):
 * the inline part stops there and the worker resumes at that byte. As in
 * test_basic, a round where the kernel's readahead won the race and the
 * engine rightly finished inline is checked and set up again. */
static void preadv_half(size_t (*size_of)(int), uint64_t off, uint64_t hot, bool mid_iovec)
{
	unsigned seed = 72;
	int fd = t_tmpfile(2 * MiB, seed);
	static struct layout l;
	layout_init(&l, IOV_MAX, size_of);
	cr_assert_gt(off + l.total, hot, "the read must go past the cached prefix");

	/* Make sure the setup is the case it claims to be. */
	size_t acc = 0;
	bool boundary = false;
	for (int i = 0; i < l.n; i++) {
		acc += l.iov[i].iov_len;
		if (off + acc == hot)
			boundary = true;
	}
	cr_assert_eq(boundary, !mid_iovec);

	bool partial_seen = false;
	for (int round = 0; round < 5 && !partial_seen; round++) {
		t_make_cold(fd);
		t_make_hot(fd, 0, hot);
		cr_assert_eq(t_cached_pages(fd, hot, 0), 0);
		memset(l.buf, SENT, l.buflen);

		fsaio_ctx_t *ctx = t_pool_ctx(NULL);
		struct fsaio_req req;
		fsaio_prep_preadv(&req, fd, l.iov, l.n, (int64_t)off);
		struct fsaio_event ev = t_run1(ctx, &req);
		cr_assert_eq(ev.res, (int64_t)l.total, "res %lld, want %zu", (long long)ev.res, l.total);
		layout_check(&l, off, l.total, seed);

		struct fsaio_stats st = t_stats(ctx);
		if (st.partial_inline == 0 && st.completed_inline == 1) {
			cr_assert_eq(st.bytes_inline, l.total);
			t_ctx_destroy(ctx);
			continue;
		}
		partial_seen = true;
		cr_assert_eq(st.partial_inline, 1, "ci %llu pi %llu q %llu bi %llu bw %llu",
			     (unsigned long long)st.completed_inline, (unsigned long long)st.partial_inline,
			     (unsigned long long)st.queued, (unsigned long long)st.bytes_inline,
			     (unsigned long long)st.bytes_worker);
		cr_assert_eq(st.queued, 1);
		cr_assert_geq(st.bytes_inline, hot - off);
		cr_assert_gt(st.bytes_worker, 0);
		cr_assert_eq(st.bytes_inline + st.bytes_worker, l.total);
		t_ctx_destroy(ctx);
	}
	cr_assert(partial_seen, "5 rounds, none took the partial-inline path");
	free(l.buf);
}

Test(vectored, preadv_half_cached_resumes_mid_iovec)
{
	preadv_half(odd_size, 0, 64 * KiB, true);
}

Test(vectored, preadv_half_cached_unaligned_start)
{
	preadv_half(odd_size, 1001, 128 * KiB, true);
}

Test(vectored, preadv_half_cached_on_iovec_boundary)
{
	preadv_half(half_page, 0, 64 * KiB, false);
}

static void pwritev_case(enum cache c, size_t (*size_of)(int), uint64_t off)
{
	size_t fsize = 1 * MiB;
	static struct layout l;
	layout_init(&l, IOV_MAX, size_of);

	for (unsigned k = 0; k < NBACKENDS; k++) {
		unsigned seed = 74 + k;
		int fd = t_tmpfile(fsize, 73);
		if (c == HOT)
			t_make_hot(fd, 0, fsize);
		else
			t_make_cold(fd);
		layout_fill(&l, off, seed);
		struct fsaio_params p = { .miss_backend = backends[k] };
		fsaio_ctx_t *ctx = t_ctx(&p);
		struct fsaio_req req;
		fsaio_prep_pwritev(&req, fd, l.iov, l.n, (int64_t)off);
		struct fsaio_event ev = t_run1(ctx, &req);
		cr_assert_eq(ev.res, (int64_t)l.total, "backend %u: res %lld, want %zu", backends[k],
			     (long long)ev.res, l.total);
		t_check_file(fd, 0, off, 73);
		t_check_file(fd, off, l.total, seed);
		t_check_file(fd, off + l.total, fsize - off - l.total, 73);
		struct fsaio_stats st = t_stats(ctx);
		if (backends[k] == FSAIO_BACKEND_THREADS)
			cr_assert_eq(st.bytes_inline + st.bytes_worker, l.total);
		t_ctx_destroy(ctx);
		close(fd);
	}
	free(l.buf);
}

Test(vectored, pwritev_iov_max_cold)
{
	pwritev_case(COLD, odd_size, 3333);
}

Test(vectored, pwritev_iov_max_hot)
{
	pwritev_case(HOT, odd_size, 70001);
}

Test(vectored, pwritev_one_byte_iovecs)
{
	pwritev_case(COLD, one_byte, 4093);
}

/* Only empty iovecs: nothing to do, still exactly one event. */
Test(vectored, all_empty_iovecs)
{
	int fd = t_tmpfile(64 * KiB, 75);
	fsaio_ctx_t *ctx = t_ctx(NULL);
	uint8_t b;
	struct iovec iov[8];
	for (int i = 0; i < 8; i++)
		iov[i] = (struct iovec){ &b, 0 };
	struct fsaio_req req;
	fsaio_prep_preadv(&req, fd, iov, 8, 0);
	cr_assert_eq(t_run1(ctx, &req).res, 0);
	fsaio_prep_pwritev(&req, fd, iov, 8, 0);
	cr_assert_eq(t_run1(ctx, &req).res, 0);
	fsaio_prep_preadv(&req, fd, iov, 0, 0);
	cr_assert_eq(t_run1(ctx, &req).res, 0);
	t_check_file(fd, 0, 64 * KiB, 75);
	t_ctx_destroy(ctx);
}
