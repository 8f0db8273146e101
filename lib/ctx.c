/* SPDX-License-Identifier: MIT */
/*
 * DESIGN: context lifetime, parameters and fork.
 *
 * A context owns a completion queue (cq.c), a worker pool (pool.c), the
 * poller where requests on pipes and sockets wait for readiness (poller.c)
 * and the fd facts it has learnt (fdtable.c). Destroy cancels what waits in
 * the pool's queue and on the poller, lets running retries finish and joins
 * the threads, so no caller buffer is touched after it returns.
 *
 * fork(): the child has none of the parent's worker threads and may have
 * inherited locked mutexes. A pthread_atfork child handler bumps
 * fsaio__fork_gen; every call on a context made before the fork then
 * returns -EINVAL in the child, except destroy, which only frees memory.
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "nocancel.h"
#include "carry.h"
#include "cq.h"
#include "dropin.h"
#include "ctx.h"
#include "fdtable.h"
#include "method.h"
#include "poller.h"
#include "pool.h"
#include "readahead.h"
#include "req.h"
#include "uring.h"
#include "usercopy.h"

static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;

static void on_fork_child(void)
{
	atomic_fetch_add_explicit(&fsaio__fork_gen, 1, memory_order_relaxed);
}

static void register_atfork(void)
{
	pthread_atfork(NULL, NULL, on_fork_child);
}

/* The pool's work and reports: carry a request, complete it (arg: the ctx). */
static int64_t pool_run(void *arg, struct fsaio_req *r)
{
	return fsaio__carry_run(arg, r);
}

static void pool_done(void *arg, struct fsaio_req *r, int64_t res)
{
	fsaio__complete(arg, r, res, NULL);
}

/* The starter's starts (readahead.c): a read with an I/O priority of its
 * own is started alone, at it. */
static void pool_start(void *arg, const struct fsaio_req *r, unsigned n, bool *started)
{
	struct fsaio_ctx *ctx = arg;

	fsaio__ra_start_many(ctx->parts.ra, &ctx->rwb_start, r, n, started);
}

static void pool_collect(void *arg, struct fsaio_req *const *r, unsigned n, int64_t *res)
{
	fsaio__carry_collect(arg, r, n, res);
}

static const struct fsaio__pool_ops pool_ops = {
	.run = pool_run,
	.done = pool_done,
	.start = pool_start,
	.collect = pool_collect,
};

/* The poller's work: step a pollable request (arg: the ctx). */
static int64_t poller_step(void *arg, struct fsaio_req *r)
{
	return fsaio__pollable_step(arg, r);
}

/* The poller's and the ring's reports: complete, post a batch, punt to a
 * worker (arg: the ctx). */
static void exec_done(void *arg, struct fsaio_req *r, int64_t res, struct fsaio__batch *b)
{
	fsaio__complete(arg, r, res, b);
}

static void exec_flush(void *arg, struct fsaio__batch *b)
{
	fsaio__batch_flush(arg, b);
}

static void exec_punt(void *arg, struct fsaio_req *r)
{
	fsaio__carry_punt(arg, r);
}

static const struct fsaio__poller_ops poller_ops = {
	.step = poller_step,
	.done = exec_done,
	.flush = exec_flush,
	.punt = exec_punt,
};

static const struct fsaio__uring_ops uring_ops = {
	.done = exec_done,
	.flush = exec_flush,
	.punt = exec_punt,
};

/* The completion queue's hook: wake a caller waiting in the ring (arg:
 * the ring). */
static void cq_kick(void *arg)
{
	fsaio__uring_kick(arg);
}

/* The readahead's hooks to the pool (struct fsaio__readahead). */
static void ra_queue_job(void *arg, struct fsaio__job *job)
{
	struct fsaio_ctx *ctx = arg;

	fsaio__pool_job(&ctx->pool, job);
}

static bool ra_pool_full(void *arg)
{
	struct fsaio_ctx *ctx = arg;

	return fsaio__pool_busy(&ctx->pool) >= ctx->pool.max;
}

_Static_assert(offsetof(struct fsaio_ctx, parts) == 0, "fsaio__parts(ctx) casts ctx");

static unsigned env_uint(const char *name, unsigned dflt, unsigned max)
{
	const char *s = getenv(name);
	char *end;
	unsigned long v;

	if (!s || !*s)
		return dflt;
	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || *end || v == 0 || v > max)
		return dflt;
	return (unsigned)v;
}

#define DEFAULT_DEPTH 256
#define MAX_DEPTH (1u << 20)
#define DEFAULT_WORKERS 32
#define MAX_WORKERS 1024

static int ctx_destroy_body(fsaio_ctx_t *ctx);

/* p and *ctxp are the caller's memory: copied in and out, -EFAULT when
 * they cannot be (a context made for an unwritable ctxp is destroyed). */
static int ctx_create_body(const struct fsaio_params *up, fsaio_ctx_t **ctxp)
{
	struct fsaio_params params = { 0 }, *p = &params;
	struct fsaio_ctx *ctx;
	int saved = errno, ret;
	unsigned i;

	if (!ctxp || fsaio__user_rw_ok(ctxp, sizeof(*ctxp)))
		return -EFAULT;
	if (up && fsaio__copy_user(&params, up, sizeof(params)))
		return -EFAULT;
	for (i = 0; i < sizeof(p->reserved) / sizeof(p->reserved[0]); i++)
		if (p->reserved[i])
			return -EINVAL;
	if (p->queue_depth > MAX_DEPTH || p->workers > MAX_WORKERS ||
	    p->miss_backend > FSAIO_BACKEND_URING ||
	    (p->flags & ~(uint32_t)(FSAIO_CTX_NO_INLINE | FSAIO_CTX_NO_PROBE |
			      FSAIO_CTX_NO_READAHEAD | FSAIO_CTX_INLINE_WRITES |
			      FSAIO_CTX_KERNEL_RULES)))
		return -EINVAL;

	pthread_once(&atfork_once, register_atfork);
	ctx = calloc(1, sizeof(*ctx));
	if (!ctx) {
		errno = saved;
		return -ENOMEM;
	}
	ctx->parts.fork_gen = atomic_load(&fsaio__fork_gen);
	ctx->parts.magic = FSAIO__CTX_MAGIC;
	ctx->parts.flags = p->flags;
	ctx->parts.backend = fsaio__backend_param(p->miss_backend);
	ctx->parts.st = &ctx->st;
	ctx->parts.cq = &ctx->cq;
	ctx->parts.fdt = &ctx->fdt;
	ctx->parts.ra = &ctx->ra;
	ctx->parts.poller = &ctx->poller;
	ctx->parts.pool = &ctx->pool;
	ctx->parts.uring = &ctx->uring;
	ctx->parts.rwb = &ctx->rwb;
	ctx->depth = p->queue_depth ? p->queue_depth : DEFAULT_DEPTH;

	ret = fsaio__fdtable_init(&ctx->fdt);
	if (ret)
		goto out_free;
	ret = fsaio__cq_init(&ctx->cq, ctx->depth, p->complete, p->complete_arg);
	if (ret)
		goto out_fdt;
	ctx->cq.in_flight = &ctx->in_flight;
	ctx->cq.st = &ctx->st;
	fsaio__uring_init(&ctx->uring, ctx->depth, &uring_ops, ctx, &ctx->st);
	ctx->cq.ring_waiter = &ctx->uring.waiter;
	ctx->cq.kick = cq_kick;
	ctx->cq.kick_arg = &ctx->uring;
	fsaio__poller_init(&ctx->poller, &poller_ops, ctx, &ctx->st);
	ret = fsaio__pool_init(&ctx->pool, p->workers ? p->workers :
			       env_uint("FSAIO_WORKERS", DEFAULT_WORKERS, MAX_WORKERS),
			       &pool_ops, ctx);
	if (ret)
		goto out_cq;
	fsaio__ra_init(&ctx->ra, p->flags & FSAIO_CTX_NO_READAHEAD, &ctx->st, &ctx->fdt,
		       ra_queue_job, ra_pool_full, ctx);
	fsaio__rw_batch_init(&ctx->rwb, &ctx->st);
	fsaio__rw_batch_init(&ctx->rwb_start, &ctx->st);
	if (fsaio__copy_user(ctxp, &ctx, sizeof(ctx))) {
		ctx_destroy_body(ctx);
		errno = saved;
		return -EFAULT;
	}
	errno = saved;
	return 0;

out_cq:
	fsaio__poller_fini(&ctx->poller);
	fsaio__cq_fini(&ctx->cq);
out_fdt:
	fsaio__fdtable_fini(&ctx->fdt);
out_free:
	free(ctx);
	errno = saved;
	return ret;
}

void fsaio__set_deliver(fsaio_ctx_t *ctx,
			void (*fn)(void *complete_arg, const struct fsaio_event *ev, unsigned n))
{
	ctx->deliver = fn;
	ctx->cq.deliver = fn;
}

FSAIO__API int fsaio_ctx_create(const struct fsaio_params *p, fsaio_ctx_t **ctxp)
{
	return FSAIO__NOCANCEL(ctx_create_body(p, ctxp));
}

static int ctx_destroy_body(fsaio_ctx_t *ctx)
{
	int saved = errno;
	unsigned gen;
	bool live;

	if (!fsaio__ctx_is(ctx, &gen))
		return -EINVAL;
	/* Not live in a forked child: the workers are not ours and the locks
	 * may be held by threads that do not exist here. Each part is then
	 * forgotten (its memory and fds freed) rather than finished. */
	live = gen == atomic_load(&fsaio__fork_gen);
	if (live) {
		/* The ring and the poller first: their threads may hand a
		 * remainder to the pool. */
		fsaio__uring_stop(&ctx->uring);
		fsaio__poller_stop(&ctx->poller);
		fsaio__pool_stop(&ctx->pool);
	} else {
		fsaio__uring_forget(&ctx->uring);
	}
	fsaio__ra_fini(&ctx->ra);    /* after the workers that run its prefetch jobs */
	(live ? fsaio__rw_batch_fini : fsaio__rw_batch_forget)(&ctx->rwb);
	(live ? fsaio__rw_batch_fini : fsaio__rw_batch_forget)(&ctx->rwb_start);
	(live ? fsaio__pool_fini : fsaio__pool_forget)(&ctx->pool);
	(live ? fsaio__poller_fini : fsaio__poller_forget)(&ctx->poller);
	(live ? fsaio__cq_fini : fsaio__cq_forget)(&ctx->cq);
	(live ? fsaio__fdtable_fini : fsaio__fdtable_forget)(&ctx->fdt);
	ctx->parts.magic = 0;
	free(ctx);
	errno = saved;
	return 0;
}

FSAIO__API int fsaio_ctx_destroy(fsaio_ctx_t *ctx)
{
	return FSAIO__NOCANCEL(ctx_destroy_body(ctx));
}
