/* SPDX-License-Identifier: MIT */
/* The completion queue and completion (cq.c). */
#ifndef FSAIO_CQ_H
#define FSAIO_CQ_H

#include <pthread.h>
#include <stdatomic.h>

#include "req.h"

struct fsaio__cq {
	pthread_mutex_t lock;
	struct fsaio_event *ring; /* lock: [size] */
	unsigned size;          /* immutable: queue_depth */
	unsigned head, count;   /* lock */
	_Atomic uint32_t seq;   /* futex word: bumped on every post (under lock
				 * unless complete_cb), seq_cst */
	unsigned sleepers;      /* lock: threads gone to sleep on seq since the
				 * last wake-up; a post wakes only when > 0 */
	/* Immutable, set by ctx.c: the io_uring executor's flag that a caller
	 * waits in the ring (seq_cst; its Dekker rule in uring.h), and kick,
	 * which wakes that caller: a post moves seq (or the delivery hook
	 * its word), then reads the flag. */
	_Atomic bool *ring_waiter;
	void (*kick)(struct fsaio_ctx *ctx);
	int efd;                /* lock: -1 until fsaio_event_fd() asks for it */
	bool efd_set;           /* lock: efd holds a non-zero count */
};

int fsaio__cq_init(struct fsaio__cq *cq, unsigned size);
void fsaio__cq_fini(struct fsaio__cq *cq);
void fsaio__cq_forget(struct fsaio__cq *cq);        /* forked child: free only */
void fsaio__post(struct fsaio_ctx *ctx, const struct fsaio_event *ev, unsigned n);
void fsaio__complete(struct fsaio_ctx *ctx, struct fsaio_req *req, int64_t res,
		     struct fsaio__batch *b);
void fsaio__batch_flush(struct fsaio_ctx *ctx, struct fsaio__batch *b);
/* Move up to nr events out, cq.lock held: how many. */
unsigned fsaio__cq_take(struct fsaio_ctx *ctx, unsigned nr, struct fsaio_event *out);
int fsaio__cq_efd(struct fsaio__cq *cq, bool *created);

#endif /* FSAIO_CQ_H */
