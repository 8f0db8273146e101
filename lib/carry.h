/* SPDX-License-Identifier: MIT */
/* Who carries what the submitter cannot finish (carry.c). */
#ifndef FSAIO_CARRY_H
#define FSAIO_CARRY_H

#include "req.h"

uint32_t fsaio__backend_param(uint32_t param);      /* the param or FSAIO_BACKEND */
/* A request that would block: the caller's RWF_NOWAIT answer, or the pool. */
void fsaio__handoff(struct fsaio_ctx *ctx, struct fsaio_req *r, struct fsaio__batch *b);
/* A buffered read or write that would block: RWF_NOWAIT answer, ring or pool. */
void fsaio__miss(struct fsaio_ctx *ctx, struct fsaio_req *r, struct fsaio__batch *b);
/* Whether a miss of r would be carried by the ring (the backend's choice). */
bool fsaio__miss_to_ring(struct fsaio_ctx *ctx, const struct fsaio_req *r);
/* Run r to its end here, with blocking calls, and complete it: what the
 * submitter does when r cannot be bound for a hand-off. */
void fsaio__run_here(struct fsaio_ctx *ctx, struct fsaio_req *r, struct fsaio__batch *b);
int64_t fsaio__carry_run(struct fsaio_ctx *ctx, struct fsaio_req *r);   /* exec_ops.run */
void fsaio__carry_punt(struct fsaio_ctx *ctx, struct fsaio_req *r);     /* exec_ops.punt */
/* A pipe or socket request only a worker can carry now, in the submitter:
 * 0, or -EAGAIN (refused: no worker or descriptor, nothing done yet); with
 * progress made, it completes with it. */
int fsaio__carry_pollable(struct fsaio_ctx *ctx, struct fsaio_req *r, struct fsaio__batch *b);

#endif /* FSAIO_CARRY_H */
