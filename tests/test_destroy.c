/* SPDX-License-Identifier: MIT */
/*
 * Destroy with requests in flight: queued retries are cancelled, running
 * ones are waited for, every request gets exactly one event (or callback),
 * and no buffer is touched once destroy has returned. Under ASan the same
 * tests show that nothing leaks.
 */
#include "t_helpers.h"

#include <dirent.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#define KiB 1024u
#define MiB (1024u * 1024u)
#define SENT 0xc3

TestSuite(destroy, .init = t_setup, .fini = t_teardown, .timeout = 60);

enum { NQ = 16, NH = 4, LEN = 64 * 1024 };

/* What the completion callback saw, per request. Written by whichever
 * thread completes a request, read by the test after destroy returned. */
struct seen {
	_Atomic int calls;
	_Atomic int64_t res;
	_Atomic int on_main;
};
static struct fsaio_req g_q[NQ], g_h[NH];
static struct t_sat g_sat;
static struct seen g_seen_q[NQ], g_seen_h[NH], g_seen_b;
static _Atomic int g_cancelled, g_stray, g_total;
static pthread_t g_main;

static struct seen *seen_of(const struct fsaio_req *r)
{
	if (r == &g_sat.breq)
		return &g_seen_b;
	if (r >= g_q && r < g_q + NQ)
		return &g_seen_q[r - g_q];
	if (r >= g_h && r < g_h + NH)
		return &g_seen_h[r - g_h];
	return NULL;
}

static void on_complete(void *arg, const struct fsaio_event *ev)
{
	struct seen *s = seen_of(ev->req);

	atomic_fetch_add(&g_total, 1);
	if (arg != &g_sat || !s || ev->user_data != ev->req->user_data) {
		atomic_fetch_add(&g_stray, 1);
		return;
	}
	atomic_store(&s->res, ev->res);
	atomic_store(&s->on_main, pthread_equal(pthread_self(), g_main) ? 1 : 0);
	atomic_fetch_add(&s->calls, 1);
	if (ev->res == -ECANCELED)
		atomic_fetch_add(&g_cancelled, 1);
}

/* Resolves the blocker once destroy has cancelled every queued request (the
 * callbacks say when), so destroy is caught with one request running and
 * the rest queued. Gives up after a bound so a broken engine cannot hang
 * the test; the main thread then sees the count was not reached. */
static _Atomic int g_release_status = 1;
static void *releaser(void *arg)
{
	(void)arg;
	uint64_t deadline = t_now_ns() + 10ull * 1000000000ull;
	int reached = 0;
	while (t_now_ns() < deadline) {
		if (atomic_load(&g_cancelled) >= NQ) {
			reached = 1;
			break;
		}
		t_sleep_ms(1);
	}
	int r = t_blocker_release_nocheck(&g_sat.blk, g_sat.content);
	atomic_store(&g_release_status, reached ? r : -ETIMEDOUT);
	return NULL;
}

Test(destroy, callback_every_request_once)
{
	g_main = pthread_self();
	struct fsaio_params p = { .workers = 1, .complete = on_complete, .complete_arg = &g_sat };
	t_saturate(&g_sat, &p);

	int fd = t_coldfile(2 * MiB, 110);
	t_make_hot(fd, 1 * MiB, NH * LEN);
	uint8_t *bufs = malloc((size_t)(NQ + NH) * LEN);
	memset(bufs, SENT, (size_t)(NQ + NH) * LEN);
	struct fsaio_req *rp[NQ + NH];
	/* Backwards: one read's kernel readahead (a sequential start grows a
	 * window forwards) must not bring in the ones submitted after it. */
	for (int i = 0; i < NQ; i++) {
		fsaio_prep_pread(&g_q[i], fd, bufs + (size_t)i * LEN, LEN, (int64_t)(NQ - 1 - i) * LEN);
		g_q[i].user_data = &g_q[i];
		rp[i] = &g_q[i];
	}
	for (int i = 0; i < NH; i++) {
		fsaio_prep_pread(&g_h[i], fd, bufs + (size_t)(NQ + i) * LEN, LEN,
				 (int64_t)(1 * MiB + (unsigned)i * LEN));
		g_h[i].user_data = &g_h[i];
		rp[NQ + i] = &g_h[i];
	}
	t_submit(g_sat.ctx, rp, NQ + NH);
	cr_assert_eq(t_stats(g_sat.ctx).pool_queue_len, NQ);
	/* With a callback, getevents has nothing to give. */
	t_no_event(g_sat.ctx);
	for (int i = 0; i < NH; i++)
		cr_assert_eq(atomic_load(&g_seen_h[i].calls), 1, "hot read %d not called back", i);

	pthread_t th;
	cr_assert_eq(pthread_create(&th, NULL, releaser, NULL), 0);
	t_ctx_destroy(g_sat.ctx);
	pthread_join(th, NULL);
	cr_assert_eq(atomic_load(&g_release_status), 0,
		     "destroy did not cancel the %d queued requests while one was running (%d)",
		     NQ, atomic_load(&g_release_status));

	cr_assert_eq(atomic_load(&g_stray), 0);
	cr_assert_eq(atomic_load(&g_total), NQ + NH + 1);
	cr_assert_eq(atomic_load(&g_seen_b.calls), 1);
	cr_assert_eq(atomic_load(&g_seen_b.res), 4096, "the running request completed normally");
	cr_assert_eq(atomic_load(&g_seen_b.on_main), 0, "the blocker completed on a worker");
	t_check_file(g_sat.wfd, 0, 4096, 99);
	for (int i = 0; i < NQ; i++) {
		cr_assert_eq(atomic_load(&g_seen_q[i].calls), 1, "queued %d: %d callbacks", i,
			     atomic_load(&g_seen_q[i].calls));
		cr_assert_eq(atomic_load(&g_seen_q[i].res), -ECANCELED);
		cr_assert_eq(atomic_load(&g_seen_q[i].on_main), 1, "cancelled on the destroying thread");
		/* Never started, so never written. */
		t_check_bytes(bufs + (size_t)i * LEN, LEN, SENT);
	}
	for (int i = 0; i < NH; i++) {
		cr_assert_eq(atomic_load(&g_seen_h[i].calls), 1);
		cr_assert_eq(atomic_load(&g_seen_h[i].res), LEN);
		cr_assert_eq(atomic_load(&g_seen_h[i].on_main), 1, "inline completion on the submitter");
		t_check_pattern(bufs + (size_t)(NQ + i) * LEN, LEN, 1 * MiB + (unsigned)i * LEN, 110);
	}
	t_blocker_fini(&g_sat.blk);
	free(bufs);
}

/*
 * No callback: completed events never reaped, requests running on several
 * workers and more queued. Destroy must return, and afterwards the buffers
 * are unmapped: a worker still writing into them would crash the test.
 */
Test(destroy, in_flight_without_callback)
{
	enum { N = 96 };
	size_t fsize = 4 * MiB;
	int fd = t_hotprefix_file(fsize, 111, 512 * KiB);
	size_t maplen = (size_t)N * LEN;
	uint8_t *bufs = mmap(NULL, maplen, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	cr_assert_neq(bufs, MAP_FAILED);

	struct fsaio_params p = { .workers = 4 };
	fsaio_ctx_t *ctx = t_ctx(&p);
	struct fsaio_req reqs[N], *rp[N];
	for (int i = 0; i < N; i++) {
		uint64_t off = (uint64_t)(i * 7 % N) * (fsize / N);
		fsaio_prep_pread(&reqs[i], fd, bufs + (size_t)i * LEN, LEN, (int64_t)off);
		rp[i] = &reqs[i];
	}
	t_submit(ctx, rp, N);
	cr_assert_eq(t_stats(ctx).requests, N);
	t_ctx_destroy(ctx);
	cr_assert_eq(munmap(bufs, maplen), 0);
	/* Give a stray worker (there should be none) the chance to fault. */
	t_sleep_ms(20);
}

/* Destroy waits for a running request: a write held by the blocker has
 * reached the file by the time destroy returns. */
static struct t_sat g_sat2;
static void *release_later(void *arg)
{
	(void)arg;
	t_sleep_ms(50);
	t_blocker_release_nocheck(&g_sat2.blk, g_sat2.content);
	return NULL;
}

Test(destroy, waits_for_running_request)
{
	struct fsaio_params p = { .workers = 1 };
	t_saturate(&g_sat2, &p);
	int fd = t_coldfile(1 * MiB, 112);
	enum { N = 8 };
	static uint8_t bufs[N][LEN];
	struct fsaio_req reqs[N], *rp[N];
	t_prep_reads(reqs, rp, N, fd, bufs[0], LEN, LEN);
	t_submit(g_sat2.ctx, rp, N);
	pthread_t th;
	cr_assert_eq(pthread_create(&th, NULL, release_later, NULL), 0);
	t_ctx_destroy(g_sat2.ctx);
	t_check_file(g_sat2.wfd, 0, 4096, 99);
	pthread_join(th, NULL);
	t_blocker_fini(&g_sat2.blk);
}

static int count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	cr_assert_not_null(d);
	int n = 0;
	while (readdir(d))
		n++;
	closedir(d);
	return n;
}

/* Contexts that were used (eventfd, workers, fd facts) leave nothing behind. */
Test(destroy, many_contexts_no_fd_leak)
{
	int fd = t_coldfile(256 * KiB, 113);
	int before = count_fds();
	for (int k = 0; k < 50; k++) {
		struct fsaio_params p = { .workers = 2, .queue_depth = 8 };
		fsaio_ctx_t *ctx = t_ctx(&p);
		int efd = T_CALL(fsaio_event_fd(ctx));
		cr_assert_geq(efd, 0);
		uint8_t buf[4096];
		struct fsaio_req req;
		fsaio_prep_pread(&req, fd, buf, sizeof(buf), (int64_t)(k % 64) * 4096);
		t_submit1(ctx, &req);
		if (k % 2) {
			struct fsaio_event ev;
			t_reap_all(ctx, 1, &ev, T_EVENT_TIMEOUT_MS);
			cr_assert_eq(ev.res, 4096);
		}
		t_ctx_destroy(ctx);
	}
	cr_assert_eq(count_fds(), before, "file descriptors leaked by create/destroy");
}

Test(destroy, idle_context)
{
	fsaio_ctx_t *ctx = t_ctx(NULL);
	t_ctx_destroy(ctx);
	struct fsaio_params p = { .queue_depth = 1, .workers = 1 };
	ctx = t_ctx(&p);
	t_ctx_destroy(ctx);
}
