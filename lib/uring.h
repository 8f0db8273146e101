/* SPDX-License-Identifier: MIT */
/* The context's io_uring ring, as the rest of the engine uses it (uring.c, uring_setup.c). */
#ifndef FSAIO_URING_H
#define FSAIO_URING_H

#include "req.h"

/* The context's io_uring ring, created on first use. Queue the
 * remainder of a request to the ring: 0, or -errno (the ring is unavailable
 * or stopping) and the caller must carry the request another way. With
 * defer (only from a start() called by fsaio_submit) the SQE is submitted
 * by the fsaio__uring_flush() at the end of fsaio_submit, one
 * io_uring_enter for the whole call. Whether a request may go to the ring
 * at all (FSAIO_BACKEND) is the caller's choice, not the ring's. */
int fsaio__uring_queue(struct fsaio_ctx *ctx, struct fsaio_req *r, bool defer);
void fsaio__uring_flush(struct fsaio_ctx *ctx);
int fsaio__uring_cancel(struct fsaio_ctx *ctx, struct fsaio_req *r);
/* Whether the context can have a ring (none is made). */
bool fsaio__uring_usable(struct fsaio_ctx *ctx);
void fsaio__uring_stop(struct fsaio_ctx *ctx);      /* destroy: drain, join */
void fsaio__uring_forget(struct fsaio_ctx *ctx);    /* forked child: free only */

#endif /* FSAIO_URING_H */
