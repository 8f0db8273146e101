/* SPDX-License-Identifier: MIT */
/* The completion queue and completion (cq.c). */
#ifndef FSAIO_CQ_H
#define FSAIO_CQ_H

#include <pthread.h>
#include <stdatomic.h>

#include "counters.h"
#include "req.h"

struct fsaio__cq {
	pthread_mutex_t lock;
	struct fsaio_event *ring; /* lock: [size] */
	unsigned size;          /* immutable: queue_depth, 1 with complete_cb */
	unsigned head, count;   /* lock */
	_Atomic uint32_t seq;   /* futex word: bumped on every post (under lock
				 * unless complete_cb), seq_cst */
	unsigned sleepers;      /* lock: threads gone to sleep on seq since the
				 * last wake-up; a post wakes only when > 0 */
	/* Immutable, from fsaio__cq_init: the caller's completion callback
	 * (fsaio_params.complete) and its argument; with one, events are
	 * handed to it instead of to the ring. */
	void (*complete_cb)(void *, const struct fsaio_event *);
	void *complete_arg;
	/* Immutable once requests flow (fsaio__set_deliver, which sets the
	 * context's copy for submit.c with it): complete_cb's batch form. */
	void (*deliver)(void *, const struct fsaio_event *, unsigned);
	/* Immutable pointer, set by ctx.c: the context's count of requests
	 * accepted and not yet reaped or called back (ctx.h). Submit takes a
	 * slot; a post to complete_cb or a take gives it back, release. */
	_Atomic unsigned *in_flight;
	struct fsaio__counters *st; /* immutable pointer, set by ctx.c: relaxed atomics */
	/* Immutable, set by ctx.c: the io_uring executor's flag that a caller
	 * waits in the ring (seq_cst; its Dekker rule in uring.h), and
	 * kick(kick_arg), which wakes that caller: a post moves seq (or the
	 * delivery hook its word), then reads the flag. */
	_Atomic bool *ring_waiter;
	void (*kick)(void *kick_arg);
	void *kick_arg;
	int efd;                /* lock: -1 until fsaio_event_fd() asks for it */
	bool efd_set;           /* lock: efd holds a non-zero count */
};

/* A queue of depth events, or of one with a completion callback. */
int fsaio__cq_init(struct fsaio__cq *cq, unsigned depth,
		   void (*complete_cb)(void *, const struct fsaio_event *), void *complete_arg);
void fsaio__cq_fini(struct fsaio__cq *cq);
void fsaio__cq_forget(struct fsaio__cq *cq);        /* forked child: free only */
void fsaio__post(struct fsaio__cq *cq, const struct fsaio_event *ev, unsigned n);
/* ctx's queue is fsaio__parts(ctx)->cq (parts.h). */
void fsaio__complete(struct fsaio_ctx *ctx, struct fsaio_req *req, int64_t res,
		     struct fsaio__batch *b);
void fsaio__batch_flush(struct fsaio_ctx *ctx, struct fsaio__batch *b);
/* Move up to nr events out to the caller's out, cq->lock held: how many,
 * or -EFAULT with none taken when out cannot be written. */
int fsaio__cq_take(struct fsaio__cq *cq, unsigned nr, struct fsaio_event *out);
int fsaio__cq_efd(struct fsaio__cq *cq, bool *created);

#endif /* FSAIO_CQ_H */
