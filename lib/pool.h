/* SPDX-License-Identifier: MIT */
/* The worker pool (pool.c). */
#ifndef FSAIO_POOL_H
#define FSAIO_POOL_H

#include <pthread.h>
#include <stdbool.h>

#include "req.h"

/* A side job for the pool: work that belongs to no request (prefetching).
 * Embedded in its owner, which keeps it alive until pool_stop; next and
 * queued are under pool.lock. Workers run jobs before requests. */
struct fsaio__job {
	struct fsaio__job *next;
	void (*fn)(struct fsaio_ctx *ctx, struct fsaio__job *job);
	bool queued;
};

/* One worker thread's place; [max] of them, reused once a worker retires. */
struct fsaio__worker {
	struct fsaio_ctx *ctx;  /* pool.lock, set before the thread starts */
	pthread_t tid;          /* pool.lock; valid while live */
	bool live;              /* pool.lock: a joinable thread runs here */
};

struct fsaio__pool {
	pthread_mutex_t lock;
	struct fsaio__job *jobs, *jobs_tail; /* lock: FIFO of side jobs */
	pthread_cond_t work;    /* idle workers wait here (monotonic clock) */
	struct fsaio_req *head; /* lock: FIFO through req->next_/prev_ */
	struct fsaio_req *tail; /* lock */
	unsigned queued;        /* lock */
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

int fsaio__pool_init(struct fsaio__pool *p, unsigned max);
int fsaio__pool_queue(struct fsaio_ctx *ctx, struct fsaio_req *req);
/* The same for a read whose disk reads are started already: a worker only
 * waits for them, so no more than pool.waiters are woken or started for
 * such requests; the FIFO order is kept, the oldest is finished first. */
int fsaio__pool_queue_started(struct fsaio_ctx *ctx, struct fsaio_req *req);
/* Queue a side job unless it is queued already; dropped by pool_stop. */
void fsaio__pool_job(struct fsaio_ctx *ctx, struct fsaio__job *job);
int fsaio__pool_cancel(struct fsaio_ctx *ctx, struct fsaio_req *req);
void fsaio__pool_stop(struct fsaio_ctx *ctx);
void fsaio__pool_fini(struct fsaio__pool *p);
void fsaio__pool_forget(struct fsaio__pool *p);     /* forked child: free only */
unsigned fsaio__pool_snapshot(struct fsaio_ctx *ctx, unsigned *threads);
/* Requests the pool runs or holds now, when no worker is idle; else 0. */
unsigned fsaio__pool_busy(struct fsaio_ctx *ctx);

#endif /* FSAIO_POOL_H */
