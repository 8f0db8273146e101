/* SPDX-License-Identifier: MIT */
/*
 * What the methods, carry.c and cq.c are given of a context: its settings,
 * its counters and the parts they hand work to. The first member of struct
 * fsaio_ctx (ctx.h), wired by ctx.c, so a method reaches them through
 * fsaio__parts(ctx) without the context's other fields; the context
 * itself is passed on only as the opaque handle the executors take.
 */
#ifndef FSAIO_PARTS_H
#define FSAIO_PARTS_H

#include <stdatomic.h>
#include <stdint.h>

#include "counters.h"
#include "req.h"

struct fsaio__cq;
struct fsaio__fdtable;
struct fsaio__readahead;
struct fsaio__poller;
struct fsaio__pool;
struct fsaio__uring_exec;
struct fsaio__rw_batch;

struct fsaio__parts {
	unsigned fork_gen;      /* immutable: fsaio__fork_gen at creation (fork.h) */
	uint32_t magic;         /* FSAIO__CTX_MAGIC from creation until destroy (fork.h) */
	uint32_t flags;         /* immutable: FSAIO_CTX_* */
	uint32_t backend;       /* immutable: enum fsaio_backend, after FSAIO_BACKEND */
	/* immutable pointers into the context; each part keeps its own rules */
	struct fsaio__counters *st;     /* relaxed atomics */
	struct fsaio__cq *cq;
	struct fsaio__fdtable *fdt;
	struct fsaio__readahead *ra;
	struct fsaio__poller *poller;
	struct fsaio__pool *pool;
	struct fsaio__uring_exec *uring;
	struct fsaio__rw_batch *rwb;
	/* carry.c: relaxed; sampling of the reads sent on untried (ring or worker) */
	_Atomic unsigned straight_seq;
};

static inline struct fsaio__parts *fsaio__parts(struct fsaio_ctx *ctx)
{
	return (struct fsaio__parts *)(void *)ctx;
}

static inline const struct fsaio__parts *fsaio__parts_c(const struct fsaio_ctx *ctx)
{
	return (const struct fsaio__parts *)(const void *)ctx;
}

/* A counter of the context's (counters.h). */
#define FSAIO__INC(ctx, field, n) FSAIO__COUNT(fsaio__parts(ctx)->st, field, n)

#endif /* FSAIO_PARTS_H */
