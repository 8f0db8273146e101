/* SPDX-License-Identifier: MIT */
/*
 * Cancel, made deterministic by saturating the pool: a context with one
 * worker, whose first request writes from a userfaultfd page and so blocks
 * that worker in the kernel until the test resolves the fault. Everything
 * submitted after it to the pool stays queued for as long as the test
 * wants, so which requests are queued and which is running is known, not
 * guessed. Every request, cancelled or not, yields exactly one event.
 */
#include "t_helpers.h"

#include <stdlib.h>
#include <unistd.h>

#define KiB 1024u
#define MiB (1024u * 1024u)

TestSuite(cancel, .init = t_setup, .fini = t_teardown, .timeout = 60);

/* t_saturate on a context of one worker: s->ctx, its worker blocked. */
static void saturate_one_worker(struct t_sat *s)
{
	struct fsaio_params p = { .workers = 1 };

	t_saturate(s, &p);
}

Test(cancel, queued_requests)
{
	struct t_sat s;
	saturate_one_worker(&s);

	enum { N = 8, LEN = 64 * 1024 };
	int fd = t_coldfile(1 * MiB, 90);
	uint8_t *bufs = malloc((size_t)N * LEN);
	struct fsaio_req reqs[N], *rp[N];
	/* Backwards with gaps: the kernel's readahead for one read (a
	 * sequential start grows a window) must not bring in the later ones
	 * before they are submitted. */
	for (int i = 0; i < N; i++) {
		fsaio_prep_pread(&reqs[i], fd, bufs + (size_t)i * LEN, LEN, (int64_t)(N - 1 - i) * 2 * LEN);
		reqs[i].user_data = (void *)(uintptr_t)(100 + i);
		rp[i] = &reqs[i];
	}
	t_submit(s.ctx, rp, N);
	cr_assert_eq(t_stats(s.ctx).pool_queue_len, N, "cold reads should wait behind the blocker");

	/* The running one cannot be cancelled. */
	T_ASSERT_RET(fsaio_cancel(s.ctx, &s.breq), -EBUSY);

	static const int victims[] = { 7, 5, 0, 3 };
	enum { NV = sizeof(victims) / sizeof(victims[0]) };
	for (int v = 0; v < NV; v++)
		T_ASSERT_RET(fsaio_cancel(s.ctx, &reqs[victims[v]]), 0);
	cr_assert_eq(t_stats(s.ctx).pool_queue_len, N - NV);

	/* Cancelled events come through the normal path, at once. */
	struct fsaio_event evs[N + 1];
	struct timespec zero = { 0, 0 };
	T_ASSERT_RET(fsaio_getevents(s.ctx, NV, N + 1, evs, &zero), NV);
	for (int v = 0; v < NV; v++) {
		const struct fsaio_event *ev = t_event_of(evs, NV, &reqs[victims[v]]);
		cr_assert_eq(ev->res, -ECANCELED);
		cr_assert_eq(ev->res2, 0, "nothing was done before the cancel");
	}

	/* A cancelled, reaped request is not in flight any more. */
	for (int v = 0; v < NV; v++) {
		int r = T_CALL(fsaio_cancel(s.ctx, &reqs[victims[v]]));
		cr_assert_eq(r, -EINVAL, "second cancel of req %d: %d", victims[v], r);
	}

	t_sat_unblock(&s);
	struct fsaio_req *rest[N + 1];
	unsigned nr = 0;
	rest[nr++] = &s.breq;
	for (int i = 0; i < N; i++)
		if (i != 7 && i != 5 && i != 0 && i != 3)
			rest[nr++] = &reqs[i];
	t_reap_all(s.ctx, nr, evs, T_EVENT_TIMEOUT_MS);
	t_match_events(evs, nr, rest, nr);
	t_sat_check(&s, evs, nr);
	for (unsigned k = 1; k < nr; k++) {
		int i = (int)(rest[k] - reqs);
		cr_assert_eq(t_event_of(evs, nr, rest[k])->res, LEN, "req %d", i);
		t_check_pattern(bufs + (size_t)i * LEN, LEN, (uint64_t)reqs[i].offset, 90);
	}

	struct fsaio_stats st = t_stats(s.ctx);
	cr_assert_eq(st.cancelled, NV);
	cr_assert_eq(st.requests, N + 1);
	cr_assert_eq(st.pool_queue_len, 0);
	t_ctx_sat_destroy(s.ctx, &s);
	free(bufs);
}

/* A half-cached read whose cached prefix was done inline and whose remainder
 * is cancelled: -ECANCELED, with the prefix in res2 and in the buffer. */
Test(cancel, partial_progress_in_res2)
{
	struct t_sat s;
	saturate_one_worker(&s);

	int fd = t_tmpfile(1 * MiB, 91);
	static uint8_t buf[512 * KiB];
	size_t len = sizeof(buf);
	struct fsaio_req req;
	struct fsaio_stats st;
	uint64_t inline_before = 0;
	/* A round where the kernel's readahead finished the remainder before
	 * the engine looked again completes inline (see test_basic): then there
	 * is nothing to cancel, and the scenario is set up again. */
	for (int round = 0;; round++) {
		cr_assert_lt(round, 5, "5 rounds, none left a remainder queued");
		t_make_cold(fd);
		t_make_hot(fd, 0, 128 * KiB);
		fsaio_prep_pread(&req, fd, buf, len, 1000);
		t_submit1(s.ctx, &req);
		st = t_stats(s.ctx);
		if (st.partial_inline == 1)
			break;
		cr_assert_eq(st.pool_queue_len, 0);
		struct fsaio_event ev;
		t_reap_all(s.ctx, 1, &ev, T_EVENT_TIMEOUT_MS);
		cr_assert_eq(ev.res, (int64_t)len, "round %d: neither partial nor complete", round);
		inline_before = st.bytes_inline;
	}
	cr_assert_eq(st.pool_queue_len, 1);
	uint64_t inline_bytes = st.bytes_inline - inline_before;
	cr_assert_geq(inline_bytes, 128 * KiB - 1000);

	T_ASSERT_RET(fsaio_cancel(s.ctx, &req), 0);
	struct fsaio_event ev;
	struct timespec zero = { 0, 0 };
	T_ASSERT_RET(fsaio_getevents(s.ctx, 1, 1, &ev, &zero), 1);
	cr_assert_eq(ev.req, &req);
	cr_assert_eq(ev.res, -ECANCELED);
	cr_assert_eq(ev.res2, (int64_t)inline_bytes, "res2 %lld, inline bytes %llu",
		     (long long)ev.res2, (unsigned long long)inline_bytes);
	t_check_pattern(buf, (size_t)ev.res2, 1000, 91);

	t_sat_reap_blocker(&s);
	t_ctx_sat_destroy(s.ctx, &s);
}

/* Every kind of queued request can be cancelled, fsync included. */
Test(cancel, queued_fsync_and_write)
{
	struct t_sat s;
	saturate_one_worker(&s);

	int fd = t_tmpfile(256 * KiB, 92);
	uint8_t src[8192];
	t_fill_pattern(src, sizeof(src), 0, 93);
	struct fsaio_req reqs[3], *rp[3] = { &reqs[0], &reqs[1], &reqs[2] };
	fsaio_prep_fsync(&reqs[0], fd);
	fsaio_prep_fdatasync(&reqs[1], fd);
	fsaio_prep_pwrite(&reqs[2], fd, src, sizeof(src), 0);
	reqs[2].rw_flags = RWF_DSYNC;
	t_submit(s.ctx, rp, 3);
	cr_assert_eq(t_stats(s.ctx).pool_queue_len, 3);
	for (int i = 0; i < 3; i++)
		T_ASSERT_RET(fsaio_cancel(s.ctx, &reqs[i]), 0);
	struct fsaio_event evs[4];
	struct timespec zero = { 0, 0 };
	T_ASSERT_RET(fsaio_getevents(s.ctx, 3, 4, evs, &zero), 3);
	t_match_events(evs, 3, rp, 3);
	for (int i = 0; i < 3; i++)
		cr_assert_eq(evs[i].res, -ECANCELED);
	/* The cancelled write never happened. */
	t_check_file(fd, 0, sizeof(src), 92);

	t_sat_reap_blocker(&s);
	t_ctx_sat_destroy(s.ctx, &s);
}

/* -EINVAL for what is not in flight on this context; never 0 and never a
 * second event for a request that already completed. */
Test(cancel, not_in_flight)
{
	struct t_sat s;
	saturate_one_worker(&s);
	fsaio_ctx_t *other = t_ctx(NULL);

	int fd = t_tmpfile(1 * MiB, 94);
	uint8_t buf[4096];
	struct fsaio_req fresh;
	fsaio_prep_pread(&fresh, fd, buf, sizeof(buf), 0);
	T_ASSERT_RET(fsaio_cancel(s.ctx, &fresh), -EINVAL);

	/* Completed inline, event pending: too late. */
	t_make_hot(fd, 0, 64 * KiB);
	struct fsaio_req hot;
	fsaio_prep_pread(&hot, fd, buf, sizeof(buf), 0);
	t_submit1(s.ctx, &hot);
	int r = T_CALL(fsaio_cancel(s.ctx, &hot));
	cr_assert(r == -EINVAL || r == -EBUSY, "cancel of a completed request: %d", r);
	struct fsaio_event ev;
	struct timespec zero = { 0, 0 };
	T_ASSERT_RET(fsaio_getevents(s.ctx, 1, 1, &ev, &zero), 1);
	cr_assert_eq(ev.req, &hot);
	cr_assert_eq(ev.res, (int64_t)sizeof(buf));
	T_ASSERT_RET(fsaio_cancel(s.ctx, &hot), -EINVAL);

	/* Queued here, but cancelled through another context: not its request. */
	t_make_cold(fd);
	struct fsaio_req queued;
	uint8_t *big = malloc(128 * KiB);
	fsaio_prep_pread(&queued, fd, big, 128 * KiB, 256 * KiB);
	t_submit1(s.ctx, &queued);
	cr_assert_eq(t_stats(s.ctx).pool_queue_len, 1);
	T_ASSERT_RET(fsaio_cancel(other, &queued), -EINVAL);
	t_no_event(other);
	cr_assert_eq(t_stats(s.ctx).pool_queue_len, 1, "the other context's cancel touched the queue");

	t_sat_unblock(&s);
	struct fsaio_event evs[2];
	struct fsaio_req *rp[2] = { &s.breq, &queued };
	t_reap_all(s.ctx, 2, evs, T_EVENT_TIMEOUT_MS);
	t_match_events(evs, 2, rp, 2);
	t_sat_check(&s, evs, 2);
	cr_assert_eq(t_event_of(evs, 2, &queued)->res, 128 * KiB);
	t_check_pattern(big, 128 * KiB, 256 * KiB, 94);
	T_ASSERT_RET(fsaio_cancel(s.ctx, &queued), -EINVAL);
	T_ASSERT_RET(fsaio_cancel(s.ctx, &s.breq), -EINVAL);
	cr_assert_eq(t_stats(s.ctx).cancelled, 0);
	t_ctx_destroy(other);
	t_ctx_sat_destroy(s.ctx, &s);
	free(big);
}

/* Cancel everything queued behind a context with FSAIO_CTX_NO_INLINE, where
 * even hot reads queue; then the pool keeps working for new requests. */
Test(cancel, cancel_all_then_reuse)
{
	struct t_sat s;
	struct fsaio_params p = { .workers = 1, .flags = FSAIO_CTX_NO_INLINE };
	t_saturate(&s, &p);

	enum { N = 32, LEN = 4096 };
	int fd = t_hotfile(N * LEN, 95);
	static uint8_t bufs[N][LEN];
	struct fsaio_req reqs[N], *rp[N];
	t_prep_reads(reqs, rp, N, fd, bufs[0], LEN, LEN);
	t_submit(s.ctx, rp, N);
	cr_assert_eq(t_stats(s.ctx).pool_queue_len, N);
	for (int i = N - 1; i >= 0; i--)
		T_ASSERT_RET(fsaio_cancel(s.ctx, &reqs[i]), 0);
	cr_assert_eq(t_stats(s.ctx).pool_queue_len, 0);
	struct fsaio_event evs[N + 1];
	t_reap_all(s.ctx, N, evs, T_EVENT_TIMEOUT_MS);
	t_match_events(evs, N, rp, N);
	for (int i = 0; i < N; i++)
		cr_assert_eq(evs[i].res, -ECANCELED);

	t_sat_reap_blocker(&s);

	for (int i = 0; i < N; i++)
		memset(bufs[i], 0, LEN);
	t_submit(s.ctx, rp, N);
	t_reap_all(s.ctx, N, evs, T_EVENT_TIMEOUT_MS);
	t_match_events(evs, N, rp, N);
	for (int i = 0; i < N; i++) {
		cr_assert_eq(t_event_of(evs, N, &reqs[i])->res, LEN);
		t_check_pattern(bufs[i], LEN, (uint64_t)i * LEN, 95);
	}
	cr_assert_eq(t_stats(s.ctx).cancelled, N);
	t_ctx_sat_destroy(s.ctx, &s);
}
