/* SPDX-License-Identifier: MIT */
/*
 * The counters of fsaio_get_stats(): they start at zero, add up (every
 * request is either completed inline or queued, bytes split between the
 * submitter and the workers), and the pool's gauges follow the pool: threads
 * start on demand and never exceed the limit (parameter or FSAIO_WORKERS),
 * which is checked by holding every worker with a blocker.
 */
#include "t_helpers.h"

#include <stdlib.h>
#include <sys/resource.h>
#include <unistd.h>

#define KiB 1024u
#define MiB (1024u * 1024u)

TestSuite(stats, .init = t_setup, .fini = t_teardown, .timeout = 60);

Test(stats, fresh_context_is_zero)
{
	fsaio_ctx_t *ctx = t_ctx(NULL);
	struct fsaio_stats st = t_stats(ctx);
	t_check_path(&st, (struct t_path){ 0 }, "a fresh context");
	cr_assert_eq(st.retries, 0);
	cr_assert_eq(st.blocking_inline, 0);
	cr_assert_eq(st.pool_queue_len, 0);
	cr_assert_eq(st.pool_threads, 0, "workers start on demand");
	cr_assert_eq(st.probe_calls, 0);
	cr_assert_eq(st.probe_cold, 0);
	cr_assert_eq(st.cancelled, 0);
	t_ctx_destroy(ctx);
}

/* The counters after one write of buf on a fresh pool context of p. */
static struct fsaio_stats one_write(const struct fsaio_params *p, int fd, const void *buf,
				    size_t len, int rw_flags)
{
	fsaio_ctx_t *ctx = t_pool_ctx(p);
	struct fsaio_req req;
	struct fsaio_event ev;
	struct fsaio_stats st;

	fsaio_prep_pwrite(&req, fd, buf, len, 0);
	req.rw_flags = rw_flags;
	t_submit1(ctx, &req);
	t_reap_all(ctx, 1, &ev, T_EVENT_TIMEOUT_MS);
	cr_assert_eq(ev.res, (int64_t)len);
	st = t_stats(ctx);
	t_ctx_destroy(ctx);
	return st;
}

/* A write the submit call makes with a blocking call (FSAIO_CTX_INLINE_WRITES)
 * is counted as such, never as a worker's retry; one a worker carries (a
 * RWF_DSYNC write always goes to one) is a retry and nothing else. */
Test(stats, blocking_calls_counted_by_who_made_them)
{
	struct fsaio_params p = { .flags = FSAIO_CTX_INLINE_WRITES };
	int fd = t_tmpfile(64 * KiB, 9);
	static uint8_t buf[64 * KiB];
	struct fsaio_stats st;

	t_fill_pattern(buf, sizeof(buf), 0, 10);
	st = one_write(&p, fd, buf, sizeof(buf), 0);
	cr_assert_geq(st.blocking_inline, 1);
	cr_assert_eq(st.retries, 0, "no worker made a call");
	cr_assert_eq(st.queued, 0);

	st = one_write(NULL, fd, buf, sizeof(buf), RWF_DSYNC);
	cr_assert_eq(st.queued, 1);
	cr_assert_geq(st.retries, 1);
	cr_assert_eq(st.blocking_inline, 0);
	t_check_file(fd, 0, sizeof(buf), 10);
}

/* Hot reads complete in the submitter, every one of them. */
Test(stats, hot_reads_all_inline)
{
	int fd = t_hotfile(1 * MiB, 180);
	fsaio_ctx_t *ctx = t_ctx(NULL);
	enum { N = 32, LEN = 32 * 1024 };
	uint8_t *bufs = malloc((size_t)N * LEN);
	struct fsaio_req reqs[N], *rp[N];
	t_prep_reads(reqs, rp, N, fd, bufs, LEN, LEN);
	t_submit(ctx, rp, N);
	struct fsaio_event evs[N];
	t_reap_all(ctx, N, evs, T_EVENT_TIMEOUT_MS);
	struct fsaio_stats st = t_stats(ctx);
	cr_assert_eq(st.requests, N);
	cr_assert_eq(st.completed_inline, N);
	cr_assert_eq(st.queued, 0);
	cr_assert_eq(st.bytes_inline, (uint64_t)N * LEN);
	cr_assert_eq(st.bytes_worker, 0);
	t_ctx_destroy(ctx);
	free(bufs);
}

/* FSAIO_CTX_INLINE_WRITES: writes done by the submitter, even into cold
 * partial pages that must be read first, are inline completions and no
 * worker's retries. */
Test(stats, inline_writes_are_not_retries)
{
	int fd = t_tmpfile(1 * MiB, 182);
	fsaio_ctx_t *ctx = t_ctx(&(struct fsaio_params){ .flags = FSAIO_CTX_INLINE_WRITES });
	enum { N = 16, LEN = 6000 };
	uint8_t *buf = malloc(LEN);
	struct fsaio_req reqs[N], *rp[N];

	cr_assert_not_null(buf);
	t_fill_pattern(buf, LEN, 0, 183);
	t_make_cold(fd);
	for (int i = 0; i < N; i++) {
		fsaio_prep_pwrite(&reqs[i], fd, buf, LEN, (int64_t)i * 65536 + 100);
		rp[i] = &reqs[i];
	}
	t_submit(ctx, rp, N);
	struct fsaio_event evs[N];
	t_reap_all(ctx, N, evs, T_EVENT_TIMEOUT_MS);
	for (int i = 0; i < N; i++)
		cr_assert_eq(evs[i].res, LEN);
	struct fsaio_stats st = t_stats(ctx);
	cr_assert_eq(st.requests, N);
	cr_assert_eq(st.completed_inline, N);
	cr_assert_eq(st.queued, 0);
	cr_assert_eq(st.retries, 0, "%llu worker retries, none queued",
		     (unsigned long long)st.retries);
	cr_assert_eq(st.bytes_inline, (uint64_t)N * LEN);
	t_ctx_destroy(ctx);
	free(buf);
}

/* A mixed workload: the counters account for every request and byte. */
Test(stats, counters_add_up)
{
	size_t fsize = 4 * MiB;
	int fd = t_coldfile(fsize, 181);
	for (uint64_t o = 0; o < fsize; o += 256 * KiB)
		t_make_hot(fd, o, 96 * KiB);
	fsaio_ctx_t *ctx = t_pool_ctx(NULL);
	enum { N = 48 };
	static uint8_t bufs[N][128 * 1024];
	struct fsaio_req reqs[N], *rp[N];
	unsigned seed = 181;
	for (int i = 0; i < N; i++) {
		size_t len = 1 + rand_r(&seed) % sizeof(bufs[i]);
		uint64_t off = rand_r(&seed) % (fsize - len);
		fsaio_prep_pread(&reqs[i], fd, bufs[i], len, (int64_t)off);
		rp[i] = &reqs[i];
	}
	t_submit(ctx, rp, N);
	struct fsaio_event evs[N];
	t_reap_all(ctx, N, evs, T_EVENT_TIMEOUT_MS);
	uint64_t bytes = 0;
	for (int i = 0; i < N; i++) {
		const struct fsaio_req *r = evs[i].req;
		cr_assert_eq(evs[i].res, (int64_t)r->len);
		t_check_pattern(r->buf, r->len, (uint64_t)r->offset, 181);
		bytes += (uint64_t)evs[i].res;
	}

	struct fsaio_stats st = t_stats(ctx);
	cr_assert_eq(st.requests, N);
	cr_assert_eq(st.completed_inline + st.queued, N, "inline %llu + queued %llu != %d",
		     (unsigned long long)st.completed_inline, (unsigned long long)st.queued, N);
	cr_assert_leq(st.partial_inline, st.queued);
	cr_assert_eq(st.bytes_inline + st.bytes_worker, bytes);
	cr_assert_geq(st.retries + st.pool_collected, st.queued,
		      "every queued request made a blocking call or was collected");
	cr_assert_leq(st.probe_cold, st.probe_calls);
	cr_assert_eq(st.pool_queue_len, 0);
	cr_assert_eq(st.cancelled, 0);
	t_ctx_destroy(ctx);
}

Test(stats, probe_counts)
{
	int fd = t_hotprefix_file(2 * MiB, 182, 256 * KiB);
	fsaio_ctx_t *ctx = t_pool_ctx(NULL);
	static uint8_t buf[256 * 1024];
	struct fsaio_req req;
	struct fsaio_event ev;

	/* A large hot read: probed, found cached. */
	fsaio_prep_pread(&req, fd, buf, sizeof(buf), 0);
	t_submit1(ctx, &req);
	t_reap_all(ctx, 1, &ev, T_EVENT_TIMEOUT_MS);
	struct fsaio_stats st = t_stats(ctx);
	cr_assert_eq(st.probe_calls, 1);
	cr_assert_eq(st.probe_cold, 0);
	cr_assert_eq(st.completed_inline, 1);

	/* A large cold read: probed, sent straight to the pool. */
	fsaio_prep_pread(&req, fd, buf, sizeof(buf), 1 * MiB);
	t_submit1(ctx, &req);
	t_reap_all(ctx, 1, &ev, T_EVENT_TIMEOUT_MS);
	cr_assert_eq(ev.res, (int64_t)sizeof(buf));
	st = t_stats(ctx);
	cr_assert_eq(st.probe_calls, 2);
	cr_assert_eq(st.probe_cold, 1);
	cr_assert_eq(st.queued, 1);
	cr_assert_eq(st.bytes_inline, sizeof(buf));
	cr_assert_eq(st.bytes_worker, sizeof(buf));
	t_ctx_destroy(ctx);
}

/* CPU time of the whole process, user and system. */
static double t_cpu_seconds(void)
{
	struct rusage ru;

	cr_assert_eq(getrusage(RUSAGE_SELF, &ru), 0);
	return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
	       (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

/* A 4 KiB O_DSYNC write to a new file from b's page, which blocks the
 * worker that runs it until b is released: the file. */
static int prep_blocked_write(struct t_blocker *b, struct fsaio_req *r)
{
	int fd;

	t_blocker_init(b);
	cr_assert_eq(b->len, 4096, "the suite assumes 4 KiB pages");
	fd = t_tmpfile(0, 0);
	fsaio_prep_pwrite(r, fd, b->page, b->len, 0);
	r->rw_flags = RWF_DSYNC;
	return fd;
}

/* Up to 8 blocked writes (prep_blocked_write) and their files. */
struct blocked {
	struct t_blocker blk[8];
	struct fsaio_req reqs[8], *rp[8];
	int fds[8];
	unsigned n;
};

/* Submit n blocked writes as one batch; wait until the first held of them
 * have faulted, each holding a worker. */
static void blocked_submit(fsaio_ctx_t *ctx, struct blocked *b, unsigned n, unsigned held)
{
	cr_assert_leq(n, 8);
	b->n = n;
	for (unsigned i = 0; i < n; i++) {
		b->fds[i] = prep_blocked_write(&b->blk[i], &b->reqs[i]);
		b->rp[i] = &b->reqs[i];
	}
	t_submit(ctx, b->rp, n);
	for (unsigned i = 0; i < held; i++)
		t_blocker_wait_fault(&b->blk[i], T_EVENT_TIMEOUT_MS);
}

/* Reap the released writes of b: each wrote its 4 KiB, the pattern of seed. */
static void blocked_reap(fsaio_ctx_t *ctx, struct blocked *b, unsigned seed)
{
	struct fsaio_event evs[8];

	t_reap_all(ctx, b->n, evs, T_EVENT_TIMEOUT_MS);
	t_match_events(evs, b->n, b->rp, b->n);
	for (unsigned i = 0; i < b->n; i++) {
		cr_assert_eq(t_event_of(evs, b->n, &b->reqs[i])->res, 4096);
		t_check_file(b->fds[i], 0, 4096, seed);
		t_blocker_fini(&b->blk[i]);
		close(b->fds[i]);
	}
}

/*
 * Hold k workers with k blockers, one write each; one more request must
 * queue rather than start a thread beyond the limit.
 */
static void check_worker_limit(const struct fsaio_params *p, unsigned limit)
{
	fsaio_ctx_t *ctx = t_pool_ctx(p);
	struct blocked b;
	uint8_t content[4096];
	cr_assert_lt(limit, 8);
	unsigned n = limit + 1;

	t_fill_pattern(content, sizeof(content), 0, 183);
	blocked_submit(ctx, &b, n, limit);
	struct fsaio_stats st = t_stats(ctx);
	cr_assert_eq(st.pool_threads, limit, "%llu threads, limit %u",
		     (unsigned long long)st.pool_threads, limit);
	cr_assert_eq(st.pool_queue_len, 1);

	/* Free one worker: it takes the queued write, which blocks in turn. */
	t_blocker_release(&b.blk[0], content);
	t_blocker_wait_fault(&b.blk[limit], T_EVENT_TIMEOUT_MS);
	st = t_stats(ctx);
	cr_assert_eq(st.pool_threads, limit);
	cr_assert_eq(st.pool_queue_len, 0);
	for (unsigned i = 1; i < n; i++)
		t_blocker_release(&b.blk[i], content);
	blocked_reap(ctx, &b, 183);
	/* Idle now: none beyond the limit (they may begin to retire). */
	cr_assert_leq(t_stats(ctx).pool_threads, limit);
	t_ctx_destroy(ctx);
}

/* Hold k workers with k blockers, then let their writes finish. */
static void run_blocked_writes(fsaio_ctx_t *ctx, unsigned k, unsigned seed)
{
	struct blocked b;
	uint8_t content[4096];

	cr_assert_leq(k, 4);
	t_fill_pattern(content, sizeof(content), 0, seed);
	blocked_submit(ctx, &b, k, k);
	cr_assert_eq(t_stats(ctx).pool_threads, k, "one worker per blocked write");
	for (unsigned i = 0; i < k; i++)
		t_blocker_release(&b.blk[i], content);
	blocked_reap(ctx, &b, seed);
}

/* Workers that stay idle retire, down to one, and the pool starts new ones
 * in their places when blocking work comes again. */
Test(stats, idle_workers_retire_down_to_one)
{
	struct fsaio_params p = { .workers = 4 };
	fsaio_ctx_t *ctx = t_pool_ctx(&p);
	uint64_t threads = 0;

	run_blocked_writes(ctx, 3, 184);
	/* A worker retires after a second without work: wait for it, within
	 * the event timeout. */
	for (int ms = 0; ms < T_EVENT_TIMEOUT_MS; ms += 20) {
		threads = t_stats(ctx).pool_threads;
		if (threads == 1)
			break;
		usleep(20 * 1000);
	}
	cr_assert_eq(threads, 1, "%llu workers left", (unsigned long long)threads);
	/* The one left waits without burning CPU once its period is over. */
	double cpu = t_cpu_seconds();
	usleep(1500 * 1000);
	cpu = t_cpu_seconds() - cpu;
	cr_assert_lt(cpu, 0.5, "%.2f s of CPU while the pool was idle", cpu);
	run_blocked_writes(ctx, 4, 185);
	t_ctx_destroy(ctx);
}

Test(stats, worker_limit_from_params)
{
	struct fsaio_params p = { .workers = 3 };
	check_worker_limit(&p, 3);
}

Test(stats, worker_limit_from_environment)
{
	/* Criterion runs each test in its own process: the variable does not
	 * leak into other tests. */
	cr_assert_eq(setenv("FSAIO_WORKERS", "2", 1), 0);
	check_worker_limit(NULL, 2);
	/* An explicit parameter wins over the environment. */
	struct fsaio_params p = { .workers = 4 };
	check_worker_limit(&p, 4);
}
