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
#include "rw_batch.h"
#include "uring.h"

struct fsaio_ctx {
	/* first: what methods and carry.c are given (parts.h, fsaio__parts) */
	struct fsaio__parts parts;
	unsigned depth;         /* immutable */
	/* immutable once requests flow (fsaio__set_deliver, which sets
	 * cq.deliver with it): with a delivery hook submit counts no slots */
	void (*deliver)(void *, const struct fsaio_event *, unsigned);
	/* accepted and not yet reaped (or called back): submit takes a slot,
	 * cq.c gives it back (cq.in_flight); not counted with a delivery
	 * hook, whose caller bounds its requests itself */
	_Atomic unsigned in_flight;
	struct fsaio__counters st;  /* relaxed atomics */
	struct fsaio__fdtable fdt;
	struct fsaio__pool pool;
	struct fsaio__cq cq;
	struct fsaio__poller poller;
	struct fsaio__uring_exec uring; /* uring.h: its own rules */
	struct fsaio__readahead ra; /* readahead.c: its own rules */
	struct fsaio__rw_batch rwb; /* rw_batch.h: its own rules */
	/* The same for the pool's starter: the disk reads of misses started
	 * together (readahead.c, fsaio__ra_start_many). */
	struct fsaio__rw_batch rwb_start;
};

#endif /* FSAIO_CTX_H */
