/* SPDX-License-Identifier: MIT */
/*
 * O_DIRECT files: carried by the context's io_uring ring, or by the pool
 * when the backend is THREADS (or io_uring is denied). The data must be
 * right either way; the kernel's -EINVAL for a misaligned request arrives
 * in the event; a short read at EOF is continued and ends at EOF; a ring
 * with requests in it is drained by destroy.
 */
#include "t_helpers.h"

#include <fcntl.h>
#include <linux/io_uring.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#define KiB 1024u
#define MiB (1024u * 1024u)
#define ALIGN 4096u

TestSuite(direct, .init = t_setup, .fini = t_teardown, .timeout = 60);

static const uint32_t backends[] = { FSAIO_BACKEND_URING, FSAIO_BACKEND_THREADS };
#define NB (sizeof(backends) / sizeof(backends[0]))

static void *abuf(size_t len)
{
	void *p = NULL;
	cr_assert_eq(posix_memalign(&p, ALIGN, len), 0);
	memset(p, 0xee, len);
	return p;
}

/* The file of a test: its buffered fd and the same file opened O_DIRECT. */
struct dfile {
	int bfd, fd;
};

/* A file of size bytes of seed's pattern, made cold first when asked,
 * opened again O_DIRECT with flags. */
static struct dfile dfile(size_t size, unsigned seed, bool cold, int flags)
{
	struct dfile f = { .bfd = t_tmpfile(size, seed) };

	if (cold)
		t_make_cold(f.bfd);
	f.fd = t_reopen(f.bfd, flags | O_DIRECT);
	return f;
}

/* The body of a test for one backend, on a context of that backend. */
typedef void backend_case(fsaio_ctx_t *ctx, unsigned b, const struct dfile *f);

/* Run fn once per backend, each on a fresh context; then close f->fd. */
static void each_backend(const struct dfile *f, backend_case *fn)
{
	for (unsigned b = 0; b < NB; b++) {
		fsaio_ctx_t *ctx = t_ctx_backend(backends[b]);

		fn(ctx, b, f);
		t_ctx_destroy(ctx);
	}
	close(f->fd);
}

/* The path taken, from the stats: the ring when asked and possible. */
static void check_path(fsaio_ctx_t *ctx, uint32_t backend, unsigned nreq)
{
	struct fsaio_stats st = t_stats(ctx);

	if (backend == FSAIO_BACKEND_URING && t_ring_ok()) {
		cr_assert_geq(st.uring_submissions, nreq);
		cr_assert_eq(st.queued, 0);
	} else {
		cr_assert_eq(st.uring_submissions, 0);
		cr_assert_eq(st.queued, nreq);
	}
}

/* Run n reads of len bytes each, whose user_data is their file offset:
 * each must read all of it, the pattern of seed. */
static void run_reads(fsaio_ctx_t *ctx, struct fsaio_req *req, unsigned n, size_t len,
		      unsigned seed)
{
	struct fsaio_event *ev = calloc(n, sizeof(*ev));

	cr_assert_not_null(ev);
	t_run(ctx, req, n, ev);
	for (unsigned i = 0; i < n; i++) {
		cr_assert_eq(ev[i].res, (int64_t)len, "res %lld", (long long)ev[i].res);
		t_check_pattern(ev[i].req->buf, len, (uint64_t)(uintptr_t)ev[i].user_data, seed);
	}
	free(ev);
}

static void aligned_reads(fsaio_ctx_t *ctx, unsigned b, const struct dfile *f)
{
	enum { N = 16, LEN = 64 * KiB };
	uint8_t *buf = abuf((size_t)N * LEN);
	struct fsaio_req req[N];

	for (unsigned i = 0; i < N; i++) {
		uint64_t off = (uint64_t)((i * 7) % N) * LEN + (b ? ALIGN : 0);
		fsaio_prep_pread(&req[i], f->fd, buf + (size_t)i * LEN, LEN, (int64_t)off);
		req[i].user_data = (void *)(uintptr_t)off;
	}
	run_reads(ctx, req, N, LEN, 3);
	check_path(ctx, backends[b], N);
	free(buf);
}

Test(direct, aligned_reads_verify)
{
	struct dfile f = dfile(4 * MiB, 3, true, O_RDONLY);

	each_backend(&f, aligned_reads);
}

static void aligned_writes(fsaio_ctx_t *ctx, unsigned b, const struct dfile *f)
{
	enum { N = 4, LEN = 128 * KiB };
	unsigned seed = 20 + b;
	uint8_t *buf = abuf((size_t)N * LEN);
	struct fsaio_req req[N + 1];
	struct fsaio_event ev[N + 1];

	for (unsigned i = 0; i < N; i++) {
		uint64_t off = (uint64_t)i * 2 * LEN;
		t_fill_pattern(buf + (size_t)i * LEN, LEN, off, seed);
		fsaio_prep_pwrite(&req[i], f->fd, buf + (size_t)i * LEN, LEN, (int64_t)off);
	}
	t_run(ctx, req, N, ev);
	for (unsigned i = 0; i < N; i++)
		cr_assert_eq(ev[i].res, LEN);
	fsaio_prep_fsync(&req[N], f->fd);
	t_submit1(ctx, &req[N]);
	t_reap_all(ctx, 1, &ev[N], T_EVENT_TIMEOUT_MS);
	cr_assert_eq(ev[N].res, 0);

	/* Read back through the page cache, made cold first. */
	t_make_cold(f->bfd);
	uint8_t *chk = malloc(LEN);
	for (unsigned i = 0; i < N; i++) {
		uint64_t off = (uint64_t)i * 2 * LEN;
		cr_assert_eq(pread(f->bfd, chk, LEN, (off_t)off), (ssize_t)LEN);
		t_check_pattern(chk, LEN, off, seed);
		/* The blocks between were not touched. */
		cr_assert_eq(pread(f->bfd, chk, LEN, (off_t)(off + LEN)), (ssize_t)LEN);
		t_check_pattern(chk, LEN, off + LEN, 4);
	}
	free(chk);
	check_path(ctx, backends[b], N + 1);
	free(buf);
}

Test(direct, aligned_writes_verify)
{
	struct dfile f = dfile(2 * MiB, 4, false, O_RDWR);

	each_backend(&f, aligned_writes);
}

static void misaligned(fsaio_ctx_t *ctx, unsigned b, const struct dfile *f)
{
	uint8_t *buf = abuf(64 * KiB + ALIGN);
	struct fsaio_req req[4];
	struct fsaio_event ev[4];

	(void)b;
	fsaio_prep_pread(&req[0], f->fd, buf + 1, 8 * KiB, 0);          /* buffer */
	fsaio_prep_pread(&req[1], f->fd, buf, 8 * KiB, 1);              /* offset */
	fsaio_prep_pread(&req[2], f->fd, buf, 100, 0);                  /* length */
	fsaio_prep_pwrite(&req[3], f->fd, buf + 3, 4 * KiB, 8 * KiB);   /* a write */
	/* Accepted: only the kernel can tell, and it says so in the event. */
	t_run(ctx, req, 4, ev);
	for (unsigned i = 0; i < 4; i++)
		cr_assert_eq(ev[i].res, -EINVAL, "request %ld: res %lld",
			     (long)(ev[i].req - req), (long long)ev[i].res);
	free(buf);
}

Test(direct, misaligned_gives_einval_in_event)
{
	struct dfile f = dfile(1 * MiB, 5, false, O_RDWR);

	each_backend(&f, misaligned);
	t_check_file(f.bfd, 0, 1 * MiB, 5);
}

static void short_read_at_eof(fsaio_ctx_t *ctx, unsigned b, const struct dfile *f)
{
	uint8_t *buf = abuf(16 * KiB);
	struct fsaio_req req[2];
	struct fsaio_event ev[2];

	(void)b;
	fsaio_prep_pread(&req[0], f->fd, buf, 8 * KiB, 1 * MiB);
	fsaio_prep_pread(&req[1], f->fd, buf + 8 * KiB, 8 * KiB, 2 * MiB);
	t_run(ctx, req, 2, ev);
	cr_assert_eq(t_event_of(ev, 2, &req[0])->res, 512);
	cr_assert_eq(t_event_of(ev, 2, &req[1])->res, 0);
	t_check_pattern(buf, 512, 1 * MiB, 6);
	free(buf);
}

Test(direct, short_read_at_eof_continues_to_eof)
{
	/* 1 MiB + 512: an O_DIRECT read across EOF returns the 512 bytes, the
	 * engine asks for the rest, and the kernel answers 0 (EOF). */
	struct dfile f = dfile(1 * MiB + 512, 6, true, O_RDONLY);

	each_backend(&f, short_read_at_eof);
}

static void mixed(fsaio_ctx_t *ctx, unsigned b, const struct dfile *f)
{
	enum { N = 24, LEN = 32 * KiB };
	uint8_t *buf = abuf((size_t)N * LEN);
	struct fsaio_req req[N];

	for (unsigned i = 0; i < N; i++) {
		/* Buffered hot, buffered cold, direct: interleaved. */
		uint64_t off = i % 3 == 0 ? (uint64_t)(i / 3) * LEN :
			       (uint64_t)(2 * MiB) + (uint64_t)i * LEN * 5 + b * MiB;
		fsaio_prep_pread(&req[i], i % 3 == 2 ? f->fd : f->bfd, buf + (size_t)i * LEN,
				 LEN, (int64_t)off);
		req[i].user_data = (void *)(uintptr_t)off;
	}
	run_reads(ctx, req, N, LEN, 7);
	struct fsaio_stats st = t_stats(ctx);
	cr_assert_geq(st.completed_inline, N / 3);
	if (backends[b] == FSAIO_BACKEND_URING && t_ring_ok())
		cr_assert_geq(st.uring_submissions, N / 3);
	free(buf);
}

Test(direct, mixed_buffered_and_direct_in_one_context)
{
	struct dfile f = { .bfd = t_tmpfile(8 * MiB, 7) };

	t_make_cold(f.bfd);
	t_make_hot(f.bfd, 0, 2 * MiB);
	f.fd = t_reopen(f.bfd, O_RDONLY | O_DIRECT);
	each_backend(&f, mixed);
}

static void cancel_or_ebusy(fsaio_ctx_t *ctx, unsigned b, const struct dfile *f)
{
	enum { N = 64, LEN = 64 * KiB };
	uint8_t *buf = abuf((size_t)N * LEN);
	struct fsaio_req req[N], *rp[N];
	struct fsaio_event ev[N];
	int ret[N];

	(void)b;
	for (unsigned i = 0; i < N; i++) {
		fsaio_prep_pread(&req[i], f->fd, buf + (size_t)i * LEN, LEN, (int64_t)i * 3 * LEN);
		rp[i] = &req[i];
	}
	t_submit(ctx, rp, N);
	t_cancel_each(ctx, req, N, ret);
	t_reap_all(ctx, N, ev, T_EVENT_TIMEOUT_MS);
	t_match_events(ev, N, rp, N);
	for (unsigned i = 0; i < N; i++) {
		const struct fsaio_event *e = t_event_of(ev, N, &req[i]);

		if (ret[i] == 0) {
			cr_assert_eq(e->res, -ECANCELED);
		} else {
			cr_assert_eq(e->res, LEN, "res %lld", (long long)e->res);
			t_check_pattern(req[i].buf, LEN, (uint64_t)i * 3 * LEN, 8);
		}
	}
	free(buf);
}

Test(direct, cancel_takes_back_or_answers_ebusy)
{
	struct dfile f = dfile(16 * MiB, 8, true, O_RDONLY);

	each_backend(&f, cancel_or_ebusy);
}

Test(direct, destroy_drains_the_ring)
{
	struct dfile f = dfile(16 * MiB, 9, true, O_RDONLY);
	static _Atomic unsigned cb_events;

	for (unsigned b = 0; b < NB; b++) {
		enum { N = 128, LEN = 16 * KiB };
		struct fsaio_params p = { .miss_backend = backends[b], .complete = t_count_cb,
					  .complete_arg = &cb_events };
		fsaio_ctx_t *ctx = t_ctx(&p);
		uint8_t *buf = abuf((size_t)N * LEN);
		struct fsaio_req req[N];

		atomic_store(&cb_events, 0);
		for (unsigned i = 0; i < N; i++)
			fsaio_prep_pread(&req[i], f.fd, buf + (size_t)i * LEN, LEN, (int64_t)i * 7 * LEN);
		t_submit_array(ctx, req, N);
		t_ctx_destroy(ctx);
		/* Every request had its one event, cancelled or not, before
		 * destroy returned; the buffers are ours again. */
		cr_assert_eq(atomic_load(&cb_events), N);
		free(buf);
	}
	close(f.fd);
}

static void vectored_and_nowait(fsaio_ctx_t *ctx, unsigned b, const struct dfile *f)
{
	uint8_t *buf = abuf(256 * KiB);
	struct iovec iov[3] = {
		{ buf, 4 * KiB }, { buf + 64 * KiB, 60 * KiB }, { buf + 128 * KiB, 8 * KiB },
	};
	struct fsaio_req req[2];
	struct fsaio_event ev[2];

	(void)b;
	fsaio_prep_preadv(&req[0], f->fd, iov, 3, 1 * MiB);
	/* RWF_NOWAIT: the whole range, or -EAGAIN if the I/O could not
	 * be issued without waiting; never a wrong byte. */
	fsaio_prep_pread(&req[1], f->fd, buf + 192 * KiB, 64 * KiB, 2 * MiB);
	req[1].rw_flags = RWF_NOWAIT;
	t_run(ctx, req, 2, ev);
	const struct fsaio_event *v = t_event_of(ev, 2, &req[0]);
	const struct fsaio_event *n = t_event_of(ev, 2, &req[1]);
	cr_assert_eq(v->res, 72 * KiB);
	t_check_pattern(buf, 4 * KiB, 1 * MiB, 10);
	t_check_pattern(buf + 64 * KiB, 60 * KiB, 1 * MiB + 4 * KiB, 10);
	t_check_pattern(buf + 128 * KiB, 8 * KiB, 1 * MiB + 64 * KiB, 10);
	cr_assert(n->res == 64 * KiB || n->res == -EAGAIN, "NOWAIT res %lld", (long long)n->res);
	if (n->res > 0)
		t_check_pattern(buf + 192 * KiB, 64 * KiB, 2 * MiB, 10);
	free(buf);
}

Test(direct, vectored_and_nowait)
{
	struct dfile f = dfile(4 * MiB, 10, true, O_RDONLY);

	each_backend(&f, vectored_and_nowait);
}
