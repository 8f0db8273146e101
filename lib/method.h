/* SPDX-License-Identifier: MIT */
/*
 * The retry-method interface: one implementation per kind of file, chosen
 * once per fd (fdtable.c) as the 2004 patchset let each file type supply
 * its own retry method. Adding a kind is one new method_*.c file and a line
 * in fsaio__methods[].
 */
#ifndef FSAIO_METHOD_H
#define FSAIO_METHOD_H

#include "cq.h"
#include "parts.h"
#include "fdtable.h"
#include "req.h"

struct fsaio__method {
	/* In the submitter: go as far as possible without blocking, then
	 * complete the request or hand it on. 0 once the request is accepted
	 * (it will produce exactly one event), -errno to refuse it, or
	 * FSAIO__RESTART before any progress when the fd names another kind
	 * of file now. What reaches a worker is run by fsaio__retry_blocking,
	 * whatever the method. */
	int (*start)(struct fsaio_ctx *ctx, struct fsaio_req *req,
		     struct fsaio__fdinfo fi, struct fsaio__batch *b);
	/* Complete r in the caller with no event, if this can be done now
	 * without blocking: true and its result in *res, or false with r as
	 * it was (what the fd's facts learnt stays), to be submitted. first:
	 * the answer of its first attempt, made already with other reads
	 * (rw_batch.c), or NULL. NULL if the method never does. */
	bool (*now)(struct fsaio_ctx *ctx, struct fsaio_req *req, struct fsaio__fdinfo fi,
		    const int64_t *first, int64_t *res);
	/* Whether r's first attempt may be made with the other reads of its
	 * submit call, in one system call (rw_batch.c): only where start()
	 * would make that attempt before anything else. NULL if never. */
	bool (*batchable)(struct fsaio_ctx *ctx, const struct fsaio_req *req,
			  struct fsaio__fdinfo fi);
	/* Take back a WAITING request: 0 if it will complete with -ECANCELED,
	 * -EBUSY if too late. NULL if the method never parks requests. */
	int (*cancel)(struct fsaio_ctx *ctx, struct fsaio_req *req);
};

extern const struct fsaio__method fsaio__method_file;
extern const struct fsaio__method fsaio__method_blocking;
extern const struct fsaio__method fsaio__method_pollable;
extern const struct fsaio__method fsaio__method_direct;
extern const struct fsaio__method *const fsaio__methods[FSAIO__KIND_MAX];

/* A method's start() that finds r's fd names another kind of file now,
 * before any progress: submit checks it again and starts the right method. */
#define FSAIO__RESTART 1

/* FSAIO_OP_POLL on a file that is always ready (regular, O_DIRECT): poll(2)'s
 * revents at once; with FSAIO_CTX_KERNEL_RULES, events it can never have are
 * refused (-EINVAL), as the kernel's AIO refuses to wait for them. */
static inline int fsaio__poll_file(struct fsaio_ctx *ctx, struct fsaio_req *r,
				   struct fsaio__batch *b)
{
	int64_t revents = fsaio__file_revents(r);

	if (!revents && (fsaio__parts(ctx)->flags & FSAIO_CTX_KERNEL_RULES))
		return -EINVAL;
	fsaio__complete(ctx, r, revents, b);
	return 0;
}

/* The poller's non-blocking retry of r's remainder (its ops.step): the
 * event's res, or FSAIO__STEP_AGAIN / FSAIO__STEP_POOL. */
int64_t fsaio__pollable_step(struct fsaio_ctx *ctx, struct fsaio_req *r);

#endif /* FSAIO_METHOD_H */
