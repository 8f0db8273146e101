/* SPDX-License-Identifier: MIT */
/*
 * fsaio_event_fd(): readable exactly while events are pending, so an epoll
 * loop can sleep on it. Checked with poll() and epoll after each step.
 */
#include "t_helpers.h"

#include <poll.h>
#include <sys/epoll.h>
#include <unistd.h>

#define KiB 1024u
#define MiB (1024u * 1024u)

TestSuite(eventfd, .init = t_setup, .fini = t_teardown, .timeout = 60);

static bool readable(int fd, int timeout_ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	int r;
	do
		r = poll(&p, 1, timeout_ms);
	while (r < 0 && errno == EINTR);
	cr_assert_geq(r, 0, "poll: %s", strerror(errno));
	return r == 1 && (p.revents & POLLIN);
}

/* The context's event fd (fsaio_event_fd), asserted valid. */
static int event_fd(fsaio_ctx_t *ctx)
{
	int efd = T_CALL(fsaio_event_fd(ctx));

	cr_assert_geq(efd, 0);
	return efd;
}

static void submit_hot(fsaio_ctx_t *ctx, int fd, struct fsaio_req *reqs, uint8_t (*bufs)[4096], int n)
{
	struct fsaio_req *rp[16];
	cr_assert_leq(n, 16);
	for (int i = 0; i < n; i++) {
		fsaio_prep_pread(&reqs[i], fd, bufs[i], 4096, (int64_t)i * 4096);
		rp[i] = &reqs[i];
	}
	t_submit(ctx, rp, (unsigned)n);
}

Test(eventfd, readable_exactly_while_pending)
{
	int fd = t_hotfile(64 * KiB, 120);
	fsaio_ctx_t *ctx = t_ctx(NULL);
	int efd = event_fd(ctx);
	T_ASSERT_RET(fsaio_event_fd(ctx), efd);
	cr_assert_not(readable(efd, 0), "readable with nothing pending");

	struct fsaio_req reqs[3];
	uint8_t bufs[3][4096];
	struct fsaio_event evs[3];
	struct timespec zero = { 0, 0 };
	submit_hot(ctx, fd, reqs, bufs, 3);
	cr_assert(readable(efd, 0), "not readable with 3 events pending");
	T_ASSERT_RET(fsaio_getevents(ctx, 1, 1, evs, &zero), 1);
	cr_assert(readable(efd, 0), "not readable with 2 events still pending");
	T_ASSERT_RET(fsaio_getevents(ctx, 1, 1, evs + 1, &zero), 1);
	cr_assert(readable(efd, 0), "not readable with 1 event still pending");
	T_ASSERT_RET(fsaio_getevents(ctx, 1, 1, evs + 2, &zero), 1);
	cr_assert_not(readable(efd, 0), "still readable after every event was reaped");

	/* Again, in the same context: the fd is rearmed, not used up. */
	for (int round = 0; round < 50; round++) {
		submit_hot(ctx, fd, reqs, bufs, 1 + round % 3);
		cr_assert(readable(efd, 0), "round %d: not readable", round);
		T_ASSERT_RET(fsaio_getevents(ctx, 1, 3, evs, &zero), 1 + round % 3);
		cr_assert_not(readable(efd, 0), "round %d: readable after reaping all", round);
	}
	t_ctx_destroy(ctx);
}

/* A sleeper in poll() is woken by a worker's completion. */
Test(eventfd, wakes_for_worker_completion)
{
	int fd = t_coldfile(1 * MiB, 121);
	fsaio_ctx_t *ctx = t_ctx(NULL);
	int efd = event_fd(ctx);

	static uint8_t buf[256 * 1024];
	struct fsaio_req req;
	fsaio_prep_pread(&req, fd, buf, sizeof(buf), 0);
	t_submit1(ctx, &req);
	cr_assert(readable(efd, T_EVENT_TIMEOUT_MS), "no wake-up for a worker's completion");
	struct fsaio_event ev;
	struct timespec zero = { 0, 0 };
	T_ASSERT_RET(fsaio_getevents(ctx, 1, 1, &ev, &zero), 1);
	cr_assert_eq(ev.res, (int64_t)sizeof(buf));
	t_check_pattern(buf, sizeof(buf), 0, 121);
	cr_assert_not(readable(efd, 0));
	t_ctx_destroy(ctx);
}

/* Asked for after events are already pending: readable at once. */
Test(eventfd, created_with_events_pending)
{
	int fd = t_hotfile(64 * KiB, 122);
	fsaio_ctx_t *ctx = t_ctx(NULL);
	struct fsaio_req reqs[2];
	uint8_t bufs[2][4096];
	submit_hot(ctx, fd, reqs, bufs, 2);
	int efd = event_fd(ctx);
	cr_assert(readable(efd, 0), "events were pending before the eventfd existed");
	struct fsaio_event evs[2];
	t_reap_all(ctx, 2, evs, T_EVENT_TIMEOUT_MS);
	cr_assert_not(readable(efd, 0));
	t_ctx_destroy(ctx);
}

Test(eventfd, epoll_level_triggered)
{
	int fd = t_hotfile(64 * KiB, 123);
	fsaio_ctx_t *ctx = t_ctx(NULL);
	int efd = event_fd(ctx);
	int ep = epoll_create1(EPOLL_CLOEXEC);
	cr_assert_geq(ep, 0);
	struct epoll_event e = { .events = EPOLLIN, .data.u64 = 7 };
	cr_assert_eq(epoll_ctl(ep, EPOLL_CTL_ADD, efd, &e), 0);

	struct epoll_event out;
	cr_assert_eq(epoll_wait(ep, &out, 1, 0), 0);
	struct fsaio_req reqs[4];
	uint8_t bufs[4][4096];
	submit_hot(ctx, fd, reqs, bufs, 4);
	cr_assert_eq(epoll_wait(ep, &out, 1, 0), 1);
	cr_assert_eq(out.data.u64, 7);
	struct fsaio_event evs[4];
	struct timespec zero = { 0, 0 };
	T_ASSERT_RET(fsaio_getevents(ctx, 2, 2, evs, &zero), 2);
	cr_assert_eq(epoll_wait(ep, &out, 1, 0), 1, "level-triggered: still 2 pending");
	T_ASSERT_RET(fsaio_getevents(ctx, 2, 2, evs, &zero), 2);
	cr_assert_eq(epoll_wait(ep, &out, 1, 0), 0, "nothing pending");
	close(ep);
	t_ctx_destroy(ctx);
}

/* Cancelled requests post their events through the same path: the fd says so. */
Test(eventfd, cancel_makes_readable)
{
	struct t_sat s;
	struct fsaio_params p = { .workers = 1 };
	t_saturate(&s, &p);
	int efd = T_CALL(fsaio_event_fd(s.ctx));
	cr_assert_geq(efd, 0);
	int fd = t_coldfile(1 * MiB, 124);
	static uint8_t buf[128 * 1024];
	struct fsaio_req req;
	fsaio_prep_pread(&req, fd, buf, sizeof(buf), 0);
	t_submit1(s.ctx, &req);
	cr_assert_not(readable(efd, 0));
	T_ASSERT_RET(fsaio_cancel(s.ctx, &req), 0);
	cr_assert(readable(efd, 0), "a cancelled request's event is pending");
	struct fsaio_event ev;
	t_reap_all(s.ctx, 1, &ev, T_EVENT_TIMEOUT_MS);
	cr_assert_eq(ev.res, -ECANCELED);
	cr_assert_not(readable(efd, 0));

	t_sat_unblock(&s);
	cr_assert(readable(efd, T_EVENT_TIMEOUT_MS));
	t_reap_all(s.ctx, 1, &ev, T_EVENT_TIMEOUT_MS);
	t_sat_check(&s, &ev, 1);
	cr_assert_not(readable(efd, 0));
	t_ctx_destroy(s.ctx);
	t_blocker_fini(&s.blk);
}
