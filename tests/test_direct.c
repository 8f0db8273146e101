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

Test(direct, aligned_reads_verify)
{
	int bfd = t_tmpfile(4 * MiB, 3);
	t_make_cold(bfd);
	int fd = t_reopen(bfd, O_RDONLY | O_DIRECT);

	for (unsigned b = 0; b < NB; b++) {
		enum { N = 16, LEN = 64 * KiB };
		fsaio_ctx_t *ctx = t_ctx_backend(backends[b]);
		uint8_t *buf = abuf((size_t)N * LEN);
		struct fsaio_req req[N], *rp[N];
		struct fsaio_event ev[N];

		for (unsigned i = 0; i < N; i++) {
			uint64_t off = (uint64_t)((i * 7) % N) * LEN + (b ? ALIGN : 0);
			fsaio_prep_pread(&req[i], fd, buf + (size_t)i * LEN, LEN, (int64_t)off);
			req[i].user_data = (void *)(uintptr_t)off;
			rp[i] = &req[i];
		}
		t_submit(ctx, rp, N);
		t_reap_all(ctx, N, ev, T_EVENT_TIMEOUT_MS);
		t_match_events(ev, N, rp, N);
		for (unsigned i = 0; i < N; i++) {
			cr_assert_eq(ev[i].res, LEN, "res %lld", (long long)ev[i].res);
			t_check_pattern(ev[i].req->buf, LEN, (uint64_t)(uintptr_t)ev[i].user_data, 3);
		}
		check_path(ctx, backends[b], N);
		t_ctx_destroy(ctx);
		free(buf);
	}
	close(fd);
}

Test(direct, aligned_writes_verify)
{
	int bfd = t_tmpfile(2 * MiB, 4);
	int fd = t_reopen(bfd, O_RDWR | O_DIRECT);

	for (unsigned b = 0; b < NB; b++) {
		enum { N = 4, LEN = 128 * KiB };
		unsigned seed = 20 + b;
		fsaio_ctx_t *ctx = t_ctx_backend(backends[b]);
		uint8_t *buf = abuf((size_t)N * LEN);
		struct fsaio_req req[N + 1], *rp[N + 1];
		struct fsaio_event ev[N + 1];

		for (unsigned i = 0; i < N; i++) {
			uint64_t off = (uint64_t)i * 2 * LEN;
			t_fill_pattern(buf + (size_t)i * LEN, LEN, off, seed);
			fsaio_prep_pwrite(&req[i], fd, buf + (size_t)i * LEN, LEN, (int64_t)off);
			rp[i] = &req[i];
		}
		t_submit(ctx, rp, N);
		t_reap_all(ctx, N, ev, T_EVENT_TIMEOUT_MS);
		for (unsigned i = 0; i < N; i++)
			cr_assert_eq(ev[i].res, LEN);
		fsaio_prep_fsync(&req[N], fd);
		t_submit1(ctx, &req[N]);
		t_reap_all(ctx, 1, &ev[N], T_EVENT_TIMEOUT_MS);
		cr_assert_eq(ev[N].res, 0);

		/* Read back through the page cache, made cold first. */
		t_make_cold(bfd);
		uint8_t *chk = malloc(LEN);
		for (unsigned i = 0; i < N; i++) {
			uint64_t off = (uint64_t)i * 2 * LEN;
			cr_assert_eq(pread(bfd, chk, LEN, (off_t)off), (ssize_t)LEN);
			t_check_pattern(chk, LEN, off, seed);
			/* The blocks between were not touched. */
			cr_assert_eq(pread(bfd, chk, LEN, (off_t)(off + LEN)), (ssize_t)LEN);
			t_check_pattern(chk, LEN, off + LEN, 4);
		}
		free(chk);
		check_path(ctx, backends[b], N + 1);
		t_ctx_destroy(ctx);
		free(buf);
	}
	close(fd);
}

Test(direct, misaligned_gives_einval_in_event)
{
	int bfd = t_tmpfile(1 * MiB, 5);
	int fd = t_reopen(bfd, O_RDWR | O_DIRECT);

	for (unsigned b = 0; b < NB; b++) {
		fsaio_ctx_t *ctx = t_ctx_backend(backends[b]);
		uint8_t *buf = abuf(64 * KiB + ALIGN);
		struct fsaio_req req[4], *rp[4];
		struct fsaio_event ev[4];

		fsaio_prep_pread(&req[0], fd, buf + 1, 8 * KiB, 0);          /* buffer */
		fsaio_prep_pread(&req[1], fd, buf, 8 * KiB, 1);              /* offset */
		fsaio_prep_pread(&req[2], fd, buf, 100, 0);                  /* length */
		fsaio_prep_pwrite(&req[3], fd, buf + 3, 4 * KiB, 8 * KiB);   /* a write */
		for (unsigned i = 0; i < 4; i++)
			rp[i] = &req[i];
		/* Accepted: only the kernel can tell, and it says so in the event. */
		T_ASSERT_RET(fsaio_submit(ctx, rp, 4), 4);
		t_reap_all(ctx, 4, ev, T_EVENT_TIMEOUT_MS);
		t_match_events(ev, 4, rp, 4);
		for (unsigned i = 0; i < 4; i++)
			cr_assert_eq(ev[i].res, -EINVAL, "request %ld: res %lld",
				     (long)(ev[i].req - req), (long long)ev[i].res);
		t_ctx_destroy(ctx);
		free(buf);
	}
	t_check_file(bfd, 0, 1 * MiB, 5);
	close(fd);
}

Test(direct, short_read_at_eof_continues_to_eof)
{
	/* 1 MiB + 512: an O_DIRECT read across EOF returns the 512 bytes, the
	 * engine asks for the rest, and the kernel answers 0 (EOF). */
	int bfd = t_tmpfile(1 * MiB + 512, 6);
	t_make_cold(bfd);
	int fd = t_reopen(bfd, O_RDONLY | O_DIRECT);

	for (unsigned b = 0; b < NB; b++) {
		fsaio_ctx_t *ctx = t_ctx_backend(backends[b]);
		uint8_t *buf = abuf(16 * KiB);
		struct fsaio_req req[2], *rp[2] = { &req[0], &req[1] };
		struct fsaio_event ev[2];

		fsaio_prep_pread(&req[0], fd, buf, 8 * KiB, 1 * MiB);
		fsaio_prep_pread(&req[1], fd, buf + 8 * KiB, 8 * KiB, 2 * MiB);
		t_submit(ctx, rp, 2);
		t_reap_all(ctx, 2, ev, T_EVENT_TIMEOUT_MS);
		cr_assert_eq(t_event_of(ev, 2, &req[0])->res, 512);
		cr_assert_eq(t_event_of(ev, 2, &req[1])->res, 0);
		t_check_pattern(buf, 512, 1 * MiB, 6);
		t_ctx_destroy(ctx);
		free(buf);
	}
	close(fd);
}

Test(direct, mixed_buffered_and_direct_in_one_context)
{
	int bfd = t_tmpfile(8 * MiB, 7);
	t_make_cold(bfd);
	t_make_hot(bfd, 0, 2 * MiB);
	int dfd = t_reopen(bfd, O_RDONLY | O_DIRECT);

	for (unsigned b = 0; b < NB; b++) {
		enum { N = 24, LEN = 32 * KiB };
		fsaio_ctx_t *ctx = t_ctx_backend(backends[b]);
		uint8_t *buf = abuf((size_t)N * LEN);
		struct fsaio_req req[N], *rp[N];
		struct fsaio_event ev[N];

		for (unsigned i = 0; i < N; i++) {
			/* Buffered hot, buffered cold, direct: interleaved. */
			uint64_t off = i % 3 == 0 ? (uint64_t)(i / 3) * LEN :
				       (uint64_t)(2 * MiB) + (uint64_t)i * LEN * 5 + b * MiB;
			fsaio_prep_pread(&req[i], i % 3 == 2 ? dfd : bfd, buf + (size_t)i * LEN,
					 LEN, (int64_t)off);
			req[i].user_data = (void *)(uintptr_t)off;
			rp[i] = &req[i];
		}
		t_submit(ctx, rp, N);
		t_reap_all(ctx, N, ev, T_EVENT_TIMEOUT_MS);
		t_match_events(ev, N, rp, N);
		for (unsigned i = 0; i < N; i++) {
			cr_assert_eq(ev[i].res, LEN);
			t_check_pattern(ev[i].req->buf, LEN, (uint64_t)(uintptr_t)ev[i].user_data, 7);
		}
		struct fsaio_stats st = t_stats(ctx);
		cr_assert_geq(st.completed_inline, N / 3);
		if (backends[b] == FSAIO_BACKEND_URING && t_ring_ok())
			cr_assert_geq(st.uring_submissions, N / 3);
		t_ctx_destroy(ctx);
		free(buf);
	}
	close(dfd);
}

Test(direct, cancel_takes_back_or_answers_ebusy)
{
	int bfd = t_tmpfile(16 * MiB, 8);
	t_make_cold(bfd);
	int fd = t_reopen(bfd, O_RDONLY | O_DIRECT);

	for (unsigned b = 0; b < NB; b++) {
		enum { N = 64, LEN = 64 * KiB };
		fsaio_ctx_t *ctx = t_ctx_backend(backends[b]);
		uint8_t *buf = abuf((size_t)N * LEN);
		struct fsaio_req req[N], *rp[N];
		struct fsaio_event ev[N];
		int ret[N];

		for (unsigned i = 0; i < N; i++) {
			fsaio_prep_pread(&req[i], fd, buf + (size_t)i * LEN, LEN, (int64_t)i * 3 * LEN);
			rp[i] = &req[i];
		}
		t_submit(ctx, rp, N);
		for (unsigned i = 0; i < N; i++) {
			ret[i] = T_CALL(fsaio_cancel(ctx, &req[i]));
			cr_assert(ret[i] == 0 || ret[i] == -EBUSY || ret[i] == -EINVAL,
				  "cancel: %d", ret[i]);
		}
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
		t_ctx_destroy(ctx);
		free(buf);
	}
	close(fd);
}

static _Atomic unsigned cb_events;

static void count_cb(void *arg, const struct fsaio_event *ev)
{
	(void)arg;
	(void)ev;
	atomic_fetch_add(&cb_events, 1);
}

Test(direct, destroy_drains_the_ring)
{
	int bfd = t_tmpfile(16 * MiB, 9);
	t_make_cold(bfd);
	int fd = t_reopen(bfd, O_RDONLY | O_DIRECT);

	for (unsigned b = 0; b < NB; b++) {
		enum { N = 128, LEN = 16 * KiB };
		struct fsaio_params p = { .miss_backend = backends[b], .complete = count_cb };
		fsaio_ctx_t *ctx = t_ctx(&p);
		uint8_t *buf = abuf((size_t)N * LEN);
		struct fsaio_req req[N], *rp[N];

		atomic_store(&cb_events, 0);
		for (unsigned i = 0; i < N; i++) {
			fsaio_prep_pread(&req[i], fd, buf + (size_t)i * LEN, LEN, (int64_t)i * 7 * LEN);
			rp[i] = &req[i];
		}
		t_submit(ctx, rp, N);
		t_ctx_destroy(ctx);
		/* Every request had its one event, cancelled or not, before
		 * destroy returned; the buffers are ours again. */
		cr_assert_eq(atomic_load(&cb_events), N);
		free(buf);
	}
	close(fd);
}

Test(direct, vectored_and_nowait)
{
	int bfd = t_tmpfile(4 * MiB, 10);
	t_make_cold(bfd);
	int fd = t_reopen(bfd, O_RDONLY | O_DIRECT);

	for (unsigned b = 0; b < NB; b++) {
		fsaio_ctx_t *ctx = t_ctx_backend(backends[b]);
		uint8_t *buf = abuf(256 * KiB);
		struct iovec iov[3] = {
			{ buf, 4 * KiB }, { buf + 64 * KiB, 60 * KiB }, { buf + 128 * KiB, 8 * KiB },
		};
		struct fsaio_req req[2], *rp[2] = { &req[0], &req[1] };
		struct fsaio_event ev[2];

		fsaio_prep_preadv(&req[0], fd, iov, 3, 1 * MiB);
		/* RWF_NOWAIT: the whole range, or -EAGAIN if the I/O could not
		 * be issued without waiting; never a wrong byte. */
		fsaio_prep_pread(&req[1], fd, buf + 192 * KiB, 64 * KiB, 2 * MiB);
		req[1].rw_flags = RWF_NOWAIT;
		t_submit(ctx, rp, 2);
		t_reap_all(ctx, 2, ev, T_EVENT_TIMEOUT_MS);
		const struct fsaio_event *v = t_event_of(ev, 2, &req[0]);
		const struct fsaio_event *n = t_event_of(ev, 2, &req[1]);
		cr_assert_eq(v->res, 72 * KiB);
		t_check_pattern(buf, 4 * KiB, 1 * MiB, 10);
		t_check_pattern(buf + 64 * KiB, 60 * KiB, 1 * MiB + 4 * KiB, 10);
		t_check_pattern(buf + 128 * KiB, 8 * KiB, 1 * MiB + 64 * KiB, 10);
		cr_assert(n->res == 64 * KiB || n->res == -EAGAIN, "NOWAIT res %lld", (long long)n->res);
		if (n->res > 0)
			t_check_pattern(buf + 192 * KiB, 64 * KiB, 2 * MiB, 10);
		t_ctx_destroy(ctx);
		free(buf);
	}
	close(fd);
}
