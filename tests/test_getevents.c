/* SPDX-License-Identifier: MIT */
/*
 * fsaio_getevents(): min_nr/nr, the three timeout forms ({0,0} polls, a
 * relative limit returns what is there, NULL waits), and -EINTR when a
 * signal (a handler without SA_RESTART) arrives before any event. Durations
 * are only checked from below: a timed wait must not return early; how
 * fast things are belongs to bench/.
 */
#include "t_helpers.h"

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <unistd.h>

#define KiB 1024u
#define MiB (1024u * 1024u)

TestSuite(getevents, .init = t_setup, .fini = t_teardown, .timeout = 60);

/* Submit n reads of 512 bytes, read i at i * 512 into bufs[i], one call
 * each; rp[i] points at reqs[i] (for t_match_events). */
static void submit_hot(fsaio_ctx_t *ctx, int fd, struct fsaio_req *reqs,
		       struct fsaio_req **rp, int n, uint8_t (*bufs)[512])
{
	for (int i = 0; i < n; i++) {
		fsaio_prep_pread(&reqs[i], fd, bufs[i], 512, (int64_t)i * 512);
		t_submit1(ctx, &reqs[i]);
		rp[i] = &reqs[i];
	}
}

Test(getevents, min_nr_above_nr)
{
	fsaio_ctx_t *ctx = t_ctx(NULL);
	struct fsaio_event evs[2];
	T_ASSERT_RET(fsaio_getevents(ctx, 3, 2, evs, NULL), -EINVAL);
	struct timespec zero = { 0, 0 };
	T_ASSERT_RET(fsaio_getevents(ctx, 1, 0, evs, &zero), -EINVAL);
	t_ctx_destroy(ctx);
}

Test(getevents, poll_with_nothing_pending)
{
	fsaio_ctx_t *ctx = t_ctx(NULL);
	struct fsaio_event evs[4];
	struct timespec zero = { 0, 0 };
	T_ASSERT_RET(fsaio_getevents(ctx, 0, 4, evs, &zero), 0);
	T_ASSERT_RET(fsaio_getevents(ctx, 1, 4, evs, &zero), 0);
	T_ASSERT_RET(fsaio_getevents(ctx, 4, 4, evs, &zero), 0);
	/* min_nr 0 never waits, whatever the timeout. */
	T_ASSERT_RET(fsaio_getevents(ctx, 0, 4, evs, NULL), 0);
	t_ctx_destroy(ctx);
}

Test(getevents, relative_timeout_nothing_pending)
{
	fsaio_ctx_t *ctx = t_ctx(NULL);
	struct fsaio_event ev;
	struct timespec ts = { 0, 100 * 1000 * 1000 };
	uint64_t t0 = t_now_ns();
	T_ASSERT_RET(fsaio_getevents(ctx, 1, 1, &ev, &ts), 0);
	uint64_t waited = t_now_ns() - t0;
	cr_assert_geq(waited, 100ull * 1000 * 1000, "returned after %llu ns, before the timeout",
		      (unsigned long long)waited);
	t_ctx_destroy(ctx);
}

Test(getevents, relative_timeout_returns_what_is_there)
{
	int fd = t_hotfile(64 * KiB, 170);
	fsaio_ctx_t *ctx = t_ctx(NULL);
	struct fsaio_req reqs[2], *rp[2];
	uint8_t bufs[2][512];
	submit_hot(ctx, fd, reqs, rp, 2, bufs);

	struct fsaio_event evs[5];
	struct timespec ts = { 0, 80 * 1000 * 1000 };
	uint64_t t0 = t_now_ns();
	T_ASSERT_RET(fsaio_getevents(ctx, 5, 5, evs, &ts), 2);
	cr_assert_geq(t_now_ns() - t0, 80ull * 1000 * 1000, "gave up before the timeout");
	t_match_events(evs, 2, rp, 2);
	t_no_event(ctx);
	t_ctx_destroy(ctx);
}

Test(getevents, nr_caps_and_min_nr_zero)
{
	int fd = t_hotfile(64 * KiB, 171);
	fsaio_ctx_t *ctx = t_ctx(NULL);
	enum { N = 5 };
	struct fsaio_req reqs[N], *rp[N];
	uint8_t bufs[N][512];
	submit_hot(ctx, fd, reqs, rp, N, bufs);

	struct fsaio_event evs[N];
	T_ASSERT_RET(fsaio_getevents(ctx, 0, 3, evs, NULL), 3);
	T_ASSERT_RET(fsaio_getevents(ctx, 0, 3, evs + 3, NULL), 2);
	t_match_events(evs, N, rp, N);
	for (int i = 0; i < N; i++)
		t_check_pattern(bufs[i], 512, (uint64_t)i * 512, 171);
	t_no_event(ctx);
	t_ctx_destroy(ctx);
}

/* NULL waits until min_nr events are there (the pool produces them). */
Test(getevents, null_timeout_waits_for_min_nr)
{
	int fd = t_coldfile(2 * MiB, 172);
	fsaio_ctx_t *ctx = t_ctx(NULL);
	enum { N = 8, LEN = 64 * 1024 };
	static uint8_t bufs[N][LEN];
	struct fsaio_req reqs[N], *rp[N];
	for (int i = 0; i < N; i++) {
		fsaio_prep_pread(&reqs[i], fd, bufs[i], LEN, (int64_t)i * 3 * LEN);
		rp[i] = &reqs[i];
	}
	t_submit(ctx, rp, N);
	struct fsaio_event evs[N];
	int got = T_CALL(fsaio_getevents(ctx, N, N, evs, NULL));
	cr_assert_eq(got, N, "NULL timeout returned %d of %d", got, N);
	t_match_events(evs, N, rp, N);
	for (int i = 0; i < N; i++) {
		cr_assert_eq(evs[i].res, LEN);
		int k = (int)(evs[i].req - reqs);
		t_check_pattern(bufs[k], LEN, (uint64_t)k * 3 * LEN, 172);
	}
	t_ctx_destroy(ctx);
}

/*
 * Signals. The handler has no SA_RESTART; a helper thread keeps sending the
 * signal to the test's thread until that thread is out of getevents, so it
 * does not matter whether the first one lands before or during the wait.
 * If getevents never returns, the helper gives up after a bound and submits
 * a request to release it, and the test fails on that.
 */
static _Atomic int g_sigs, g_done, g_rescued;
static pthread_t g_target;
static fsaio_ctx_t *g_ctx;
static int g_rescue_fd;
static struct fsaio_req g_rescue;
static uint8_t g_rescue_buf[512];

static void on_sig(int sig)
{
	(void)sig;
	atomic_fetch_add(&g_sigs, 1);
}

static void *pester(void *arg)
{
	(void)arg;
	uint64_t deadline = t_now_ns() + 3ull * 1000000000ull;
	while (!atomic_load(&g_done)) {
		if (t_now_ns() > deadline) {
			struct fsaio_req *rp = &g_rescue;
			fsaio_prep_pread(&g_rescue, g_rescue_fd, g_rescue_buf, sizeof(g_rescue_buf), 0);
			atomic_store(&g_rescued, 1);
			fsaio_submit(g_ctx, &rp, 1);
			return NULL;
		}
		pthread_kill(g_target, SIGUSR1);
		t_sleep_ms(20);
	}
	return NULL;
}

static void with_signals(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_sig;
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = 0;        /* no SA_RESTART */
	cr_assert_eq(sigaction(SIGUSR1, &sa, NULL), 0);
	g_target = pthread_self();
}

static int getevents_under_signals(unsigned min_nr, unsigned nr, struct fsaio_event *evs,
				   const struct timespec *ts)
{
	atomic_store(&g_done, 0);
	atomic_store(&g_rescued, 0);
	atomic_store(&g_sigs, 0);
	pthread_t th;
	cr_assert_eq(pthread_create(&th, NULL, pester, NULL), 0);
	int r = T_CALL(fsaio_getevents(g_ctx, min_nr, nr, evs, ts));
	atomic_store(&g_done, 1);
	pthread_join(th, NULL);
	cr_assert_not(atomic_load(&g_rescued), "getevents did not return on a signal (it returned %d "
		      "only after a request was submitted to release it)", r);
	cr_assert_gt(atomic_load(&g_sigs), 0);
	return r;
}

Test(getevents, eintr_with_nothing_collected)
{
	g_rescue_fd = t_tmpfile(4096, 173);
	g_ctx = t_ctx(NULL);
	with_signals();
	struct fsaio_event ev;
	int r = getevents_under_signals(1, 1, &ev, NULL);
	cr_assert_eq(r, -EINTR, "NULL timeout: %d", r);

	struct timespec ts = { 30, 0 };
	r = getevents_under_signals(1, 1, &ev, &ts);
	cr_assert_eq(r, -EINTR, "relative timeout: %d", r);
	t_no_event(g_ctx);
	t_ctx_destroy(g_ctx);
}

/* A signal after some events were collected: those are returned, not held
 * while the call goes on waiting for min_nr. */
Test(getevents, signal_after_some_collected_returns_them)
{
	int fd = t_hotfile(64 * KiB, 174);
	g_rescue_fd = fd;
	g_ctx = t_ctx(NULL);
	struct fsaio_req req;
	uint8_t buf[512];
	fsaio_prep_pread(&req, fd, buf, sizeof(buf), 1024);
	t_submit1(g_ctx, &req);

	with_signals();
	struct fsaio_event evs[2];
	int r = getevents_under_signals(2, 2, evs, NULL);
	if (r == -EINTR) {
		/* Acceptable only if the event is still there to be reaped. */
		t_reap_all(g_ctx, 1, evs, T_EVENT_TIMEOUT_MS);
	} else {
		cr_assert_eq(r, 1, "getevents returned %d", r);
		t_no_event(g_ctx);
	}
	cr_assert_eq(evs[0].req, &req);
	cr_assert_eq(evs[0].res, (int64_t)sizeof(buf));
	t_check_pattern(buf, sizeof(buf), 1024, 174);
	t_ctx_destroy(g_ctx);
}

/* A worker's completion wakes a thread waiting with a timeout. */
Test(getevents, timed_wait_woken_by_worker)
{
	int fd = t_coldfile(1 * MiB, 175);
	fsaio_ctx_t *ctx = t_ctx(NULL);
	static uint8_t buf[256 * 1024];
	struct fsaio_req req;
	fsaio_prep_pread(&req, fd, buf, sizeof(buf), 0);
	t_submit1(ctx, &req);
	struct fsaio_event ev;
	struct timespec ts = { T_EVENT_TIMEOUT_MS / 1000, 0 };
	T_ASSERT_RET(fsaio_getevents(ctx, 1, 1, &ev, &ts), 1);
	cr_assert_eq(ev.res, (int64_t)sizeof(buf));
	t_check_pattern(buf, sizeof(buf), 0, 175);
	t_ctx_destroy(ctx);
}

/* Timeouts too large to add to the clock wait like no timeout at all: the
 * call returns only once the event it waits for is there. */
struct huge_wait {
	fsaio_ctx_t *ctx;
	struct timespec ts;
	_Atomic int ret;
};

static void *wait_huge(void *arg)
{
	struct huge_wait *w = arg;
	struct fsaio_event ev;

	atomic_store(&w->ret, fsaio_getevents(w->ctx, 1, 1, &ev, &w->ts));
	return NULL;
}

Test(getevents, huge_timeouts_saturate)
{
	const struct timespec huge[] = {
		{ INT64_MAX / 2, 0 }, { 10000000000LL, 0 }, { INT64_MAX, 999999999 },
	};
	int fd = t_tmpfile(64 * 1024, 173);
	fsaio_ctx_t *ctx = t_ctx(NULL);

	for (unsigned i = 0; i < sizeof(huge) / sizeof(huge[0]); i++) {
		struct huge_wait w = { .ctx = ctx, .ts = huge[i], .ret = -1000 };
		struct fsaio_req req;
		uint8_t buf[512];
		pthread_t th;

		cr_assert_eq(pthread_create(&th, NULL, wait_huge, &w), 0);
		t_sleep_ms(50);
		/* A hot read completes inline: the waiter's event. */
		fsaio_prep_pread(&req, fd, buf, sizeof(buf), 0);
		t_submit1(ctx, &req);
		cr_assert_eq(pthread_join(th, NULL), 0);
		cr_assert_eq(atomic_load(&w.ret), 1, "timeout {%lld, %ld}: returned %d",
			     (long long)huge[i].tv_sec, huge[i].tv_nsec, atomic_load(&w.ret));
	}
	t_ctx_destroy(ctx);
}

/* The reaper is woken once per sleep, however many completions arrive
 * while it wakes: 16 requests queued behind a held worker complete in a
 * burst while one thread waits for all of them. */
struct burst_wait {
	fsaio_ctx_t *ctx;
	struct fsaio_event evs[17];
	_Atomic int got;
};

static void *wait_burst(void *arg)
{
	struct burst_wait *w = arg;
	int got = 0;

	while (got < 17) {
		int n = fsaio_getevents(w->ctx, (unsigned)(17 - got), (unsigned)(17 - got),
					w->evs + got, NULL);
		if (n < 0 && n != -EINTR)
			break;
		if (n > 0)
			got += n;
	}
	atomic_store(&w->got, got);
	return NULL;
}

Test(getevents, reaper_woken_once_per_sleep)
{
	struct t_sat sat;
	t_saturate(&sat, &(struct fsaio_params){ .workers = 1, .flags = FSAIO_CTX_NO_INLINE });
	int fd = t_tmpfile(64 * 1024, 174);
	static uint8_t bufs[16][512];
	struct fsaio_req reqs[16], *rp[16];
	struct burst_wait w = { .ctx = sat.ctx, .got = 0 };
	pthread_t th;

	for (int i = 0; i < 16; i++) {
		fsaio_prep_pread(&reqs[i], fd, bufs[i], 512, (int64_t)i * 512);
		rp[i] = &reqs[i];
	}
	t_submit(sat.ctx, rp, 16);
	cr_assert_eq(t_stats(sat.ctx).pool_queue_len, 16);
	cr_assert_eq(pthread_create(&th, NULL, wait_burst, &w), 0);
	for (int i = 0; i < 2000 && !t_stats(sat.ctx).reaper_sleeps; i++)
		t_sleep_ms(5);
	t_sat_unblock(&sat);
	cr_assert_eq(pthread_join(th, NULL), 0);
	cr_assert_eq(atomic_load(&w.got), 17);
	t_sat_check(&sat, w.evs, 17);
	struct fsaio_stats st = t_stats(sat.ctx);
	cr_assert_geq(st.reaper_sleeps, 1);
	cr_assert_leq(st.reaper_wakeups, st.reaper_sleeps, "%llu wake-ups for %llu sleeps",
		      (unsigned long long)st.reaper_wakeups, (unsigned long long)st.reaper_sleeps);
	t_ctx_destroy(sat.ctx);
}
