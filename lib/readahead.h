/* SPDX-License-Identifier: MIT */
/* The engine's own readahead (readahead.c). */
#ifndef FSAIO_READAHEAD_H
#define FSAIO_READAHEAD_H

#include "fdtable.h"
#include "req.h"

int fsaio__ra_init(struct fsaio_ctx *ctx);
void fsaio__ra_fini(struct fsaio_ctx *ctx);
/* In the submitter, before a buffered read's inline attempt: stream detection. */
void fsaio__stream_enter(struct fsaio_ctx *ctx, struct fsaio_req *r, struct fsaio__fdinfo fi);
/* A stream read missed (before it is handed on): start or widen prefetch. */
void fsaio__stream_miss(struct fsaio_ctx *ctx, struct fsaio_req *r);
/* A stream request completed inline (a hit): grows an existing window. */
void fsaio__stream_hit(struct fsaio_ctx *ctx, struct fsaio_req *r);
/* A missed read the kernel has not seen waits for a busy pool: have a
 * worker start its readahead (in the submitter: records and queues). */
void fsaio__ra_upfront(struct fsaio_ctx *ctx, struct fsaio_req *r);
/* A read miss about to be handed on: start the disk reads of its whole
 * remainder now, in the caller. Whether they are under way. */
bool fsaio__ra_start(struct fsaio_ctx *ctx, struct fsaio_req *r);
/* The readahead limit (bytes) of the device holding fd's file. */
uint64_t fsaio__ra_limit(int fd);

#endif /* FSAIO_READAHEAD_H */
