/* SPDX-License-Identifier: MIT */
/*
 * DESIGN: who carries a request that cannot complete in the submitter.
 *
 * One home for that decision: the caller's RWF_NOWAIT ends it with what was
 * done or -EAGAIN; a buffered read miss goes to the io_uring ring or the
 * worker pool as miss_backend (FSAIO_BACKEND) says; everything else that
 * would block goes to the pool, bound to its file first (fsaio__bind), or
 * is run here when no descriptor is left for that. A read miss for the
 * pool of up to STARTED_MAX has its disk reads started here first
 * (fsaio__ra_start) and is queued as started: a few workers finish such
 * misses oldest first, none is parked per miss. Also the work and the
 * hand-off the executors are given (ctx.c wires them): they know nothing
 * of methods or of the completion queue.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "carry.h"
#include "cq.h"
#include "ctx.h"
#include "pool.h"
#include "readahead.h"
#include "req.h"
#include "rw.h"
#include "uring.h"

uint32_t fsaio__backend_param(uint32_t param)
{
	const char *e;

	if (param != FSAIO_BACKEND_AUTO)
		return param;
	e = getenv("FSAIO_BACKEND");
	if (!e)
		return FSAIO_BACKEND_AUTO;
	if (!strcmp(e, "threads"))
		return FSAIO_BACKEND_THREADS;
	if (!strcmp(e, "uring"))
		return FSAIO_BACKEND_URING;
	return FSAIO_BACKEND_AUTO;
}

void fsaio__run_here(struct fsaio_ctx *ctx, struct fsaio_req *r, struct fsaio__batch *b)
{
	uint64_t before = r->done_;
	int64_t res = fsaio__retry_blocking(ctx, r, true);

	FSAIO__INC(ctx, bytes_inline, r->done_ - before);
	FSAIO__INC(ctx, completed_inline, 1);
	fsaio__complete(ctx, r, res, b);
}

/* started: r is a read whose disk reads are under way (fsaio__ra_start). */
static void handoff(struct fsaio_ctx *ctx, struct fsaio_req *r, struct fsaio__batch *b,
		    bool started)
{
	if (r->rw_flags & RWF_NOWAIT) {
		fsaio__complete(ctx, r, r->done_ ? (int64_t)r->done_ : -EAGAIN, b);
		return;
	}
	if (fsaio__bind(r)) {
		fsaio__run_here(ctx, r, b);
		return;
	}
	if (r->done_)
		FSAIO__INC(ctx, partial_inline, 1);
	/* No worker can be started at all: the submitter carries it. */
	if (started ? fsaio__pool_queue_started(&ctx->pool, r) : fsaio__pool_queue(&ctx->pool, r))
		fsaio__run_here(ctx, r, b);
}

void fsaio__handoff(struct fsaio_ctx *ctx, struct fsaio_req *r, struct fsaio__batch *b)
{
	handoff(ctx, r, b, false);
}

/* AUTO: writes to the pool (ext4 punts buffered writes to io-wq, serialised
 * per inode); read misses below STARTED_MIN to the ring, where a small miss
 * costs a third to a half of the CPU of a parked thread; from STARTED_MIN
 * to STARTED_MAX to the pool with their reads started up front, which
 * measured nearer the device than io_uring's buffered path at about its CPU
 * per I/O; larger ones up to AUTO_RING_MAX to the ring again, the rest to
 * the pool (docs/design-notes.md). */
#define STARTED_MIN (16u * 1024)
#define AUTO_RING_MAX (1024u * 1024)
/* The largest miss whose reads the submitter starts (fsaio__ra_start), on
 * any backend: the sizes measured. A larger one would keep the submitter
 * allocating pages and waiting for the device queue; a worker carries it
 * whole, as any blocking request. */
#define STARTED_MAX (64u * 1024)

static bool auto_uring(struct fsaio_ctx *ctx, const struct fsaio_req *r)
{
	uint64_t left = fsaio__total(r) - r->done_;

	return !fsaio__is_write(r) && (left < STARTED_MIN ||
	       (left > STARTED_MAX && left <= AUTO_RING_MAX)) && fsaio__uring_usable(ctx);
}

bool fsaio__miss_to_ring(struct fsaio_ctx *ctx, const struct fsaio_req *r)
{
	switch (ctx->backend) {
	case FSAIO_BACKEND_URING:
		return fsaio__uring_usable(ctx);
	case FSAIO_BACKEND_THREADS:
		return false;
	default:
		return auto_uring(ctx, r);
	}
}

/* A read miss for the pool: start its disk reads here, so a worker only
 * waits for them and a few workers carry any number of misses. */
static bool start_reads(struct fsaio_ctx *ctx, struct fsaio_req *r)
{
	return fsaio__total(r) - r->done_ <= STARTED_MAX && fsaio__ra_start(ctx, r);
}

void fsaio__miss(struct fsaio_ctx *ctx, struct fsaio_req *r, struct fsaio__batch *b)
{
	if (r->hints_ & FSAIO__HINT_SEQ)
		fsaio__stream_miss(ctx, r);
	if (r->rw_flags & RWF_NOWAIT) {
		fsaio__handoff(ctx, r, b);
		return;
	}
	if (fsaio__miss_to_ring(ctx, r)) {
		/* r may be complete and reused once queued: read done_ first. */
		bool partial = r->done_ != 0;

		if (fsaio__uring_queue(ctx, r, b != NULL) == 0) {
			if (partial)
				FSAIO__INC(ctx, partial_inline, 1);
			return;
		}
	}
	if (start_reads(ctx, r)) {
		handoff(ctx, r, b, true);
		return;
	}
	fsaio__ra_upfront(ctx, r);
	handoff(ctx, r, b, false);
}

/* The pool's work: carry r's remainder to its end with blocking calls. */
int64_t fsaio__carry_run(struct fsaio_ctx *ctx, struct fsaio_req *r)
{
	uint64_t before = r->done_;
	int64_t res = fsaio__retry_blocking(ctx, r, false);

	FSAIO__INC(ctx, bytes_worker, r->done_ - before);
	return res;
}

/* The ring or the poller cannot go on with r: a worker carries the rest,
 * on r's own descriptor; with none to be had, r ends with the error. */
void fsaio__carry_punt(struct fsaio_ctx *ctx, struct fsaio_req *r)
{
	int err = fsaio__bind(r);

	if (!err)
		err = fsaio__pool_queue(&ctx->pool, r);
	if (err)
		fsaio__complete(ctx, r, fsaio__result(r, err), NULL);
}

int fsaio__carry_pollable(struct fsaio_ctx *ctx, struct fsaio_req *r, struct fsaio__batch *b)
{
	int err = fsaio__bind(r);

	if (!err && !(err = fsaio__pool_queue(&ctx->pool, r)))
		return 0;
	if (!r->done_) {
		fsaio__unbind(r);
		return -EAGAIN;
	}
	fsaio__complete(ctx, r, (int64_t)r->done_, b);
	return 0;
}
