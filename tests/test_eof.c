/* SPDX-License-Identifier: MIT */
/*
 * End of file: a read that reaches EOF completes short with exactly the bytes
 * that exist, one that starts at or past EOF completes with 0, whichever path
 * (inline, worker, io_uring, or inline and then another) carries it. Bytes
 * of the buffer past what was read must stay untouched.
 */
#include "t_helpers.h"

#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#define KiB 1024u

/* Not a multiple of the page size, so EOF falls inside a page. */
#define FSIZE 300007u
#define SENT 0xee

TestSuite(eof, .init = t_setup, .fini = t_teardown, .timeout = 60);

enum cache { HOT, COLD, HALF };

static int prepare(unsigned seed, enum cache c)
{
	int fd = t_tmpfile(FSIZE, seed);

	if (c == HOT) {
		t_make_hot(fd, 0, FSIZE);
	} else {
		t_make_cold(fd);
		if (c == HALF)
			t_make_hot(fd, 0, 128 * KiB);
	}
	return fd;
}

/* Read [off, off+len) through each miss backend and assert res == want, the
 * data, and the sentinel beyond what was read; with the pool, also that the
 * byte counters account for exactly what was read. */
static void read_expect(enum cache c, uint64_t off, size_t len, int64_t want)
{
	static const uint32_t backends[] = {
		FSAIO_BACKEND_THREADS, FSAIO_BACKEND_AUTO, FSAIO_BACKEND_URING,
	};
	unsigned seed = 10 + (unsigned)c;
	int fd = prepare(seed, c);
	uint8_t *buf = malloc(len + 64);

	for (unsigned k = 0; k < sizeof(backends) / sizeof(backends[0]); k++) {
		if (k) {
			close(fd);
			fd = prepare(seed, c);
		}
		struct fsaio_params p = { .miss_backend = backends[k] };
		fsaio_ctx_t *ctx = t_ctx(&p);
		memset(buf, SENT, len + 64);
		struct fsaio_req req;
		fsaio_prep_pread(&req, fd, buf, len, (int64_t)off);
		struct fsaio_event ev = t_run1(ctx, &req);
		cr_assert_eq(ev.res, want, "backend %u, cache %d, read %zu at %llu: res %lld, want %lld",
			     backends[k], c, len, (unsigned long long)off, (long long)ev.res,
			     (long long)want);
		cr_assert_eq(ev.res2, 0);
		t_check_pattern(buf, (size_t)want, off, seed);
		t_check_bytes(buf + want, len + 64 - (size_t)want, SENT);

		struct fsaio_stats st = t_stats(ctx);
		cr_assert_eq(st.requests, 1);
		if (backends[k] == FSAIO_BACKEND_THREADS)
			cr_assert_eq(st.bytes_inline + st.bytes_worker, (uint64_t)want);
		t_ctx_destroy(ctx);
	}
	close(fd);
	free(buf);
}

Test(eof, read_ending_exactly_at_eof)
{
	read_expect(HOT, FSIZE - 5000, 5000, 5000);
	read_expect(COLD, FSIZE - 70000, 70000, 70000);
}

Test(eof, read_across_eof_hot)
{
	read_expect(HOT, 290000, 64 * KiB, FSIZE - 290000);
}

Test(eof, read_across_eof_cold)
{
	read_expect(COLD, 250000, 128 * KiB, FSIZE - 250000);
}

Test(eof, read_across_eof_cold_small)
{
	read_expect(COLD, FSIZE - 100, 4096, 100);
}

/* Cached prefix inline, then a worker that meets EOF: a short total. */
Test(eof, read_across_eof_half_cached)
{
	read_expect(HALF, 0, 1024 * KiB, FSIZE);
	read_expect(HALF, 1000, 512 * KiB, FSIZE - 1000);
}

Test(eof, read_at_eof)
{
	read_expect(HOT, FSIZE, 4096, 0);
	read_expect(COLD, FSIZE, 256 * KiB, 0);
}

Test(eof, read_past_eof)
{
	read_expect(HOT, FSIZE + 5000, 4096, 0);
	read_expect(COLD, FSIZE + 1000000, 256 * KiB, 0);
	read_expect(COLD, (uint64_t)1 << 40, 8192, 0);
}

Test(eof, zero_length_read)
{
	read_expect(HOT, 4096, 0, 0);
	read_expect(COLD, FSIZE + 1, 0, 0);
}

Test(eof, empty_file)
{
	int fd = t_tmpfile(0, 1);
	fsaio_ctx_t *ctx = t_ctx(NULL);
	uint8_t buf[4096];
	struct fsaio_req reqs[2], *rp[2] = { &reqs[0], &reqs[1] };
	fsaio_prep_pread(&reqs[0], fd, buf, sizeof(buf), 0);
	fsaio_prep_pread(&reqs[1], fd, buf, sizeof(buf), 4096);
	t_submit(ctx, rp, 2);
	struct fsaio_event evs[2];
	t_reap_all(ctx, 2, evs, T_EVENT_TIMEOUT_MS);
	t_match_events(evs, 2, rp, 2);
	cr_assert_eq(evs[0].res, 0);
	cr_assert_eq(evs[1].res, 0);
	t_ctx_destroy(ctx);
}

/* Vectored read across EOF: iovecs are filled in order up to EOF; those
 * wholly past it keep their contents. */
Test(eof, preadv_across_eof)
{
	for (int c = HOT; c <= HALF; c++) {
		unsigned seed = 20 + (unsigned)c;
		int fd = prepare(seed, (enum cache)c);
		fsaio_ctx_t *ctx = t_ctx(NULL);
		enum { NIOV = 40, SEG = 10007 };
		uint8_t *buf = malloc((size_t)NIOV * SEG);
		memset(buf, SENT, (size_t)NIOV * SEG);
		struct iovec iov[NIOV];
		for (int i = 0; i < NIOV; i++)
			iov[i] = (struct iovec){ buf + (size_t)i * SEG, SEG };
		uint64_t off = 3;
		struct fsaio_req req;
		fsaio_prep_preadv(&req, fd, iov, NIOV, (int64_t)off);
		t_submit1(ctx, &req);
		struct fsaio_event ev;
		t_reap_all(ctx, 1, &ev, T_EVENT_TIMEOUT_MS);
		int64_t want = FSIZE - (int64_t)off;
		cr_assert_eq(ev.res, want, "cache %d: res %lld", c, (long long)ev.res);
		t_check_pattern(buf, (size_t)want, off, seed);
		t_check_bytes(buf + want, (size_t)NIOV * SEG - (size_t)want, SENT);
		t_ctx_destroy(ctx);
		free(buf);
		close(fd);
	}
}

/* A file that grows between submissions: the engine must not remember an
 * old EOF. */
Test(eof, file_grows)
{
	int fd = t_tmpfile(8192, 30);
	fsaio_ctx_t *ctx = t_ctx(NULL);
	uint8_t buf[16384];
	struct fsaio_req req;
	struct fsaio_event ev;

	fsaio_prep_pread(&req, fd, buf, sizeof(buf), 0);
	t_submit1(ctx, &req);
	t_reap_all(ctx, 1, &ev, T_EVENT_TIMEOUT_MS);
	cr_assert_eq(ev.res, 8192);

	uint8_t more[8192];
	t_fill_pattern(more, sizeof(more), 8192, 30);
	cr_assert_eq(pwrite(fd, more, sizeof(more), 8192), (ssize_t)sizeof(more));
	t_make_cold(fd);

	fsaio_prep_pread(&req, fd, buf, sizeof(buf), 0);
	t_submit1(ctx, &req);
	t_reap_all(ctx, 1, &ev, T_EVENT_TIMEOUT_MS);
	cr_assert_eq(ev.res, (int64_t)sizeof(buf));
	t_check_pattern(buf, sizeof(buf), 0, 30);
	t_ctx_destroy(ctx);
}

/* A write past EOF extends the file; the hole reads back as zeros. */
Test(eof, write_past_eof_extends)
{
	int fd = t_tmpfile(10000, 31);
	fsaio_ctx_t *ctx = t_ctx(NULL);
	enum { LEN = 5000 };
	uint64_t off = 20000;
	uint8_t src[LEN];
	t_fill_pattern(src, LEN, off, 32);
	struct fsaio_req req;
	fsaio_prep_pwrite(&req, fd, src, LEN, (int64_t)off);
	t_submit1(ctx, &req);
	struct fsaio_event ev;
	t_reap_all(ctx, 1, &ev, T_EVENT_TIMEOUT_MS);
	cr_assert_eq(ev.res, LEN);

	struct stat st;
	cr_assert_eq(fstat(fd, &st), 0);
	cr_assert_eq(st.st_size, (off_t)(off + LEN));
	t_check_file(fd, 0, 10000, 31);
	uint8_t hole[10000];
	cr_assert_eq(pread(fd, hole, sizeof(hole), 10000), (ssize_t)sizeof(hole));
	t_check_bytes(hole, sizeof(hole), 0);
	t_check_file(fd, off, LEN, 32);
	t_ctx_destroy(ctx);
}
