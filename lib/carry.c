/* SPDX-License-Identifier: MIT */
/*
 * DESIGN: who carries a request that cannot complete in the submitter.
 *
 * One home for that decision, decide(): every method and the executors'
 * punt call fsaio__carry() with why the request cannot complete, and
 * decide() picks where it goes: the caller's RWF_NOWAIT ends it with what
 * was done or -EAGAIN; a buffered miss goes to the io_uring ring or the
 * worker pool as the backend (FSAIO_BACKEND, fsaio_params.miss_backend)
 * says; O_DIRECT to the ring unless the backend is THREADS; a pipe or
 * socket to the poller; everything else that would block to the pool,
 * bound to its file first (fsaio__bind), or it is run here when no
 * descriptor or worker is left for that. A read miss for the pool of up
 * to STARTED_MAX is queued to have its disk reads started up front by the
 * pool's starter thread (fsaio__ra_start), never here: a few workers finish
 * such misses oldest first, none is parked per miss. When the first choice refuses (a ring that
 * cannot take it, a poller that cannot watch the fd), decide() is asked
 * again for the next one. Also the work and the hand-off the executors
 * are given (ctx.c wires them): they know nothing of methods or of the
 * completion queue.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "carry.h"
#include "cq.h"
#include "parts.h"
#include "poller.h"
#include "pool.h"
#include "readahead.h"
#include "req.h"
#include "rw.h"
#include "rw_batch.h"
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

/* Where decide() sends a request. */
enum dest {
	END,            /* the caller's RWF_NOWAIT: done so far, or -EAGAIN */
	ATTEMPT,        /* not taken: the submitter attempts it inline */
	HERE,           /* run to its end here with blocking calls */
	RING,           /* the io_uring ring */
	POOL,           /* a worker; with none to be had, run here */
	POOL_STARTED,   /* a worker, its disk reads started by the pool's starter */
	POOL_UPFRONT,   /* a worker, its readahead queued if it must wait (fsaio__ra_upfront) */
	POLLER,         /* the poller, until its fd is ready */
	POOL_OR_REFUSE, /* a worker; with none, refused if nothing was done */
	POOL_OR_FAIL,   /* a worker; with none, it ends with the error */
};

/* AUTO: writes to the pool (ext4 punts buffered writes to io-wq, serialised
 * per inode); read misses up to AUTO_RING_MAX to the ring, where no thread
 * is parked per miss; larger ones to the pool. Where the line falls and
 * why: docs/design-notes.md, "Who carries a buffered read miss". */
#define AUTO_RING_MAX (1024u * 1024)
/* The largest miss whose reads are started up front (fsaio__ra_start, by
 * the pool's starter), on any backend. A larger one would keep the starter
 * allocating pages and waiting for the device queue while smaller misses
 * wait behind it; a worker carries it whole, as any blocking request (docs/design-notes.md, "Read misses with their reads started up
 * front"). */
#define STARTED_MAX (64u * 1024)
/* A read on an fd whose last reads all missed goes straight to the ring
 * (UNTRIED), which tries the page cache itself inside io_uring_enter, or,
 * where its miss would be the pool's, straight to a worker with its reads
 * started (whose blocking read finds cached pages just as well): no probe,
 * no failed NOWAIT attempt. One read in SAMPLE_EVERY still takes
 * the inline path, so an fd that turned hot is served inline again. A
 * sequential stream's reads always take it: readahead (the kernel's or
 * ours) is there to make them hit. */
#define SAMPLE_EVERY 16

/*
 * The one decision: where r goes, given why it cannot complete here.
 * refused: the first answer for this why refused r (the ring could not
 * queue it, the poller could not watch its fd): the next one.
 */
static enum dest decide(struct fsaio_ctx *ctx, struct fsaio_req *r, enum fsaio__why why,
			bool refused)
{
	struct fsaio__parts *p = fsaio__parts(ctx);
	uint64_t left = fsaio__total(r) - r->done_;
	bool nowait = r->rw_flags & RWF_NOWAIT;
	bool ring;

	switch (p->backend) {
	case FSAIO_BACKEND_THREADS:
		ring = false;
		break;
	case FSAIO_BACKEND_URING:
		ring = fsaio__uring_usable(p->uring);
		break;
	default:
		ring = !fsaio__is_write(r) && left <= AUTO_RING_MAX &&
		       fsaio__uring_usable(p->uring);
		break;
	}
	switch (why) {
	case FSAIO__WHY_PUNT:
		return POOL_OR_FAIL;
	case FSAIO__WHY_POLLABLE:
		if (nowait)
			return END;
		return refused ? POOL_OR_REFUSE : POLLER;
	case FSAIO__WHY_PIPE_BLOCKS:
		return nowait ? END : POOL_OR_REFUSE;
	case FSAIO__WHY_DIRECT:
		/* The caller's RWF_NOWAIT goes with it: the ring's answer. */
		if (p->backend != FSAIO_BACKEND_THREADS && !refused)
			return RING;
		return nowait ? END : POOL;
	case FSAIO__WHY_UNTRIED:
		if (fsaio__is_write(r))
			return (p->flags & FSAIO_CTX_INLINE_WRITES) && !nowait ? HERE : ATTEMPT;
		if (!refused) {
			if (nowait || (r->hints_ & FSAIO__HINT_SEQ) ||
			    atomic_fetch_add_explicit(&p->straight_seq, 1, memory_order_relaxed) %
			    SAMPLE_EVERY == 0)
				return ATTEMPT;
			if (ring)
				return RING;
			if (left <= STARTED_MAX && fsaio__ra_startable(p->ra, r))
				return POOL_STARTED;
			return ATTEMPT;
		}
		/* A miss the ring refused: as any miss. */
		/* fall through */
	case FSAIO__WHY_MISS:
		if (nowait)
			return END;
		if (ring && !refused)
			return RING;
		/* A read miss for the pool: its disk reads started up front
		 * (by the pool's starter thread), so a worker only waits for
		 * them and a few workers carry any number of misses. */
		if (left <= STARTED_MAX && fsaio__ra_startable(p->ra, r))
			return POOL_STARTED;
		return POOL_UPFRONT;
	case FSAIO__WHY_BLOCKS:
	default:
		return nowait ? END : POOL;
	}
}

/* When a request for the ring enters: a submit call's by its end, held
 * past it only when the call brought it alone (uring_doorbell.c). */
static enum fsaio__enter enter_of(const struct fsaio__batch *b)
{
	if (!b)
		return FSAIO__ENTER_NOW;
	return b->alone ? FSAIO__ENTER_MAY_HOLD : FSAIO__ENTER_BY_CALL;
}

static void run_here(struct fsaio_ctx *ctx, struct fsaio_req *r, struct fsaio__batch *b)
{
	uint64_t before = r->done_;
	int64_t res = fsaio__retry_blocking(fsaio__parts(ctx)->st, r, true);

	FSAIO__INC(ctx, bytes_inline, r->done_ - before);
	FSAIO__INC(ctx, completed_inline, 1);
	fsaio__complete(ctx, r, res, b);
}

/* To a worker, bound to its file; run here when that cannot be. */
static void to_pool(struct fsaio_ctx *ctx, struct fsaio_req *r, struct fsaio__batch *b,
		    bool started)
{
	if (fsaio__bind(r)) {
		run_here(ctx, r, b);
		return;
	}
	if (r->done_)
		FSAIO__INC(ctx, partial_inline, 1);
	/* No worker can be started at all: the submitter carries it. A miss
	 * whose NOWAIT attempt started the kernel's readahead needs no start. */
	if (started ? fsaio__pool_queue_started(fsaio__parts(ctx)->pool, r,
						!(r->hints_ & FSAIO__HINT_KERNEL_RA)) :
		    fsaio__pool_queue(fsaio__parts(ctx)->pool, r))
		run_here(ctx, r, b);
}

int fsaio__carry(struct fsaio_ctx *ctx, struct fsaio_req *r, struct fsaio__batch *b,
		 enum fsaio__why why)
{
	enum dest d;
	bool partial;
	int err;

	/* Every way on but UNTRIED's attempt and inline write may reach a
	 * cancellation point (where the pool has no starter thread, the
	 * submitter starts a miss's reads itself: fsaio__ra_start reads sysfs). */
	if (why != FSAIO__WHY_UNTRIED)
		fsaio__batch_nocancel(b);
	if (why == FSAIO__WHY_MISS && (r->hints_ & FSAIO__HINT_SEQ))
		fsaio__stream_miss(fsaio__parts(ctx)->ra, r);
	d = decide(ctx, r, why, false);
	if (d == ATTEMPT)
		return -EAGAIN;
	if (why == FSAIO__WHY_UNTRIED) {
		if (d == RING)
			FSAIO__INC(ctx, straight_to_ring, 1);
		fsaio__batch_nocancel(b);
	}
	if ((why == FSAIO__WHY_POLLABLE || why == FSAIO__WHY_PIPE_BLOCKS) && d != END && r->done_)
		FSAIO__INC(ctx, partial_inline, 1);
	for (;;) {
		switch (d) {
		case END:
			fsaio__complete(ctx, r, r->done_ ? (int64_t)r->done_ : -EAGAIN, b);
			return 0;
		case ATTEMPT:
			return -EAGAIN;
		case HERE:
			run_here(ctx, r, b);
			return 0;
		case RING:
			/* r may be complete and reused once queued: read done_ first. */
			partial = r->done_ != 0;
			if (fsaio__uring_queue(fsaio__parts(ctx)->uring, r, enter_of(b)) == 0) {
				if (partial)
					FSAIO__INC(ctx, partial_inline, 1);
				return 0;
			}
			break;
		case POLLER:
			/* Once parked, r may complete and be reused at any moment:
			 * not a field of it is touched after a successful park. */
			err = fsaio__poller_park(fsaio__parts(ctx)->poller, r);
			if (!err)
				return 0;
			if (err == -EPERM && r->opcode == FSAIO_OP_POLL)
				return -EPERM;
			break;
		case POOL_UPFRONT:
			fsaio__ra_upfront(fsaio__parts(ctx)->ra, r);
			to_pool(ctx, r, b, false);
			return 0;
		case POOL:
		case POOL_STARTED:
			to_pool(ctx, r, b, d == POOL_STARTED);
			return 0;
		case POOL_OR_REFUSE:
			err = fsaio__bind(r);
			if (!err && !(err = fsaio__pool_queue(fsaio__parts(ctx)->pool, r)))
				return 0;
			if (!r->done_) {
				fsaio__unbind(r);
				return -EAGAIN;
			}
			fsaio__complete(ctx, r, (int64_t)r->done_, b);
			return 0;
		case POOL_OR_FAIL:
			err = fsaio__bind(r);
			if (!err)
				err = fsaio__pool_queue(fsaio__parts(ctx)->pool, r);
			if (err)
				fsaio__complete(ctx, r, fsaio__result(r, err), NULL);
			return 0;
		}
		/* The first choice refused r: the next one. */
		d = decide(ctx, r, why, true);
	}
}

/* The pool's work: carry r's remainder to its end with blocking calls. */
int64_t fsaio__carry_run(struct fsaio_ctx *ctx, struct fsaio_req *r)
{
	uint64_t before = r->done_;
	int64_t res = fsaio__retry_blocking(fsaio__parts(ctx)->st, r, false);

	FSAIO__INC(ctx, bytes_worker, r->done_ - before);
	return res;
}

/* The pool's collect: started reads r[0..n) that may have landed, tried
 * together without waiting (rw_batch.c: one io_submit of RWF_NOWAIT reads).
 * One read whole, or at its end of file, is finished; one read in part
 * keeps that part (done_) and waits on; a miss or an error waits on, for
 * its worker's blocking read to give the final answer. */
void fsaio__carry_collect(struct fsaio_ctx *ctx, struct fsaio_req *const *r, unsigned n,
			  int64_t *res)
{
	struct fsaio_req *try[FSAIO__RW_BATCH_MAX];
	unsigned at[FSAIO__RW_BATCH_MAX], m = 0, had;
	int64_t first[FSAIO__RW_BATCH_MAX];

	for (unsigned i = 0; i < n && m < FSAIO__RW_BATCH_MAX; i++) {
		if (fsaio__is_write(r[i]) || !fsaio__rw_batchable(r[i]))
			continue;
		try[m] = r[i];
		at[m++] = i;
	}
	if (m < 2)
		return;
	had = fsaio__rw_batch_again(fsaio__parts(ctx)->rwb, try, m, first);
	for (unsigned k = 0; k < had; k++) {
		struct fsaio_req *q = try[k];

		if (first[k] < 0)
			continue;
		FSAIO__INC(ctx, bytes_worker, (uint64_t)first[k]);
		if (first[k] == 0 || (uint64_t)first[k] == fsaio__total(q)) {
			res[at[k]] = first[k];
			FSAIO__INC(ctx, pool_collected, 1);
		} else
			q->done_ = (uint64_t)first[k];
	}
}

/* Take back r where it waits in the ring (the file and O_DIRECT methods'
 * cancel): 0 if it will end -ECANCELED, -EBUSY if too late. */
int fsaio__carry_ring_cancel(struct fsaio_ctx *ctx, struct fsaio_req *r)
{
	return fsaio__uring_cancel(fsaio__parts(ctx)->uring, r);
}

/* The ring or the poller cannot go on with r: a worker carries the rest,
 * on r's own descriptor; with none to be had, r ends with the error. */
void fsaio__carry_punt(struct fsaio_ctx *ctx, struct fsaio_req *r)
{
	fsaio__carry(ctx, r, NULL, FSAIO__WHY_PUNT);
}
