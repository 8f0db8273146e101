/* SPDX-License-Identifier: MIT */
/*
 * Four threads submit and reap on one context at once. Any thread may reap
 * any thread's event, so each request carries a record of what it must
 * produce; whoever reaps it checks the result and the data and marks it.
 * At the end every request has been seen exactly once, every read held the
 * right bytes, every write landed. Assertions can only run on the test's
 * thread, so the workers count failures and the main thread asserts.
 */
#include "t_helpers.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define KiB 1024u
#define MiB (1024u * 1024u)

TestSuite(threads, .init = t_setup, .fini = t_teardown, .timeout = 90);

enum { NTHREADS = 4, NOPS = 250, MAXLEN = 16 * 1024, SLOT = 16 * 1024, BATCH = 8 };
#define RSIZE (4 * MiB)
#define WREGION ((uint64_t)NOPS * SLOT)
#define RSEED 130u
#define WSEED(t) (140u + (unsigned)(t))

struct op {
	struct fsaio_req req;
	uint8_t *buf;
	uint64_t off;
	size_t len;
	bool write;
	unsigned seed;
	_Atomic int events;
};

struct worker {
	pthread_t th;
	int id;
	struct op ops[NOPS];
	uint8_t *mem;
};

static fsaio_ctx_t *g_ctx;
static int g_rfd, g_wfd;
static struct worker g_w[NTHREADS];
static _Atomic unsigned g_reaped, g_errors;
static char g_first_error[256];
static atomic_flag g_err_once = ATOMIC_FLAG_INIT;

static void fail(const char *fmt, long long a, long long b)
{
	atomic_fetch_add(&g_errors, 1);
	if (!atomic_flag_test_and_set(&g_err_once))
		snprintf(g_first_error, sizeof(g_first_error), fmt, a, b);
}

static void check_event(const struct fsaio_event *ev)
{
	struct op *op = ev->user_data;

	if (!op || &op->req != ev->req) {
		fail("event with foreign user_data %lld / req %lld", (long long)(intptr_t)ev->user_data,
		     (long long)(intptr_t)ev->req);
		return;
	}
	int prev = atomic_fetch_add(&op->events, 1);
	if (prev != 0)
		fail("request got event number %lld (res %lld)", prev + 1, (long long)ev->res);
	if (ev->res != (int64_t)op->len) {
		fail("res %lld, want %lld", (long long)ev->res, (long long)op->len);
		return;
	}
	if (!op->write) {
		ssize_t bad = t_pattern_mismatch(op->buf, op->len, op->off, op->seed);
		if (bad >= 0)
			fail("read at %lld: wrong byte at %lld", (long long)op->off, (long long)bad);
	}
}

/* Reap what is there (waiting up to wait_ms for at least one). */
static void reap(int wait_ms)
{
	struct fsaio_event evs[16];
	struct timespec ts = { 0, (long)wait_ms * 1000000L };

	errno = T_ERRNO_SENTINEL;
	int r = fsaio_getevents(g_ctx, 1, 16, evs, &ts);
	if (errno != T_ERRNO_SENTINEL)
		fail("getevents changed errno to %lld (r %lld)", errno, r);
	if (r < 0) {
		fail("getevents: %lld %lld", r, 0);
		return;
	}
	for (int i = 0; i < r; i++)
		check_event(&evs[i]);
	atomic_fetch_add(&g_reaped, (unsigned)r);
}

static void *run(void *arg)
{
	struct worker *w = arg;
	unsigned seed = 1000u + (unsigned)w->id;
	int next = 0;

	while (next < NOPS) {
		struct fsaio_req *rp[BATCH];
		int n = 0;
		for (; n < BATCH && next + n < NOPS; n++)
			rp[n] = &w->ops[next + n].req;
		errno = T_ERRNO_SENTINEL;
		int r = fsaio_submit(g_ctx, rp, (unsigned)n);
		if (errno != T_ERRNO_SENTINEL)
			fail("submit changed errno to %lld (r %lld)", errno, r);
		if (r == -EAGAIN || r == 0) {
			/* Queue full: reaping is what makes room. */
			reap(10);
			continue;
		}
		if (r < 0) {
			fail("submit: %lld at op %lld", r, next);
			break;
		}
		next += r;
		if (rand_r(&seed) % 2)
			reap(0);
	}
	uint64_t deadline = t_now_ns() + 60ull * 1000000000ull;
	while (atomic_load(&g_reaped) < NTHREADS * NOPS && t_now_ns() < deadline)
		reap(10);
	return NULL;
}

static void prepare(struct worker *w, int id)
{
	unsigned seed = 77u + (unsigned)id;
	w->id = id;
	w->mem = malloc((size_t)NOPS * MAXLEN);
	cr_assert_not_null(w->mem);
	for (int i = 0; i < NOPS; i++) {
		struct op *op = &w->ops[i];
		op->buf = w->mem + (size_t)i * MAXLEN;
		atomic_init(&op->events, 0);
		op->write = (i % 3 == 2);
		if (op->write) {
			/* Each write fills its own slot of the thread's region, so
			 * the final contents do not depend on completion order. */
			op->len = SLOT;
			op->off = (uint64_t)id * WREGION + (uint64_t)i * SLOT;
			op->seed = WSEED(id);
			t_fill_pattern(op->buf, op->len, op->off, op->seed);
			fsaio_prep_pwrite(&op->req, g_wfd, op->buf, op->len, (int64_t)op->off);
		} else {
			op->len = 1 + rand_r(&seed) % MAXLEN;
			op->off = rand_r(&seed) % (RSIZE - op->len);
			op->seed = RSEED;
			memset(op->buf, 0, op->len);
			fsaio_prep_pread(&op->req, g_rfd, op->buf, op->len, (int64_t)op->off);
		}
		op->req.user_data = op;
	}
}

static void four_threads(uint32_t backend)
{
	g_rfd = t_tmpfile(RSIZE, RSEED);
	t_make_cold(g_rfd);
	for (uint64_t o = 0; o < RSIZE; o += 512 * KiB)
		t_make_hot(g_rfd, o, 256 * KiB);
	g_wfd = t_tmpfile(0, 0);
	struct fsaio_params p = { .queue_depth = 64, .workers = 8, .miss_backend = backend };
	g_ctx = t_ctx(&p);

	for (int t = 0; t < NTHREADS; t++)
		prepare(&g_w[t], t);
	for (int t = 0; t < NTHREADS; t++)
		cr_assert_eq(pthread_create(&g_w[t].th, NULL, run, &g_w[t]), 0);
	for (int t = 0; t < NTHREADS; t++)
		pthread_join(g_w[t].th, NULL);

	cr_assert_eq(atomic_load(&g_errors), 0, "%u errors, first: %s", atomic_load(&g_errors),
		     g_first_error);
	cr_assert_eq(atomic_load(&g_reaped), NTHREADS * NOPS);
	for (int t = 0; t < NTHREADS; t++)
		for (int i = 0; i < NOPS; i++)
			cr_assert_eq(atomic_load(&g_w[t].ops[i].events), 1, "thread %d op %d", t, i);
	t_no_event(g_ctx);

	for (int t = 0; t < NTHREADS; t++)
		for (int i = 2; i < NOPS; i += 3)
			t_check_file(g_wfd, (uint64_t)t * WREGION + (uint64_t)i * SLOT, SLOT, WSEED(t));

	struct fsaio_stats st = t_stats(g_ctx);
	cr_assert_eq(st.requests, NTHREADS * NOPS);
	cr_assert_leq(st.pool_threads, 8);
	cr_assert_eq(st.pool_queue_len, 0);
	t_ctx_destroy(g_ctx);
	for (int t = 0; t < NTHREADS; t++)
		free(g_w[t].mem);
}

Test(threads, four_threads_submit_and_reap)
{
	four_threads(FSAIO_BACKEND_AUTO);
}

Test(threads, four_threads_submit_and_reap_pool)
{
	four_threads(FSAIO_BACKEND_THREADS);
}

/* Threads that only reap, blocked in getevents with no timeout, while the
 * main thread submits: every event reaches exactly one of them. */
static _Atomic unsigned g_got;
enum { NREAP = 3, NREQ = 120 };
static struct fsaio_req g_reqs[NREQ];
static _Atomic int g_seen[NREQ];

static void *reaper(void *arg)
{
	(void)arg;
	for (;;) {
		struct fsaio_event ev;
		int r = fsaio_getevents(g_ctx, 1, 1, &ev, NULL);
		if (r != 1) {
			fail("blocking getevents returned %lld %lld", r, 0);
			return NULL;
		}
		if (ev.user_data == NULL)
			return NULL;    /* the stop request, one per reaper */
		struct fsaio_req *req = ev.req;
		if (req < g_reqs || req >= g_reqs + NREQ) {
			fail("foreign request %lld %lld", (long long)(intptr_t)req, 0);
			return NULL;
		}
		atomic_fetch_add(&g_seen[req - g_reqs], 1);
		if (ev.res != 4096)
			fail("res %lld at %lld", (long long)ev.res, (long long)(req - g_reqs));
		atomic_fetch_add(&g_got, 1);
	}
}

Test(threads, blocked_reapers)
{
	int fd = t_hotprefix_file(NREQ * 4096, 131, NREQ * 2048);
	g_ctx = t_ctx(NULL);
	pthread_t th[NREAP];
	for (int i = 0; i < NREAP; i++)
		cr_assert_eq(pthread_create(&th[i], NULL, reaper, NULL), 0);

	static uint8_t bufs[NREQ][4096];
	for (int i = 0; i < NREQ; i++) {
		fsaio_prep_pread(&g_reqs[i], fd, bufs[i], 4096, (int64_t)i * 4096);
		g_reqs[i].user_data = &g_reqs[i];
		t_submit1(g_ctx, &g_reqs[i]);
	}
	uint64_t deadline = t_now_ns() + 20ull * 1000000000ull;
	while (atomic_load(&g_got) < NREQ && t_now_ns() < deadline && !atomic_load(&g_errors))
		t_sleep_ms(1);
	cr_assert_eq(atomic_load(&g_errors), 0, "%s", g_first_error);
	cr_assert_eq(atomic_load(&g_got), NREQ);

	/* Zero-length reads complete at once with user_data NULL: one per
	 * reaper lets each of them return. */
	struct fsaio_req stop[NREAP];
	uint8_t b;
	for (int i = 0; i < NREAP; i++) {
		fsaio_prep_pread(&stop[i], fd, &b, 0, 0);
		t_submit1(g_ctx, &stop[i]);
	}
	for (int i = 0; i < NREAP; i++)
		pthread_join(th[i], NULL);
	cr_assert_eq(atomic_load(&g_errors), 0, "%s", g_first_error);
	for (int i = 0; i < NREQ; i++) {
		cr_assert_eq(atomic_load(&g_seen[i]), 1, "request %d seen %d times", i, atomic_load(&g_seen[i]));
		t_check_pattern(bufs[i], 4096, (uint64_t)i * 4096, 131);
	}
	t_ctx_destroy(g_ctx);
}

/* A caller's thread with a cancel pending (deferred) submits, then another
 * reaps: neither call is a cancellation point (on the way they open files
 * and read and write the eventfd, some of it under the engine's locks), so
 * each returns whole, the thread is cancelled at its next cancellation
 * point, and each request still ends in its one event. */
struct cancel_arg {
	fsaio_ctx_t *ctx;
	struct fsaio_req *reqs[2];
	_Atomic int submitted;          /* fsaio_submit's result, +1000 once returned */
	struct fsaio_event ev[2];
	_Atomic int reaped;             /* fsaio_getevents' result, +1000 once returned */
};

static void *submit_with_cancel_pending(void *p)
{
	struct cancel_arg *a = p;

	pthread_cancel(pthread_self());         /* pending: deferred, not acted on yet */
	int r = fsaio_submit(a->ctx, a->reqs, 2);
	atomic_store(&a->submitted, 1000 + r);
	pthread_testcancel();
	return NULL;
}

static void *reap_with_cancel_pending(void *p)
{
	struct cancel_arg *a = p;
	struct timespec ts = { T_EVENT_TIMEOUT_MS / 1000, 0 };

	pthread_cancel(pthread_self());
	int r = fsaio_getevents(a->ctx, 2, 2, a->ev, &ts);
	atomic_store(&a->reaped, 1000 + r);
	pthread_testcancel();
	return NULL;
}

Test(threads, submit_and_getevents_hold_no_cancellation_point)
{
	enum { LEN = 64 * KiB };
	int fd = t_hotprefix_file(4 * MiB, 150, LEN);
	fsaio_ctx_t *ctx = t_ctx(NULL);
	/* With an eventfd, posting an event writes it under the queue's lock. */
	cr_assert_geq(T_CALL(fsaio_event_fd(ctx)), 0);
	static uint8_t hot[LEN], cold[LEN];
	struct fsaio_req rq[2];
	fsaio_prep_pread(&rq[0], fd, hot, LEN, 0);              /* inline */
	fsaio_prep_pread(&rq[1], fd, cold, LEN, 2 * MiB);       /* to the backend */
	struct cancel_arg a = { .ctx = ctx, .reqs = { &rq[0], &rq[1] } };

	pthread_t th;
	void *ret = NULL;
	cr_assert_eq(pthread_create(&th, NULL, submit_with_cancel_pending, &a), 0);
	cr_assert_eq(pthread_join(th, &ret), 0);
	cr_assert_eq(ret, PTHREAD_CANCELED);
	cr_assert_eq(atomic_load(&a.submitted), 1002, "fsaio_submit: %d (1000 + result; 0: it never returned)",
		     atomic_load(&a.submitted));

	cr_assert_eq(pthread_create(&th, NULL, reap_with_cancel_pending, &a), 0);
	cr_assert_eq(pthread_join(th, &ret), 0);
	cr_assert_eq(ret, PTHREAD_CANCELED);
	cr_assert_eq(atomic_load(&a.reaped), 1002, "fsaio_getevents: %d (1000 + result; 0: it never returned)",
		     atomic_load(&a.reaped));
	cr_assert_eq(t_event_of(a.ev, 2, &rq[0])->res, LEN);
	cr_assert_eq(t_event_of(a.ev, 2, &rq[1])->res, LEN);
	t_check_pattern(hot, LEN, 0, 150);
	t_check_pattern(cold, LEN, 2 * MiB, 150);
	cr_assert_eq(t_stats(ctx).completed_inline, 1);
	t_ctx_destroy(ctx);
}
