/* SPDX-License-Identifier: MIT */
/*
 * Who carries a buffered miss: the worker pool (THREADS), io_uring's async
 * buffered read (URING), or the engine's choice (AUTO). Each must give the
 * same data on cold, half-cached and EOF-crossing reads; the stats tell
 * which way a request went.
 */
#include "t_helpers.h"

#include <stdio.h>

#include <linux/io_uring.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#define KiB 1024u
#define MiB (1024u * 1024u)

TestSuite(backend, .init = t_setup, .fini = t_teardown, .timeout = 60);

static const uint32_t backends[] = {
	FSAIO_BACKEND_THREADS, FSAIO_BACKEND_URING, FSAIO_BACKEND_AUTO,
};
#define NB (sizeof(backends) / sizeof(backends[0]))

static void check_path(fsaio_ctx_t *ctx, uint32_t backend)
{
	struct fsaio_stats st = t_stats(ctx);

	if (backend == FSAIO_BACKEND_URING && t_ring_ok()) {
		cr_assert_gt(st.uring_submissions, 0);
		cr_assert_eq(st.queued, 0);
		cr_assert_gt(st.bytes_uring, 0);
	} else if (backend == FSAIO_BACKEND_THREADS || !t_ring_ok()) {
		cr_assert_eq(st.uring_submissions, 0);
		cr_assert_gt(st.queued, 0);
	}
}

/*
 * A fresh context on backend reads [off, off+len) of fd, made cold and
 * then cached over [0, hot) (hot 0: all cold), and the context is returned
 * for the caller's checks. A NOWAIT miss starts the kernel's read of what
 * it missed; a submitter preempted (CI under load) before the engine's
 * next attempt, or before the kernel's own check of the page, finds it
 * cached and completes the whole read inline. Right, but then the
 * backend's path cannot be checked: try again, a few times.
 */
static fsaio_ctx_t *read_past_inline(uint32_t backend, int fd, uint8_t *buf, size_t len,
				     uint64_t off, uint64_t hot)
{
	for (int tries = 0;; tries++) {
		t_make_cold(fd);
		if (hot)
			t_make_hot(fd, 0, hot);
		fsaio_ctx_t *ctx = t_ctx_backend(backend);
		cr_assert_eq(t_read1(ctx, fd, buf, len, off), (int64_t)len);
		struct fsaio_stats st = t_stats(ctx);
		if (st.bytes_inline < len)
			return ctx;
		cr_assert_eq(st.completed_inline, 1);
		cr_assert_lt(tries, 4, "backend %u: the read was cached in time on every try", backend);
		/* A note, not Criterion's cr_log_warn: any warning makes its
		 * runner exit 1 with every test passed. */
		fprintf(stderr, "backend %u: all of the read was inline, trying again\n", backend);
		t_ctx_destroy(ctx);
	}
}

Test(backend, cold_read)
{
	int fd = t_tmpfile(4 * MiB, 11);

	for (unsigned b = 0; b < NB; b++) {
		size_t len = 1 * MiB + 333;
		uint64_t off = 5 * 4096 + 7 + b * MiB;
		uint8_t *buf = malloc(len);

		fsaio_ctx_t *ctx = read_past_inline(backends[b], fd, buf, len, off, 0);
		t_check_pattern(buf, len, off, 11);
		check_path(ctx, backends[b]);
		t_ctx_destroy(ctx);
		free(buf);
	}
}

Test(backend, half_cached_read)
{
	int fd = t_tmpfile(4 * MiB, 12);

	for (unsigned b = 0; b < NB; b++) {
		size_t len = 1 * MiB;
		uint8_t *buf = malloc(len);
		fsaio_ctx_t *ctx = read_past_inline(backends[b], fd, buf, len, 0, 512 * KiB);
		struct fsaio_stats st = t_stats(ctx);

		t_check_pattern(buf, len, 0, 12);
		/* The cached half inline (and of the rest what was cached in
		 * time, by the same race), the rest by the backend. */
		cr_assert(st.partial_inline == 1 && st.bytes_inline >= 512 * KiB &&
			  st.bytes_inline % 4096 == 0,
			  "backend %u: partial_inline %llu, bytes_inline %llu, inline %llu, queued %llu",
			  b, (unsigned long long)st.partial_inline, (unsigned long long)st.bytes_inline,
			  (unsigned long long)st.completed_inline, (unsigned long long)st.queued);
		cr_assert_eq(st.bytes_inline + st.bytes_worker + st.bytes_uring, len);
		check_path(ctx, backends[b]);
		t_ctx_destroy(ctx);
		free(buf);
	}
}

/* AUTO's routing of a read miss by what is left of it: up to 1 MiB to the
 * ring, 64 KiB ones included; larger ones to the worker pool. What the
 * inline attempt did comes off first, so the check is on what was left. */
Test(backend, auto_sends_read_misses_up_to_1m_to_the_ring)
{
	static const size_t lens[] = { 4 * KiB, 64 * KiB, 1 * MiB, 1 * MiB + 64 * KiB };
	const char *be = getenv("FSAIO_BACKEND");
	int fd = t_tmpfile(4 * MiB, 14);

	if (be && strcmp(be, "auto"))
		cr_skip_test("FSAIO_BACKEND=%s decides for the default context\n", be);
	if (!t_ring_ok())
		cr_skip_test("no io_uring here: every miss is the pool's\n");
	for (unsigned i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
		uint8_t *buf = malloc(lens[i]);

		cr_assert_not_null(buf);
		fsaio_ctx_t *ctx = read_past_inline(FSAIO_BACKEND_AUTO, fd, buf, lens[i], MiB, 0);
		struct fsaio_stats st = t_stats(ctx);
		bool ring = lens[i] - st.bytes_inline <= 1 * MiB;

		t_check_pattern(buf, lens[i], MiB, 14);
		cr_assert_eq(st.bytes_uring > 0, ring,
			     "%zu bytes, %llu inline: ring %llu, pool %llu", lens[i],
			     (unsigned long long)st.bytes_inline,
			     (unsigned long long)st.bytes_uring,
			     (unsigned long long)st.bytes_worker);
		cr_assert_eq(st.bytes_worker > 0, !ring);
		t_ctx_destroy(ctx);
		free(buf);
	}
}

Test(backend, eof_crossing_read)
{
	const size_t size = 300000;
	int fd = t_tmpfile(size, 13);

	for (unsigned b = 0; b < NB; b++) {
		uint8_t *buf = malloc(64 * KiB);

		t_make_cold(fd);
		fsaio_ctx_t *ctx = t_ctx_backend(backends[b]);
		cr_assert_eq(t_read1(ctx, fd, buf, 64 * KiB, 280000), (int64_t)(size - 280000));
		t_check_pattern(buf, size - 280000, 280000, 13);
		/* At and past EOF: 0. */
		t_make_cold(fd);
		cr_assert_eq(t_read1(ctx, fd, buf, 4 * KiB, size), 0);
		cr_assert_eq(t_read1(ctx, fd, buf, 4 * KiB, size + 10 * MiB), 0);
		t_ctx_destroy(ctx);
		free(buf);
	}
}

Test(backend, cold_vectored_read_many_in_flight)
{
	int fd = t_tmpfile(16 * MiB, 14);

	for (unsigned b = 0; b < NB; b++) {
		enum { N = 48, SEG = 3 };
		static const size_t seg[SEG] = { 1000, 64 * KiB + 5, 4096 };
		size_t per = seg[0] + seg[1] + seg[2];
		uint8_t *buf = malloc(per * N);
		struct iovec iov[N][SEG];
		struct fsaio_req req[N], *rp[N];
		struct fsaio_event ev[N];

		t_make_cold(fd);
		fsaio_ctx_t *ctx = t_ctx_backend(backends[b]);
		for (unsigned i = 0; i < N; i++) {
			uint8_t *p = buf + per * i;
			for (unsigned k = 0; k < SEG; k++) {
				iov[i][k] = (struct iovec){ p, seg[k] };
				p += seg[k];
			}
			fsaio_prep_preadv(&req[i], fd, iov[i], SEG, (int64_t)((i * 37) % N) * 300 * KiB + 11);
			rp[i] = &req[i];
		}
		t_submit(ctx, rp, N);
		t_reap_all(ctx, N, ev, T_EVENT_TIMEOUT_MS);
		t_match_events(ev, N, rp, N);
		for (unsigned i = 0; i < N; i++) {
			cr_assert_eq(ev[i].res, (int64_t)per);
			t_check_pattern(ev[i].req->iov[0].iov_base, per, (uint64_t)ev[i].req->offset, 14);
		}
		t_ctx_destroy(ctx);
		free(buf);
	}
}

Test(backend, writes_are_right_on_every_backend)
{
	int fd = t_tmpfile(2 * MiB, 15);

	for (unsigned b = 0; b < NB; b++) {
		enum { LEN = 256 * KiB };
		uint8_t *buf = malloc(LEN);
		unsigned seed = 40 + b;
		uint64_t off = b * LEN + 100;

		t_make_cold(fd);
		fsaio_ctx_t *ctx = t_ctx_backend(backends[b]);
		t_fill_pattern(buf, LEN, off, seed);
		struct fsaio_req req;
		struct fsaio_event ev;
		fsaio_prep_pwrite(&req, fd, buf, LEN, (int64_t)off);
		t_submit1(ctx, &req);
		t_reap_all(ctx, 1, &ev, T_EVENT_TIMEOUT_MS);
		cr_assert_eq(ev.res, LEN);
		t_check_file(fd, off, LEN, seed);
		t_ctx_destroy(ctx);
		free(buf);
	}
}

Test(backend, env_selects_the_backend)
{
	int fd = t_tmpfile(1 * MiB, 16);
	uint8_t buf[8192];

	setenv("FSAIO_BACKEND", "threads", 1);
	fsaio_ctx_t *ctx = read_past_inline(FSAIO_BACKEND_AUTO, fd, buf, sizeof(buf), 4096, 0);
	check_path(ctx, FSAIO_BACKEND_THREADS);
	t_ctx_destroy(ctx);

	setenv("FSAIO_BACKEND", "uring", 1);
	ctx = read_past_inline(FSAIO_BACKEND_AUTO, fd, buf, sizeof(buf), 4096, 0);
	check_path(ctx, FSAIO_BACKEND_URING);
	t_check_pattern(buf, sizeof(buf), 4096, 16);
	t_ctx_destroy(ctx);

	/* A parameter other than AUTO wins over the environment. */
	ctx = read_past_inline(FSAIO_BACKEND_THREADS, fd, buf, sizeof(buf), 4096, 0);
	check_path(ctx, FSAIO_BACKEND_THREADS);
	t_ctx_destroy(ctx);
	unsetenv("FSAIO_BACKEND");
}

Test(backend, bad_backend_is_refused)
{
	struct fsaio_params p = { .miss_backend = FSAIO_BACKEND_URING + 1 };
	fsaio_ctx_t *ctx = NULL;

	T_ASSERT_RET(fsaio_ctx_create(&p, &ctx), -EINVAL);
	cr_assert_null(ctx);
}

Test(backend, cancel_of_misses_in_flight)
{
	int fd = t_tmpfile(32 * MiB, 17);

	for (unsigned b = 0; b < NB; b++) {
		enum { N = 64, LEN = 16 * KiB };
		uint8_t *buf = malloc((size_t)N * LEN);
		struct fsaio_req req[N], *rp[N];
		struct fsaio_event ev[N];
		int ret[N];

		t_make_cold(fd);
		fsaio_ctx_t *ctx = t_ctx_backend(backends[b]);
		for (unsigned i = 0; i < N; i++) {
			fsaio_prep_pread(&req[i], fd, buf + (size_t)i * LEN, LEN,
					 (int64_t)((i * 29) % N) * 400 * KiB);
			rp[i] = &req[i];
		}
		t_submit(ctx, rp, N);
		t_cancel_each(ctx, req, N, ret);
		t_reap_all(ctx, N, ev, T_EVENT_TIMEOUT_MS);
		t_match_events(ev, N, rp, N);
		unsigned cancelled = 0;
		for (unsigned i = 0; i < N; i++) {
			const struct fsaio_event *e = t_event_of(ev, N, &req[i]);

			if (ret[i] == 0) {
				cr_assert_eq(e->res, -ECANCELED);
				cancelled++;
			} else {
				cr_assert_eq(e->res, LEN, "res %lld", (long long)e->res);
				t_check_pattern(req[i].buf, LEN, (uint64_t)req[i].offset, 17);
			}
		}
		cr_assert_eq(t_stats(ctx).cancelled, cancelled);
		t_ctx_destroy(ctx);
		free(buf);
	}
}

/* fd, made hot: n reads of len, gap apart, one at a time; within one
 * sampling period of the straight path they are all inline again. */
static void hot_again_inline(fsaio_ctx_t *ctx, int fd, uint8_t *buf, int n, size_t len,
			     uint64_t gap)
{
	struct fsaio_req req;
	struct fsaio_event ev;
	unsigned inline_tail = 0;

	t_make_hot(fd, 0, (uint64_t)n * gap);
	for (int i = 0; i < n; i++) {
		uint64_t before = t_stats(ctx).completed_inline;

		fsaio_prep_pread(&req, fd, buf, len, (int64_t)(i * gap));
		t_submit1(ctx, &req);
		t_reap_all(ctx, 1, &ev, T_EVENT_TIMEOUT_MS);
		cr_assert_eq(ev.res, (int64_t)len);
		if (i >= n / 2 && t_stats(ctx).completed_inline == before + 1)
			inline_tail++;
	}
	cr_assert_eq(inline_tail, (unsigned)n / 2, "only %u of the last %u hot reads were inline",
		     inline_tail, (unsigned)n / 2);
}

/* An fd whose reads keep missing goes straight to io_uring (no probe, no
 * failed attempt); once it is hot, its reads are served inline again. */
Test(backend, missing_fd_goes_straight_to_ring_and_back_inline_when_hot)
{
	enum { N = 64, LEN = 4096 };
	const char *be = getenv("FSAIO_BACKEND");

	/* The default context follows FSAIO_BACKEND: with threads no read
	 * goes to the ring, which is what this test looks for. */
	if (be && !strcmp(be, "threads"))
		cr_skip_test("FSAIO_BACKEND=threads: no read goes to the ring\n");

	int fd = t_tmpfile(4 * 1024 * 1024, 175);
	fsaio_ctx_t *ctx = t_ctx(NULL);
	static uint8_t bufs[N][LEN];
	struct fsaio_req reqs[N];
	struct fsaio_event ev;

	t_make_cold(fd);
	for (int i = 0; i < N; i++) {
		/* Far apart: no read is served by an earlier one's readahead. */
		fsaio_prep_pread(&reqs[i], fd, bufs[i], LEN, (int64_t)i * 64 * 1024);
		t_submit1(ctx, &reqs[i]);
		t_reap_all(ctx, 1, &ev, T_EVENT_TIMEOUT_MS);
		cr_assert_eq(ev.res, LEN);
		t_check_pattern(bufs[i], LEN, (uint64_t)i * 64 * 1024, 175);
	}
	if (t_ring_ok())
		cr_assert_gt(t_stats(ctx).straight_to_ring, 0, "a cold fd never went straight to the ring");
	/* Now hot: within one sampling period the fd is served inline again. */
	hot_again_inline(ctx, fd, bufs[0], N, LEN, 64 * 1024);
	t_ctx_destroy(ctx);
}

/*
 * The same for misses that are the pool's (64 KiB reads on the threads
 * backend: started reads on a worker): an fd whose reads keep missing
 * sends them there without a probe, and once it is hot they are inline
 * again. Each hit (the kernel may keep or read ahead a page) starts the
 * streak over: the bound on probes allows for that.
 */
Test(backend, missing_fd_goes_straight_to_pool_and_back_inline_when_hot)
{
	enum { N = 64, LEN = 64 * 1024, GAP = 256 * 1024 };
	int fd = t_tmpfile(N * GAP, 177);
	fsaio_ctx_t *ctx = t_ctx_backend(FSAIO_BACKEND_THREADS);
	uint8_t *buf = malloc(LEN);
	struct fsaio_req req;
	struct fsaio_event ev;
	struct fsaio_stats st;

	cr_assert_not_null(buf);
	t_make_cold(fd);
	for (int i = 0; i < N; i++) {
		fsaio_prep_pread(&req, fd, buf, LEN, (int64_t)i * GAP);
		t_submit1(ctx, &req);
		t_reap_all(ctx, 1, &ev, T_EVENT_TIMEOUT_MS);
		cr_assert_eq(ev.res, LEN);
		t_check_pattern(buf, LEN, (uint64_t)i * GAP, 177);
	}
	st = t_stats(ctx);
	/* Four misses make a streak; one read in 16 is sampled inline. */
	cr_assert_leq(st.probe_calls, 4 + N / 16 + 4 * st.completed_inline,
		      "%llu probes for %d reads, %llu inline",
		      (unsigned long long)st.probe_calls, N,
		      (unsigned long long)st.completed_inline);
	cr_assert_eq(st.straight_to_ring, 0, "a 64 KiB miss is the pool's");
	hot_again_inline(ctx, fd, buf, N, LEN, GAP);
	t_ctx_destroy(ctx);
	free(buf);
}

/* A read miss for the pool has its disk reads started by the submitter, so
 * a few workers (one per CPU, at most four) carry any number of them: the
 * pool never grows past that, and every read ends once, with its data. */
Test(backend, started_misses_need_few_workers)
{
	enum { N = 96, LEN = 4096 };
	int fd = t_tmpfile(64 * MiB, 176);
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	uint64_t cap = cpus < 1 ? 1 : cpus > 4 ? 4 : (uint64_t)cpus;
	uint8_t *buf = malloc((size_t)N * LEN);
	struct fsaio_req req[N], *rp[N];
	struct fsaio_event ev[N];

	t_make_cold(fd);
	fsaio_ctx_t *ctx = t_ctx_backend(FSAIO_BACKEND_THREADS);
	for (unsigned i = 0; i < N; i++) {
		/* Far apart and out of order: no read is served by another's. */
		fsaio_prep_pread(&req[i], fd, buf + (size_t)i * LEN, LEN,
				 (int64_t)((i * 53) % N) * 512 * KiB + 4096);
		rp[i] = &req[i];
	}
	t_submit(ctx, rp, N);
	t_reap_all(ctx, N, ev, T_EVENT_TIMEOUT_MS);
	t_match_events(ev, N, rp, N);
	for (unsigned i = 0; i < N; i++) {
		cr_assert_eq(ev[i].res, LEN);
		t_check_pattern(ev[i].req->buf, LEN, (uint64_t)ev[i].req->offset, 176);
	}
	struct fsaio_stats st = t_stats(ctx);
	cr_assert_leq(st.pool_threads, cap, "%llu workers", (unsigned long long)st.pool_threads);
	cr_assert_eq(st.uring_submissions, 0);
	t_ctx_destroy(ctx);
	free(buf);
}
