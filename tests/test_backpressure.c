/* SPDX-License-Identifier: MIT */
/*
 * queue_depth bounds the requests accepted and not yet reaped (completed or
 * not): submit accepts up to it, then answers -EAGAIN without side effects;
 * reaping (or, with a callback, the callback) makes room again.
 */
#include "t_helpers.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <unistd.h>

#define KiB 1024u
#define MiB (1024u * 1024u)

TestSuite(backpressure, .init = t_setup, .fini = t_teardown, .timeout = 60);

/* Submit that must be refused for lack of room: nothing changes. */
static void full(fsaio_ctx_t *ctx, struct fsaio_req **rp, unsigned n)
{
	uint64_t before = t_stats(ctx).requests;
	T_ASSERT_RET(fsaio_submit(ctx, rp, n), -EAGAIN);
	cr_assert_eq(t_stats(ctx).requests, before);
	T_ASSERT_RET(fsaio_cancel(ctx, rp[0]), -EINVAL);
}

Test(backpressure, completed_events_hold_their_slots)
{
	int fd = t_hotfile(64 * KiB, 150);
	struct fsaio_params p = { .queue_depth = 4 };
	fsaio_ctx_t *ctx = t_ctx(&p);
	enum { N = 6 };
	static uint8_t bufs[N][4096];
	struct fsaio_req reqs[N], *rp[N];
	for (int i = 0; i < N; i++) {
		fsaio_prep_pread(&reqs[i], fd, bufs[i], 4096, (int64_t)i * 4096);
		rp[i] = &reqs[i];
	}

	T_ASSERT_RET(fsaio_submit(ctx, rp, N), 4);
	full(ctx, rp + 4, 2);

	struct fsaio_event evs[N];
	struct timespec zero = { 0, 0 };
	T_ASSERT_RET(fsaio_getevents(ctx, 1, 1, evs, &zero), 1);
	T_ASSERT_RET(fsaio_submit(ctx, rp + 4, 2), 1);
	full(ctx, rp + 5, 1);

	t_reap_all(ctx, 4, evs + 1, T_EVENT_TIMEOUT_MS);
	T_ASSERT_RET(fsaio_submit(ctx, rp + 5, 1), 1);
	t_reap_all(ctx, 1, evs + 5, T_EVENT_TIMEOUT_MS);
	t_match_events(evs, N, rp, N);
	for (int i = 0; i < N; i++) {
		cr_assert_eq(evs[i].res, 4096);
		t_check_pattern(bufs[i], 4096, (uint64_t)i * 4096, 150);
	}
	cr_assert_eq(t_stats(ctx).requests, N);
	t_ctx_destroy(ctx);
}

Test(backpressure, cold_requests)
{
	int fd = t_coldfile(2 * MiB, 151);
	struct fsaio_params p = { .queue_depth = 8 };
	fsaio_ctx_t *ctx = t_ctx(&p);
	enum { N = 12, LEN = 64 * 1024 };
	uint8_t *bufs = malloc((size_t)N * LEN);
	struct fsaio_req reqs[N], *rp[N];
	for (int i = 0; i < N; i++) {
		fsaio_prep_pread(&reqs[i], fd, bufs + (size_t)i * LEN, LEN, (int64_t)i * 2 * LEN);
		rp[i] = &reqs[i];
	}
	T_ASSERT_RET(fsaio_submit(ctx, rp, N), 8);
	full(ctx, rp + 8, 4);

	struct fsaio_event evs[N];
	t_reap_all(ctx, 8, evs, T_EVENT_TIMEOUT_MS);
	T_ASSERT_RET(fsaio_submit(ctx, rp + 8, 4), 4);
	t_reap_all(ctx, 4, evs + 8, T_EVENT_TIMEOUT_MS);
	t_match_events(evs, N, rp, N);
	for (int i = 0; i < N; i++) {
		cr_assert_eq(evs[i].res, LEN);
		int k = (int)(evs[i].req - reqs);
		t_check_pattern(bufs + (size_t)k * LEN, LEN, (uint64_t)k * 2 * LEN, 151);
	}
	t_ctx_destroy(ctx);
	free(bufs);
}

/* The default queue depth is 256. */
Test(backpressure, default_depth)
{
	enum { N = 300 };
	int fd = t_hotfile(N * 512, 152);
	fsaio_ctx_t *ctx = t_ctx(NULL);
	static uint8_t bufs[N][512];
	static struct fsaio_req reqs[N];
	struct fsaio_req *rp[N];
	for (int i = 0; i < N; i++) {
		fsaio_prep_pread(&reqs[i], fd, bufs[i], 512, (int64_t)i * 512);
		rp[i] = &reqs[i];
	}
	T_ASSERT_RET(fsaio_submit(ctx, rp, N), 256);
	full(ctx, rp + 256, N - 256);
	static struct fsaio_event evs[N];
	t_reap_all(ctx, 256, evs, T_EVENT_TIMEOUT_MS);
	T_ASSERT_RET(fsaio_submit(ctx, rp + 256, N - 256), N - 256);
	t_reap_all(ctx, N - 256, evs + 256, T_EVENT_TIMEOUT_MS);
	t_match_events(evs, N, rp, N);
	for (int i = 0; i < N; i++)
		t_check_pattern(bufs[i], 512, (uint64_t)i * 512, 152);
	t_ctx_destroy(ctx);
}

/* With a callback the request is the caller's again once called back: its
 * slot is free from then on. */
Test(backpressure, callback_frees_slots)
{
	static _Atomic unsigned calls;
	int fd = t_hotfile(64 * KiB, 153);
	struct fsaio_params p = { .queue_depth = 2, .complete = t_count_cb,
				  .complete_arg = &calls };
	fsaio_ctx_t *ctx = t_ctx(&p);
	uint8_t buf[4096];
	struct fsaio_req req;
	for (int i = 0; i < 20; i++) {
		fsaio_prep_pread(&req, fd, buf, sizeof(buf), (int64_t)(i % 16) * 4096);
		t_submit1(ctx, &req);
		cr_assert_eq(atomic_load(&calls), (unsigned)i + 1);
		t_check_pattern(buf, sizeof(buf), (uint64_t)(i % 16) * 4096, 153);
	}
	t_ctx_destroy(ctx);
}

/* Room comes back through cancel too: a cancelled request's event, once
 * reaped, frees its slot like any other. */
Test(backpressure, cancel_then_reap_makes_room)
{
	struct t_sat s;
	struct fsaio_params p = { .workers = 1, .queue_depth = 3 };
	t_saturate(&s, &p);
	int fd = t_coldfile(1 * MiB, 154);
	enum { LEN = 64 * 1024 };
	static uint8_t bufs[3][LEN];
	struct fsaio_req reqs[3], *rp[3] = { &reqs[0], &reqs[1], &reqs[2] };
	/* Backwards with gaps: one read's kernel readahead must not bring in
	 * the next before it is submitted (it would complete inline). */
	for (int i = 0; i < 3; i++)
		fsaio_prep_pread(&reqs[i], fd, bufs[i], LEN, (int64_t)(2 - i) * 2 * LEN);

	T_ASSERT_RET(fsaio_submit(s.ctx, rp, 3), 2);
	full(s.ctx, rp + 2, 1);
	T_ASSERT_RET(fsaio_cancel(s.ctx, &reqs[0]), 0);
	/* Cancelled but not reaped: still holding its slot. */
	full(s.ctx, rp + 2, 1);
	struct fsaio_event ev;
	struct timespec zero = { 0, 0 };
	T_ASSERT_RET(fsaio_getevents(s.ctx, 1, 1, &ev, &zero), 1);
	cr_assert_eq(ev.req, &reqs[0]);
	cr_assert_eq(ev.res, -ECANCELED);
	T_ASSERT_RET(fsaio_submit(s.ctx, rp + 2, 1), 1);

	t_sat_unblock(&s);
	struct fsaio_event evs[3];
	struct fsaio_req *rest[3] = { &s.breq, &reqs[1], &reqs[2] };
	t_reap_all(s.ctx, 3, evs, T_EVENT_TIMEOUT_MS);
	t_match_events(evs, 3, rest, 3);
	t_sat_check(&s, evs, 3);
	for (int i = 1; i < 3; i++) {
		cr_assert_eq(t_event_of(evs, 3, &reqs[i])->res, LEN);
		t_check_pattern(bufs[i], LEN, (uint64_t)reqs[i].offset, 154);
	}
	t_ctx_destroy(s.ctx);
	t_blocker_fini(&s.blk);
}

Test(backpressure, depth_one)
{
	int fd = t_tmpfile(64 * KiB, 155);
	struct fsaio_params p = { .queue_depth = 1 };
	fsaio_ctx_t *ctx = t_ctx(&p);
	uint8_t a[100], b[100];
	struct fsaio_req ra, rb, *pa = &ra, *pb = &rb;
	fsaio_prep_pread(&ra, fd, a, sizeof(a), 0);
	fsaio_prep_pread(&rb, fd, b, sizeof(b), 100);
	struct fsaio_req *both[2] = { pa, pb };
	T_ASSERT_RET(fsaio_submit(ctx, both, 2), 1);
	full(ctx, &pb, 1);
	struct fsaio_event ev;
	t_reap_all(ctx, 1, &ev, T_EVENT_TIMEOUT_MS);
	cr_assert_eq(ev.req, &ra);
	ev = t_run1(ctx, &rb);
	t_check_pattern(a, sizeof(a), 0, 155);
	t_check_pattern(b, sizeof(b), 100, 155);
	t_ctx_destroy(ctx);
}
