/* SPDX-License-Identifier: MIT */
/*
 * A context: its parts, its counters, the executors' callbacks.
 *
 * Threads: any number of caller threads submit and reap on one context at
 * once; the executors' threads (pool.c, poller.c, uring.c) run the rest.
 * Every lock of the engine is a leaf: none is taken while another is held
 * (pool.lock, cq.lock, fdtable.lock, poller.lock, the ring's sq_lock, the
 * readahead locks); completions and hand-offs are made after a lock is
 * released. Each shared field names its lock or atomic rule.
 */
#ifndef FSAIO_CTX_H
#define FSAIO_CTX_H

#include <stdatomic.h>

#include "counters.h"
#include "cq.h"
#include "fdtable.h"
#include "fork.h"
#include "parts.h"
#include "poller.h"
#include "pool.h"
#include "readahead.h"
#include "req.h"


/*
 * Where the ring (uring.c) reports, as a thread pool is given a done
 * function; ctx.c wires it once. The pool and the poller are given their
 * own ops (pool.h, poller.h).
 */
struct fsaio__exec_ops {
	/* r is finished with res (b: a batch the caller flushes, or NULL). */
	void (*done)(struct fsaio_ctx *ctx, struct fsaio_req *r, int64_t res,
		     struct fsaio__batch *b);
	/* Only a blocking call will carry the rest of r. */
	void (*punt)(struct fsaio_ctx *ctx, struct fsaio_req *r);
};

struct fsaio_ctx {
	/* first: what methods and carry.c are given (parts.h, fsaio__parts) */
	struct fsaio__parts parts;
	const struct fsaio__exec_ops *ops; /* immutable */
	unsigned depth;         /* immutable */
	void (*complete_cb)(void *, const struct fsaio_event *); /* immutable */
	void *complete_arg;     /* immutable */
	/* immutable once requests flow (fsaio__set_deliver): complete_cb's batch form */
	void (*deliver)(void *, const struct fsaio_event *, unsigned);
	/* accepted and not yet reaped (or called back); not counted with a
	 * delivery hook, whose caller bounds its requests itself */
	_Atomic unsigned in_flight;
	/* uring_reap.c, seq_cst: waiters that rely on the ring's thread
	 * (fsaio__drive_need); while > 0 the thread does not step back. */
	_Atomic int ring_needs;
	struct fsaio__counters st;  /* relaxed atomics */
	struct fsaio__fdtable fdt;
	struct fsaio__pool pool;
	struct fsaio__cq cq;
	struct fsaio__poller poller;
	/* uring.c: NULL, then a creation marker, then the ring, each by CAS;
	 * the ring itself is immutable until destroy (see uring.c). */
	_Atomic(struct fsaio__uring *) uring;
	struct fsaio__readahead ra; /* readahead.c: its own rules */
};

#endif /* FSAIO_CTX_H */
