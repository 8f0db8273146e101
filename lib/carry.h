/* SPDX-License-Identifier: MIT */
/* Who carries what the submitter cannot finish (carry.c). */
#ifndef FSAIO_CARRY_H
#define FSAIO_CARRY_H

#include "req.h"

/* Why a request is handed to fsaio__carry. */
enum fsaio__why {
	FSAIO__WHY_BLOCKS,      /* only a blocking call will do (fsync, a blocking kind of file) */
	FSAIO__WHY_MISS,        /* a buffered read or write would block (attempt or probe) */
	FSAIO__WHY_UNTRIED,     /* a buffered read or write before its inline attempt */
	FSAIO__WHY_DIRECT,      /* an O_DIRECT request */
	FSAIO__WHY_POLLABLE,    /* a pipe or socket request waits for readiness */
	FSAIO__WHY_PIPE_BLOCKS, /* a pipe or socket request only a blocking call will carry */
	FSAIO__WHY_PUNT,        /* the ring or the poller cannot go on with it */
};

uint32_t fsaio__backend_param(uint32_t param);      /* the param or FSAIO_BACKEND */
/*
 * Carry r, which the submitter (or an executor, PUNT; b NULL) cannot
 * finish, where decide() says. 0: taken, it will produce its one event.
 * -EAGAIN: not taken, nothing done: UNTRIED, attempt it inline; POLLABLE
 * and PIPE_BLOCKS, nobody can carry it: refuse it. -EPERM: an FSAIO_OP_POLL
 * whose fd epoll cannot watch (POLLABLE): the caller answers it.
 */
int fsaio__carry(struct fsaio_ctx *ctx, struct fsaio_req *r, struct fsaio__batch *b,
		 enum fsaio__why why);
int64_t fsaio__carry_run(struct fsaio_ctx *ctx, struct fsaio_req *r);   /* the pool's run */
/* The pool's collect (pool.h): landed started reads finished together. */
void fsaio__carry_collect(struct fsaio_ctx *ctx, struct fsaio_req *const *r, unsigned n,
			  int64_t *res);
void fsaio__carry_punt(struct fsaio_ctx *ctx, struct fsaio_req *r);     /* executors' punt */
int fsaio__carry_ring_cancel(struct fsaio_ctx *ctx, struct fsaio_req *r); /* a method's cancel */

#endif /* FSAIO_CARRY_H */
