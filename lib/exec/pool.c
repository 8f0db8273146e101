/* SPDX-License-Identifier: MIT */
/*
 * DESIGN: the worker pool that carries blocked requests to completion.
 *
 * Owns: a FIFO of requests linked through req->next_/prev_ (the work item
 * lives in the request: nothing is allocated per request), and up to
 * pool.max joinable threads, started on demand when work arrives and no
 * worker is idle. A worker idle for IDLE_RETIRE_NS retires, down to one,
 * so the pool's size follows the blocking work it has had lately, not its
 * limit: it detaches itself and frees its place under pool.lock, and
 * touches nothing of the pool after it drops the lock (destroy joins only
 * the live). One mutex and one condition variable (monotonic clock); a
 * waiter is signalled only when one is idle and not already woken.
 * Workers block every signal (the caller's handlers must not run on them)
 * and are named fsaio-wN. Side jobs (struct fsaio__job: readahead.c's
 * prefetches) wait in a second FIFO and are run before requests; they are
 * hints, so stop drops them.
 *
 * Started reads (fsaio__pool_queue_started: their disk reads are under way,
 * exec_ STARTED while the pool holds them) share the FIFO but not its wake
 * rule. Their reads are started by the pool's starter thread (fsaio-start,
 * made at the first such read, joined at stop), never by the submitter:
 * readahead(2) allocates pages and waits while the device's queue is full.
 * The starter takes its list (exec_ TO_START) in order, up to
 * FSAIO__POOL_START_MAX at a time, starts their reads with one ops->start,
 * and puts them in the FIFO as started. While it starts them
 * (pool.in_start) they stay queued: cancel and stop end one at once, and
 * the starter, which gave start copies, drops it. In the
 * FIFO, the rule: a worker is woken or started for one only while fewer than
 * pool.waiters (one per CPU, at most WAITERS_CAP) run started reads or are
 * on their way to the FIFO; the others are taken in order by those, each
 * sleeping in the page cache's wait for the oldest while the rest arrive.
 * Other requests still get a worker each, so a blocked pipe read or sync
 * never holds up the started reads.
 *
 * Invariants, under pool.lock: a request is in the FIFO iff its state is
 * QUEUED; a worker moves it to RUNNING when it takes it, after which cancel
 * answers -EBUSY. Stop (destroy) cancels every QUEUED request through the
 * normal completion path, then joins the workers once they finish what
 * they run.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "list.h"
#include "pool.h"
#include "req.h"
#include "thread.h"

#define WORKER_STACK (1u << 20)
/* How long a worker waits for work before it retires (glibc's POSIX AIO
 * threads wait one second too). */
#define IDLE_RETIRE_NS 1000000000LL
/* exec_ of a queued or running request: its reads were started up front;
 * or it waits in the starter's list for them to be. */
#define STARTED 1u
#define TO_START 2u
/* Workers woken or started for started reads, at most: they sleep in the
 * page cache's wait for the oldest while the rest arrive, and wake only to
 * copy, so no more are woken than CPUs can copy at once. */
#define WAITERS_CAP 4u

static unsigned waiters(unsigned max)
{
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	unsigned n = cpus < 1 ? 1 : cpus > WAITERS_CAP ? WAITERS_CAP : (unsigned)cpus;

	return n < max ? n : max;
}

int fsaio__pool_init(struct fsaio__pool *p, unsigned max,
		     const struct fsaio__pool_ops *ops, void *arg)
{
	pthread_condattr_t ca;

	memset(p, 0, sizeof(*p));
	p->ops = ops;
	p->arg = arg;
	p->workers = calloc(max, sizeof(*p->workers));
	if (!p->workers)
		return -ENOMEM;
	p->max = max;
	p->waiters = waiters(max);
	pthread_mutex_init(&p->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&p->work, &ca);
	pthread_cond_init(&p->start_work, &ca);
	pthread_condattr_destroy(&ca);
	return 0;
}

void fsaio__pool_forget(struct fsaio__pool *p)
{
	/* A forked child: the threads are the parent's, the lock may be held. */
	free(p->workers);
}

void fsaio__pool_fini(struct fsaio__pool *p)
{
	pthread_cond_destroy(&p->work);
	pthread_cond_destroy(&p->start_work);
	pthread_mutex_destroy(&p->lock);
	free(p->workers);
}

static void fifo_unlink(struct fsaio__pool *p, struct fsaio_req *r)
{
	FSAIO__LIST_UNLINK(p->head, p->tail, r, next_, prev_);
	p->queued--;
}

/* Where queued r is in the starter's hands: its slot, or -1. */
static int in_start_slot(const struct fsaio__pool *p, const struct fsaio_req *r)
{
	for (unsigned i = 0; i < p->n_in_start; i++)
		if (p->in_start[i] == r)
			return (int)i;
	return -1;
}

/* Queued r is this pool's, in the place it says: not a copy of one. */
static bool queued_here(struct fsaio__pool *p, const struct fsaio_req *r)
{
	if (in_start_slot(p, r) >= 0)
		return true;
	if (r->exec_ == TO_START)
		return FSAIO__LIST_HAS(p->to_start, r, next_, prev_);
	return FSAIO__LIST_HAS(p->head, r, next_, prev_);
}

/* Take queued r back from where it waits (the FIFO, the starter's list, or
 * the starter's hands), under lock. */
static void take(struct fsaio__pool *p, struct fsaio_req *r)
{
	int slot = in_start_slot(p, r);

	if (slot >= 0) {
		p->in_start[slot] = NULL;
		p->queued--;
	} else if (r->exec_ == TO_START) {
		FSAIO__LIST_UNLINK(p->to_start, p->to_start_tail, r, next_, prev_);
		p->queued--;
	} else {
		fifo_unlink(p, r);
	}
}

/* Wait for work until the idle period ends: whether to retire. The last
 * worker, its period over, waits on without a deadline. Under lock;
 * whatever woke it, work in the FIFO is taken before any retiring, so no
 * signal is lost on a worker that leaves. */
static bool idle_wait(struct fsaio__pool *p)
{
	struct timespec end = { 0, 0 };
	bool timed = true;
	int ret = 0;

	while (!p->head && !p->jobs && !p->stopping) {
		if (ret == ETIMEDOUT) {
			if (p->nthreads > 1)
				return true;
			timed = false;
		}
		if (timed && !end.tv_sec) {
			clock_gettime(CLOCK_MONOTONIC, &end);
			end.tv_sec += IDLE_RETIRE_NS / 1000000000;
		}
		p->idle++;
		ret = timed ? pthread_cond_timedwait(&p->work, &p->lock, &end)
			    : pthread_cond_wait(&p->work, &p->lock);
		p->idle--;
		if (p->signalled)
			p->signalled--;
	}
	return false;
}

/* The most started reads looked at in one collect. */
#define COLLECT_MAX 64

/* Started reads r[0..n) taken from the FIFO's head go back there, in their
 * order, under lock; at stop they end as stop ends the FIFO's (the lock is
 * dropped around their completions). */
static void put_back(struct fsaio__pool *p, struct fsaio_req **r, unsigned n)
{
	if (p->stopping) {
		pthread_mutex_unlock(&p->lock);
		for (unsigned i = 0; i < n; i++)
			p->ops->done(p->arg, r[i], -ECANCELED);
		pthread_mutex_lock(&p->lock);
		return;
	}
	for (unsigned i = n; i-- > 0;) {
		FSAIO__LIST_PREPEND(p->head, p->tail, r[i], next_, prev_);
		p->queued++;
		fsaio__state_set(r[i], FSAIO__QUEUED);
	}
}

/*
 * After a worker's wait for the oldest started read ends, the started
 * reads queued behind it have often landed too: they are taken from the
 * FIFO's head (in order, RUNNING meanwhile, so cancel answers -EBUSY) and
 * given to ops->collect, which finishes the landed ones in one go; the
 * others go back to the head. Under lock, dropped around collect and the
 * completions.
 */
static void collect_landed(struct fsaio__pool *p)
{
	struct fsaio_req *r[COLLECT_MAX];
	int64_t res[COLLECT_MAX];
	unsigned n = 0, later = 0;

	if (!p->ops->collect)
		return;
	/* One alone is the next worker's to wait for. */
	if (!p->head || !p->head->next_ || p->head->exec_ != STARTED ||
	    p->head->next_->exec_ != STARTED || p->stopping)
		return;
	while (n < COLLECT_MAX && p->head && p->head->exec_ == STARTED) {
		r[n] = p->head;
		fifo_unlink(p, r[n]);
		fsaio__state_set(r[n], FSAIO__RUNNING);
		res[n++] = FSAIO__POOL_LATER;
	}
	p->running += n;
	pthread_mutex_unlock(&p->lock);
	p->ops->collect(p->arg, r, n, res);
	for (unsigned i = 0; i < n; i++) {
		if (res[i] == FSAIO__POOL_LATER)
			r[later++] = r[i];
		else
			p->ops->done(p->arg, r[i], res[i]);
	}
	pthread_mutex_lock(&p->lock);
	p->running -= n;
	put_back(p, r, later);
}

static void *worker(void *arg)
{
	struct fsaio__worker *w = arg;
	struct fsaio__pool *p = w->pool;
	struct fsaio_req *r;

	pthread_mutex_lock(&p->lock);
	p->starting--;
	for (;;) {
		bool started;

		if (idle_wait(p)) {
			p->nthreads--;
			w->live = false;
			pthread_detach(pthread_self());
			break;
		}
		if (p->jobs && !p->stopping) {
			/* Side jobs first: a prefetch is worth most before the
			 * reads it serves are run. */
			struct fsaio__job *j = p->jobs;

			p->jobs = j->next;
			if (!p->jobs)
				p->jobs_tail = NULL;
			j->next = NULL;
			j->queued = false;
			pthread_mutex_unlock(&p->lock);
			j->fn(p->arg, j);
			pthread_mutex_lock(&p->lock);
			continue;
		}
		if (!p->head)
			break;
		r = p->head;
		fifo_unlink(p, r);
		fsaio__state_set(r, FSAIO__RUNNING);
		started = r->exec_ == STARTED;
		p->running++;
		p->waiting += started;
		pthread_mutex_unlock(&p->lock);
		p->ops->done(p->arg, r, p->ops->run(p->arg, r));
		pthread_mutex_lock(&p->lock);
		p->running--;
		/* Still counted as waiting while it collects: it takes the
		 * next started read after, and no other worker is needed. */
		if (started)
			collect_landed(p);
		p->waiting -= started;
	}
	pthread_mutex_unlock(&p->lock);
	return NULL;
}

/* Called with pool.lock held. A failure to start a thread is not fatal while
 * another worker exists: the request waits for it. */
static int spawn(struct fsaio__pool *p)
{
	struct fsaio__worker *w = NULL;
	char name[16];
	int ret;

	for (unsigned i = 0; i < p->max && !w; i++)
		if (!p->workers[i].live)
			w = &p->workers[i];
	if (!w)
		return -EAGAIN;
	w->pool = p;
	ret = fsaio__thread_start(&w->tid, WORKER_STACK, worker, w);
	if (ret)
		return -ret;
	snprintf(name, sizeof(name), "fsaio-w%u", (unsigned)(w - p->workers));
	pthread_setname_np(w->tid, name);
	w->live = true;
	p->nthreads++;
	p->starting++;
	return 0;
}

/* Put r in the FIFO and wake or start a worker for it, under lock: 0, or
 * -errno when no worker exists and none can be started (r is taken out
 * again, INLINE: its caller's). */
static int enqueue(struct fsaio__pool *p, struct fsaio_req *r, bool started)
{
	int err = 0;

	r->exec_ = started ? STARTED : 0;
	FSAIO__LIST_APPEND(p->head, p->tail, r, next_, prev_);
	p->queued++;
	fsaio__state_set(r, FSAIO__QUEUED);
	/* A started read needs no worker of its own while enough are on their
	 * way to the FIFO: one running a started read takes the next. The
	 * first request always gets a thread. */
	if (started && p->nthreads && p->waiting + p->signalled + p->starting >= p->waiters) {
		/* enough on their way */
	} else if (p->idle > p->signalled) {
		p->signalled++;
		pthread_cond_signal(&p->work);
	} else if (p->nthreads < p->max) {
		err = spawn(p);
		if (err && p->nthreads)
			err = 0;
		if (err) {
			fifo_unlink(p, r);
			fsaio__state_set(r, FSAIO__INLINE);
		}
	}
	return err;
}

/* Hand a request to the pool: 0. It cannot fail once a worker exists; when
 * none can be started at all, -errno and r is the caller's still. */
static int queue(struct fsaio__pool *p, struct fsaio_req *r, bool started)
{
	int err;

	pthread_mutex_lock(&p->lock);
	err = enqueue(p, r, started);
	if (!err)
		p->accepted++;
	pthread_mutex_unlock(&p->lock);
	return err;
}

/* The starter thread: starts the reads of its list in order, as many at
 * once as have come, each put in the FIFO once its reads are under way.
 * When no worker can be had at all, it carries a request itself. */
static void *starter(void *arg)
{
	struct fsaio__pool *p = arg;
	struct fsaio_req copy[FSAIO__POOL_START_MAX];
	bool started[FSAIO__POOL_START_MAX];

	pthread_mutex_lock(&p->lock);
	while (!p->stopping) {
		unsigned n = 0;

		if (!p->to_start) {
			p->starter_idle = true;
			pthread_cond_wait(&p->start_work, &p->lock);
			p->starter_idle = false;
			continue;
		}
		/* Still queued (counted, cancellable) while their reads
		 * start; start is given copies, as cancel may end one
		 * meanwhile. */
		while (p->to_start && n < FSAIO__POOL_START_MAX) {
			struct fsaio_req *r = p->to_start;

			FSAIO__LIST_UNLINK(p->to_start, p->to_start_tail, r, next_, prev_);
			p->in_start[n] = r;
			copy[n++] = *r;
		}
		p->n_in_start = n;
		pthread_mutex_unlock(&p->lock);
		p->ops->start(p->arg, copy, n, started);
		pthread_mutex_lock(&p->lock);
		for (unsigned i = 0; i < n; i++) {
			struct fsaio_req *r = p->in_start[i];

			if (!r)
				continue;       /* cancelled or stopped meanwhile */
			p->in_start[i] = NULL;
			p->queued--;
			if (enqueue(p, r, started[i])) {
				pthread_mutex_unlock(&p->lock);
				p->ops->done(p->arg, r, p->ops->run(p->arg, r));
				pthread_mutex_lock(&p->lock);
			}
		}
		p->n_in_start = 0;
	}
	pthread_mutex_unlock(&p->lock);
	return NULL;
}

/* Put r in the starter's list, starting the starter if need be: 0, or
 * -EAGAIN when there is none (r is still the caller's). */
static int queue_to_start(struct fsaio__pool *p, struct fsaio_req *r)
{
	pthread_mutex_lock(&p->lock);
	if (!p->starter_live && !p->stopping &&
	    fsaio__thread_start(&p->starter, WORKER_STACK, starter, p) == 0) {
		pthread_setname_np(p->starter, "fsaio-start");
		p->starter_live = true;
	}
	if (!p->starter_live || p->stopping) {
		pthread_mutex_unlock(&p->lock);
		return -EAGAIN;
	}
	r->exec_ = TO_START;
	FSAIO__LIST_APPEND(p->to_start, p->to_start_tail, r, next_, prev_);
	p->queued++;
	p->accepted++;
	fsaio__state_set(r, FSAIO__QUEUED);
	if (p->starter_idle) {
		p->starter_idle = false;
		pthread_cond_signal(&p->start_work);
	}
	pthread_mutex_unlock(&p->lock);
	return 0;
}

int fsaio__pool_queue(struct fsaio__pool *p, struct fsaio_req *r)
{
	return queue(p, r, false);
}

int fsaio__pool_queue_started(struct fsaio__pool *p, struct fsaio_req *r, bool start)
{
	bool started = true;

	if (start) {
		if (!queue_to_start(p, r))
			return 0;
		/* No starter thread to be had: its reads are started here. */
		p->ops->start(p->arg, r, 1, &started);
	}
	return queue(p, r, started);
}

void fsaio__pool_job(struct fsaio__pool *p, struct fsaio__job *j)
{

	pthread_mutex_lock(&p->lock);
	if (!j->queued && !p->stopping) {
		j->queued = true;
		j->next = NULL;
		if (p->jobs_tail)
			p->jobs_tail->next = j;
		else
			p->jobs = j;
		p->jobs_tail = j;
		/* Only an idle worker is woken, or one started: a busy pool
		 * runs the job when a worker comes free. */
		if (p->idle > p->signalled) {
			p->signalled++;
			pthread_cond_signal(&p->work);
		} else if (p->nthreads < p->max) {
			(void)spawn(p);
		}
	}
	pthread_mutex_unlock(&p->lock);
}

int fsaio__pool_cancel(struct fsaio__pool *p, struct fsaio_req *r)
{
	int ret = -EBUSY;

	pthread_mutex_lock(&p->lock);
	if (fsaio__state_get(r) == FSAIO__QUEUED && !queued_here(p, r)) {
		ret = -EINVAL;
	} else if (fsaio__state_get(r) == FSAIO__QUEUED) {
		take(p, r);
		fsaio__state_set(r, FSAIO__RUNNING);
		ret = 0;
	}
	pthread_mutex_unlock(&p->lock);
	if (!ret)
		p->ops->done(p->arg, r, -ECANCELED);
	return ret;
}

void fsaio__pool_stop(struct fsaio__pool *p)
{
	struct fsaio_req *list, *r;
	bool starter_live;

	pthread_mutex_lock(&p->lock);
	p->stopping = true;
	/* Side jobs are hints: drop them. */
	while (p->jobs) {
		struct fsaio__job *j = p->jobs;

		p->jobs = j->next;
		j->next = NULL;
		j->queued = false;
	}
	p->jobs_tail = NULL;
	/* The FIFO, then the ones being started and the starter's list. */
	for (unsigned i = 0; i < p->n_in_start; i++) {
		if (p->in_start[i])
			FSAIO__LIST_APPEND(p->head, p->tail, p->in_start[i], next_, prev_);
		p->in_start[i] = NULL;
	}
	if (p->to_start) {
		if (p->tail)
			p->tail->next_ = p->to_start;
		else
			p->head = p->to_start;
		p->to_start->prev_ = p->tail;
		p->tail = p->to_start_tail;
	}
	list = p->head;
	for (r = list; r; r = r->next_)
		fsaio__state_set(r, FSAIO__RUNNING);
	p->head = p->tail = NULL;
	p->to_start = p->to_start_tail = NULL;
	p->queued = 0;
	pthread_cond_broadcast(&p->work);
	pthread_cond_broadcast(&p->start_work);
	starter_live = p->starter_live;
	p->starter_live = false;
	pthread_mutex_unlock(&p->lock);

	while ((r = list)) {
		list = r->next_;
		r->next_ = r->prev_ = NULL;
		p->ops->done(p->arg, r, -ECANCELED);
	}
	/* The starter leaves once the start it may be in returns. */
	if (starter_live)
		pthread_join(p->starter, NULL);
	/* Join the live workers; they leave once they finish what they run
	 * (with stopping set, none retires). A pass that joined one looks
	 * again, for a worker started meanwhile (a late request gets one). */
	for (bool again = true; again;) {
		again = false;
		for (unsigned i = 0; i < p->max; i++) {
			struct fsaio__worker *w = &p->workers[i];
			pthread_t tid;
			bool live;

			pthread_mutex_lock(&p->lock);
			live = w->live;
			tid = w->tid;
			w->live = false;
			pthread_mutex_unlock(&p->lock);
			if (live) {
				pthread_join(tid, NULL);
				again = true;
			}
		}
	}
}

unsigned fsaio__pool_busy(struct fsaio__pool *p)
{
	unsigned n;

	pthread_mutex_lock(&p->lock);
	n = p->idle > p->signalled ? 0 : p->running + p->queued;
	pthread_mutex_unlock(&p->lock);
	return n;
}

unsigned fsaio__pool_snapshot(struct fsaio__pool *p, unsigned *threads, uint64_t *accepted)
{
	unsigned q;

	pthread_mutex_lock(&p->lock);
	q = p->queued;
	*threads = p->nthreads;
	*accepted = p->accepted;
	pthread_mutex_unlock(&p->lock);
	return q;
}
