/* SPDX-License-Identifier: MIT */
/*
 * The worker pool (pool.c): it runs requests it is given with ops->run on a
 * worker and reports each exactly once through ops->done, both called with
 * the private arg of init. It knows nothing else of its owner.
 */
#ifndef FSAIO_POOL_H
#define FSAIO_POOL_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "req.h"

/* A side job for the pool: work that belongs to no request (prefetching).
 * Embedded in its owner, which keeps it alive until pool_stop; next and
 * queued are under pool.lock. Workers run jobs before requests. */
struct fsaio__job {
	struct fsaio__job *next;
	void (*fn)(void *arg, struct fsaio__job *job); /* arg: the pool's */
	bool queued;
};

/* What a pool is given: the work it runs and where it reports. */
struct fsaio__pool_ops {
	/* Carry r to its end with blocking calls on a worker: its res. */
	int64_t (*run)(void *arg, struct fsaio_req *r);
	/* r is finished with res (-ECANCELED: cancelled or stopped unrun). */
	void (*done)(void *arg, struct fsaio_req *r, int64_t res);
	/* Start the disk reads of r[0..n), copies of queued requests that
	 * may end meanwhile, on the starter thread: started[i], whether r[i]'s
	 * were. */
	void (*start)(void *arg, const struct fsaio_req *r, unsigned n, bool *started);
	/* Finish without waiting those of started reads r[0..n) whose pages
	 * have landed: res[i] set for each one finished (its end), left at
	 * FSAIO__POOL_LATER for the others (some progress may be recorded in
	 * them). Optional. */
	void (*collect)(void *arg, struct fsaio_req *const *r, unsigned n, int64_t *res);
};

/* collect's answer for a request that must still be waited for. */
#define FSAIO__POOL_LATER INT64_MIN

/* The most reads the starter starts at once. */
#define FSAIO__POOL_START_MAX 32

/* One worker thread's place; [max] of them, reused once a worker retires. */
struct fsaio__worker {
	struct fsaio__pool *pool; /* pool.lock, set before the thread starts */
	pthread_t tid;          /* pool.lock; valid while live */
	bool live;              /* pool.lock: a joinable thread runs here */
};

struct fsaio__pool {
	const struct fsaio__pool_ops *ops; /* immutable after init */
	void *arg;              /* immutable after init: ops' and jobs' first argument */
	pthread_mutex_t lock;
	struct fsaio__job *jobs, *jobs_tail; /* lock: FIFO of side jobs */
	pthread_cond_t work;    /* idle workers wait here (monotonic clock) */
	struct fsaio_req *head; /* lock: FIFO through req->next_/prev_ */
	struct fsaio_req *tail; /* lock */
	unsigned queued;        /* lock: in the FIFO or the starter's list */
	/* Reads whose disk reads the starter thread is to start, then put in
	 * the FIFO as started. */
	struct fsaio_req *to_start, *to_start_tail; /* lock: through next_/prev_ */
	pthread_cond_t start_work; /* the starter waits here when its list is empty */
	pthread_t starter;      /* lock; valid while starter_live */
	bool starter_live;      /* lock: the starter thread runs */
	bool starter_idle;      /* lock: it waits on start_work */
	/* lock: queued, their reads being started (a slot is NULL once
	 * cancel or stop took its request back) */
	struct fsaio_req *in_start[FSAIO__POOL_START_MAX];
	unsigned n_in_start;    /* lock: slots of in_start in use */
	uint64_t accepted;      /* lock: requests ever queued (stats' queued) */
	unsigned nthreads;      /* lock: threads live (started, not retired) */
	unsigned idle;          /* lock: threads waiting on work */
	unsigned signalled;     /* lock: wake-ups sent and not yet taken */
	unsigned running;       /* lock: requests being run by a worker */
	unsigned starting;      /* lock: threads started, not yet at the FIFO */
	unsigned waiting;       /* lock: started reads being run by a worker */
	unsigned waiters;       /* immutable after create: cap on waking for those */
	unsigned max;           /* immutable after create */
	bool stopping;          /* lock */
	struct fsaio__worker *workers; /* [max] */
};

int fsaio__pool_init(struct fsaio__pool *p, unsigned max,
		     const struct fsaio__pool_ops *ops, void *arg);
int fsaio__pool_queue(struct fsaio__pool *p, struct fsaio_req *req);
/* The same for a read whose disk reads are started already (start false)
 * or are to be started by the pool's starter thread (start true, never by
 * the caller: starting may wait for the device's queue): a worker only
 * waits for them, so no more than pool.waiters are woken or started for
 * such requests; the FIFO order is kept, the oldest is finished first. */
int fsaio__pool_queue_started(struct fsaio__pool *p, struct fsaio_req *req, bool start);
/* Queue a side job unless it is queued already; dropped by pool_stop. */
void fsaio__pool_job(struct fsaio__pool *p, struct fsaio__job *job);
int fsaio__pool_cancel(struct fsaio__pool *p, struct fsaio_req *req);
void fsaio__pool_stop(struct fsaio__pool *p);
void fsaio__pool_fini(struct fsaio__pool *p);
void fsaio__pool_forget(struct fsaio__pool *p);     /* forked child: free only */
/* Its queue's length now; its live threads and the requests it ever took. */
unsigned fsaio__pool_snapshot(struct fsaio__pool *p, unsigned *threads, uint64_t *accepted);
/* Requests the pool runs or holds now, when no worker is idle; else 0. */
unsigned fsaio__pool_busy(struct fsaio__pool *p);

#endif /* FSAIO_POOL_H */
