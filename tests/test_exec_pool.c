/* SPDX-License-Identifier: MIT */
/*
 * The worker pool alone (lib/exec/pool.c compiled into this test, no context):
 * requests given from several threads are each run and reported exactly
 * once with their own result; a queued request cancels, a running one does
 * not; stop cancels what waits and joins the workers once they finish what
 * they run; side jobs run with the pool's private argument; reads to be
 * started are started by the starter thread, in order, never by the caller.
 */
#ifdef T_NO_CRITERION
#include "t_runner.h"
#else
#include <criterion/criterion.h>
#endif
#include <pthread.h>
#include <stdatomic.h>
#include <time.h>
#include <unistd.h>

#include "pool.h"

#define NREQ 2000u
#define NTHREADS 4u

/* What the ops record; workers write, the test's thread asserts. */
struct sink {
	struct fsaio_req *reqs;
	_Atomic unsigned *dones;        /* per request: done calls */
	int64_t *res;                   /* per request: done's res, before dones */
	_Atomic unsigned total;         /* done calls in all */
	_Atomic unsigned running;       /* run calls entered */
	_Atomic bool gate_open;         /* run waits for it when gated */
	bool gated;                     /* immutable once requests flow */
};

/* A request's expected result: a function of its offset. */
static int64_t expect(const struct fsaio_req *r)
{
	return r->offset * 3 + 1;
}

static int64_t run(void *arg, struct fsaio_req *r)
{
	struct sink *s = arg;

	atomic_fetch_add(&s->running, 1);
	while (s->gated && !atomic_load(&s->gate_open))
		usleep(1000);
	return expect(r);
}

static void done(void *arg, struct fsaio_req *r, int64_t res)
{
	struct sink *s = arg;
	size_t i = (size_t)(r - s->reqs);

	s->res[i] = res;
	atomic_fetch_add(&s->dones[i], 1);
	atomic_fetch_add(&s->total, 1);
}

static const struct fsaio__pool_ops ops = { .run = run, .done = done };

static void sink_init(struct sink *s, unsigned n, bool gated)
{
	memset(s, 0, sizeof(*s));
	s->reqs = calloc(n, sizeof(*s->reqs));
	s->dones = calloc(n, sizeof(*s->dones));
	s->res = calloc(n, sizeof(*s->res));
	cr_assert(s->reqs && s->dones && s->res);
	for (unsigned i = 0; i < n; i++)
		s->reqs[i].offset = (int64_t)i;
	s->gated = gated;
}

static void sink_fini(struct sink *s)
{
	free(s->reqs);
	free((void *)s->dones);
	free(s->res);
}

/* Wait up to 30 s for cond over s; whether it held. */
static bool wait_for(struct sink *s, bool (*cond)(struct sink *s, unsigned n), unsigned n)
{
	for (unsigned i = 0; i < 30000; i++) {
		if (cond(s, n))
			return true;
		usleep(1000);
	}
	return cond(s, n);
}

static bool total_is(struct sink *s, unsigned n)
{
	return atomic_load(&s->total) >= n;
}

static bool running_is(struct sink *s, unsigned n)
{
	return atomic_load(&s->running) >= n;
}

struct submitter {
	struct fsaio__pool *pool;
	struct sink *sink;
	unsigned first, n;
	_Atomic int err;
};

static void *submit_range(void *arg)
{
	struct submitter *t = arg;

	for (unsigned i = t->first; i < t->first + t->n; i++) {
		int err = fsaio__pool_queue(t->pool, &t->sink->reqs[i]);

		if (err)
			atomic_store(&t->err, err);
	}
	return NULL;
}

Test(exec_pool, many_submitters_each_done_once)
{
	struct fsaio__pool pool;
	struct submitter t[NTHREADS];
	pthread_t tid[NTHREADS];
	struct sink s;
	unsigned threads, per = NREQ / NTHREADS;
	uint64_t accepted;

	sink_init(&s, NREQ, false);
	cr_assert_eq(fsaio__pool_init(&pool, 4, &ops, &s), 0);
	for (unsigned i = 0; i < NTHREADS; i++) {
		t[i] = (struct submitter){ .pool = &pool, .sink = &s, .first = i * per, .n = per };
		cr_assert_eq(pthread_create(&tid[i], NULL, submit_range, &t[i]), 0);
	}
	for (unsigned i = 0; i < NTHREADS; i++) {
		pthread_join(tid[i], NULL);
		cr_assert_eq(atomic_load(&t[i].err), 0, "queue: %d", atomic_load(&t[i].err));
	}
	cr_assert(wait_for(&s, total_is, NREQ), "%u of %u done", atomic_load(&s.total), NREQ);
	for (unsigned i = 0; i < NREQ; i++) {
		cr_assert_eq(atomic_load(&s.dones[i]), 1, "request %u: %u dones", i,
			     atomic_load(&s.dones[i]));
		cr_assert_eq(s.res[i], expect(&s.reqs[i]), "request %u: res %lld", i,
			     (long long)s.res[i]);
		cr_assert_eq(fsaio__state_get(&s.reqs[i]), FSAIO__RUNNING);
	}
	cr_assert_eq(fsaio__pool_snapshot(&pool, &threads, &accepted), 0);
	cr_assert(threads >= 1 && threads <= 4, "%u threads", threads);
	cr_assert_eq(accepted, NREQ);
	fsaio__pool_stop(&pool);
	fsaio__pool_fini(&pool);
	cr_assert_eq(atomic_load(&s.total), NREQ, "a done after the last");
	sink_fini(&s);
}

static void *stopper(void *arg)
{
	fsaio__pool_stop(arg);
	return NULL;
}

Test(exec_pool, cancel_and_stop_with_requests_in_flight)
{
	enum { N = 16, MAX = 2 };
	struct fsaio__pool pool;
	struct sink s;
	pthread_t tid;
	unsigned ran = 0, cancelled = 0;

	sink_init(&s, N, true);
	cr_assert_eq(fsaio__pool_init(&pool, MAX, &ops, &s), 0);
	for (unsigned i = 0; i < N; i++)
		cr_assert_eq(fsaio__pool_queue(&pool, &s.reqs[i]), 0);
	/* MAX requests run, held at the gate; the rest wait in the queue. */
	cr_assert(wait_for(&s, running_is, MAX), "%u running", atomic_load(&s.running));
	usleep(10000);
	cr_assert_eq(atomic_load(&s.running), MAX, "more run than workers");
	cr_assert_eq(fsaio__pool_busy(&pool), N, "busy %u", fsaio__pool_busy(&pool));

	/* The last is queued: it cancels through done; the first runs: busy. */
	cr_assert_eq(fsaio__pool_cancel(&pool, &s.reqs[N - 1]), 0);
	cr_assert_eq(atomic_load(&s.dones[N - 1]), 1);
	cr_assert_eq(s.res[N - 1], -ECANCELED);
	cr_assert_eq(fsaio__pool_cancel(&pool, &s.reqs[0]), -EBUSY);

	/* Stop cancels the queued and then waits for the two that run. */
	cr_assert_eq(pthread_create(&tid, NULL, stopper, &pool), 0);
	cr_assert(wait_for(&s, total_is, N - MAX), "%u done before the gate opens",
		  atomic_load(&s.total));
	usleep(10000);
	cr_assert_eq(atomic_load(&s.total), N - MAX, "a running request was reported early");
	atomic_store(&s.gate_open, true);
	pthread_join(tid, NULL);
	fsaio__pool_fini(&pool);

	for (unsigned i = 0; i < N; i++) {
		cr_assert_eq(atomic_load(&s.dones[i]), 1, "request %u: %u dones", i,
			     atomic_load(&s.dones[i]));
		if (s.res[i] == -ECANCELED)
			cancelled++;
		else if (s.res[i] == expect(&s.reqs[i]))
			ran++;
		else
			cr_assert_fail("request %u: res %lld", i, (long long)s.res[i]);
	}
	cr_assert_eq(ran, MAX);
	cr_assert_eq(cancelled, N - MAX);
	cr_assert_eq(atomic_load(&s.running), MAX, "a cancelled request was run");
	sink_fini(&s);
}

/* A side job: counts its runs and checks it was given the pool's arg. */
struct counted_job {
	struct fsaio__job job;
	void *want;
	_Atomic unsigned runs, wrong_arg;
};

static void job_fn(void *arg, struct fsaio__job *j)
{
	struct counted_job *c = (struct counted_job *)j;

	if (arg != c->want)
		atomic_fetch_add(&c->wrong_arg, 1);
	atomic_fetch_add(&c->runs, 1);
}

Test(exec_pool, side_job_runs_with_the_pools_arg)
{
	struct fsaio__pool pool;
	struct sink s;
	struct counted_job c = { .want = &s };

	sink_init(&s, 1, false);
	c.job.fn = job_fn;
	cr_assert_eq(fsaio__pool_init(&pool, 2, &ops, &s), 0);
	fsaio__pool_job(&pool, &c.job);
	for (unsigned i = 0; i < 30000 && !atomic_load(&c.runs); i++)
		usleep(1000);
	fsaio__pool_stop(&pool);
	fsaio__pool_fini(&pool);
	cr_assert_eq(atomic_load(&c.runs), 1);
	cr_assert_eq(atomic_load(&c.wrong_arg), 0);
	sink_fini(&s);
}

/* Started reads: the starter thread starts them in order, never the
 * thread that queues them; start waits at its own gate, as readahead(2)
 * waits for a full device queue. */
static _Atomic unsigned start_calls, start_reqs, start_most, start_order[64];
static _Atomic bool start_gate_open, start_on_submitter;
static pthread_t submitter_thread;

static void start(void *arg, const struct fsaio_req *r, unsigned n, bool *started)
{
	struct sink *s = arg;

	if (pthread_equal(pthread_self(), submitter_thread))
		atomic_store(&start_on_submitter, true);
	atomic_fetch_add(&start_calls, 1);
	if (n > atomic_load(&start_most))
		atomic_store(&start_most, n);
	/* r[] are the starter's copies: each request is found by its offset. */
	for (unsigned i = 0; i < n; i++) {
		atomic_store(&start_order[r[i].offset], atomic_fetch_add(&start_reqs, 1));
		started[i] = true;
	}
	(void)s;
	while (!atomic_load(&start_gate_open))
		usleep(1000);
}

static const struct fsaio__pool_ops started_ops = { .run = run, .done = done, .start = start };

static bool starts_are(struct sink *s, unsigned n)
{
	(void)s;
	return atomic_load(&start_calls) >= n;
}

Test(exec_pool, started_reads_are_started_by_the_starter_in_order)
{
	enum { N = 64 };
	struct fsaio__pool pool;
	struct sink s;

	submitter_thread = pthread_self();
	sink_init(&s, N, false);
	cr_assert_eq(fsaio__pool_init(&pool, 4, &started_ops, &s), 0);
	/* With the starter held in the first start, every queue call still
	 * returns: nothing is started by the caller. */
	for (unsigned i = 0; i < N; i++)
		cr_assert_eq(fsaio__pool_queue_started(&pool, &s.reqs[i], true), 0);
	cr_assert(wait_for(&s, starts_are, 1));
	usleep(10000);
	cr_assert_eq(atomic_load(&start_calls), 1, "one start at a time, in the starter");
	cr_assert_eq(atomic_load(&s.total), 0);
	atomic_store(&start_gate_open, true);
	cr_assert(wait_for(&s, total_is, N), "%u of %u done", atomic_load(&s.total), N);
	for (unsigned i = 0; i < N; i++) {
		cr_assert_eq(atomic_load(&s.dones[i]), 1, "request %u: %u dones", i,
			     atomic_load(&s.dones[i]));
		cr_assert_eq(s.res[i], expect(&s.reqs[i]));
		cr_assert_eq(atomic_load(&start_order[i]), i, "started out of order");
	}
	cr_assert(!atomic_load(&start_on_submitter));
	/* Those that came while it was held were started together. */
	cr_assert(atomic_load(&start_most) >= 2 && atomic_load(&start_most) <= FSAIO__POOL_START_MAX,
		  "at most %u started in one call", atomic_load(&start_most));
	/* A request whose reads are started already goes straight in. */
	cr_assert_eq(fsaio__pool_queue_started(&pool, &s.reqs[0], false), 0);
	cr_assert(wait_for(&s, total_is, N + 1));
	cr_assert_eq(atomic_load(&start_reqs), N);
	fsaio__pool_stop(&pool);
	fsaio__pool_fini(&pool);
	sink_fini(&s);
}

Test(exec_pool, stop_cancels_reads_waiting_to_be_started)
{
	enum { N = 8 };
	struct fsaio__pool pool;
	struct sink s;
	pthread_t tid;

	submitter_thread = pthread_self();
	sink_init(&s, N, false);
	cr_assert_eq(fsaio__pool_init(&pool, 2, &started_ops, &s), 0);
	for (unsigned i = 0; i < N; i++)
		cr_assert_eq(fsaio__pool_queue_started(&pool, &s.reqs[i], true), 0);
	cr_assert(wait_for(&s, starts_are, 1));
	/* Waiting for its start, or being started: cancelled at once. */
	cr_assert_eq(fsaio__pool_cancel(&pool, &s.reqs[N - 1]), 0);
	cr_assert_eq(s.res[N - 1], -ECANCELED);
	cr_assert_eq(fsaio__pool_cancel(&pool, &s.reqs[0]), 0);
	cr_assert_eq(s.res[0], -ECANCELED);
	cr_assert_eq(fsaio__pool_busy(&pool), N - 2, "busy %u", fsaio__pool_busy(&pool));
	/* Stop cancels the rest at once, and waits for the starter to come
	 * back from the start it is in. */
	cr_assert_eq(pthread_create(&tid, NULL, stopper, &pool), 0);
	cr_assert(wait_for(&s, total_is, N));
	atomic_store(&start_gate_open, true);
	pthread_join(tid, NULL);
	fsaio__pool_fini(&pool);
	for (unsigned i = 0; i < N; i++) {
		cr_assert_eq(atomic_load(&s.dones[i]), 1, "request %u: %u dones", i,
			     atomic_load(&s.dones[i]));
		cr_assert_eq(s.res[i], -ECANCELED, "request %u: res %lld", i, (long long)s.res[i]);
	}
	cr_assert_eq(atomic_load(&start_calls), 1);
	cr_assert_eq(atomic_load(&s.running), 0);
	sink_fini(&s);
}

/* collect: after a worker's started read, the started reads behind it are
 * offered together; here the even ones have "landed". Each request still
 * ends exactly once with its own result, landed or run. */
static _Atomic unsigned collects, collected;

static void collect_even(void *arg, struct fsaio_req *const *r, unsigned n, int64_t *res)
{
	(void)arg;
	atomic_fetch_add(&collects, 1);
	for (unsigned i = 0; i < n; i++) {
		cr_assert_eq(fsaio__state_get(r[i]), FSAIO__RUNNING);
		if (r[i]->offset % 2 == 0) {
			res[i] = expect(r[i]);
			atomic_fetch_add(&collected, 1);
		}
	}
}

static int64_t slow_run(void *arg, struct fsaio_req *r)
{
	usleep(2000);
	return run(arg, r);
}

static const struct fsaio__pool_ops collect_ops = {
	.run = slow_run, .done = done, .collect = collect_even,
};

Test(exec_pool, landed_started_reads_are_collected_together)
{
	enum { N = 200 };
	struct fsaio__pool pool;
	struct sink s;

	sink_init(&s, N, false);
	cr_assert_eq(fsaio__pool_init(&pool, 4, &collect_ops, &s), 0);
	for (unsigned i = 0; i < N; i++)
		cr_assert_eq(fsaio__pool_queue_started(&pool, &s.reqs[i], false), 0);
	cr_assert(wait_for(&s, total_is, N), "%u of %u done", atomic_load(&s.total), N);
	for (unsigned i = 0; i < N; i++) {
		cr_assert_eq(atomic_load(&s.dones[i]), 1, "request %u: %u dones", i,
			     atomic_load(&s.dones[i]));
		cr_assert_eq(s.res[i], expect(&s.reqs[i]));
	}
	cr_assert_gt(atomic_load(&collects), 0, "no collect");
	cr_assert_gt(atomic_load(&collected), 0);
	cr_assert_eq(atomic_load(&s.running) + atomic_load(&collected), N,
		     "%u run, %u collected", atomic_load(&s.running), atomic_load(&collected));
	fsaio__pool_stop(&pool);
	fsaio__pool_fini(&pool);
	sink_fini(&s);
}
