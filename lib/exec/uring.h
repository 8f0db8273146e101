/* SPDX-License-Identifier: MIT */
/*
 * The io_uring executor (uring_setup.c, uring_reap.c, uring.c): requests
 * it is given are carried by an io_uring ring it creates on first use, and
 * each is reported exactly once through ops->done (or handed back through
 * ops->punt), all called with the private arg of init. It knows nothing
 * else of its owner.
 */
#ifndef FSAIO_URING_H
#define FSAIO_URING_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "req.h"

struct fsaio__counters;
struct fsaio__uring;

/* What the ring is given: where it reports. */
struct fsaio__uring_ops {
	/* r is finished with res (b: a batch flush posts, or NULL). */
	void (*done)(void *arg, struct fsaio_req *r, int64_t res, struct fsaio__batch *b);
	/* Post what done put in b (once per harvest round). */
	void (*flush)(void *arg, struct fsaio__batch *b);
	/* The ring cannot go on with r (it holds a duplicate fd): only a
	 * blocking call will carry the rest. */
	void (*punt)(void *arg, struct fsaio_req *r);
};

struct fsaio__uring_exec {
	const struct fsaio__uring_ops *ops; /* immutable after init */
	void *arg;              /* immutable after init: ops' first argument */
	struct fsaio__counters *st; /* immutable after init; relaxed atomics */
	unsigned depth;         /* immutable after init: requests in flight at most */
	/* NULL, then a creation marker, then the ring, each by CAS
	 * (uring_setup.c); the ring itself is immutable until stop. */
	_Atomic(struct fsaio__uring *) ring;
	/* seq_cst: waiters that rely on the ring's thread (fsaio__uring_need);
	 * while > 0 the thread does not step back (uring_reap.c). */
	_Atomic int needs;
	/*
	 * seq_cst: a caller waits in the ring (uring_reap.c, reap_once). Dekker
	 * with whoever moves the word that caller waits on: the waiter sets
	 * this, then reads the word; the owner of the word moves it, then
	 * reads this and, finding it set, clears it by exchange and calls
	 * fsaio__uring_kick (one poster of many kicks). The waiter clears it
	 * when it leaves the ring.
	 */
	_Atomic bool waiter;
};

/* When a queued request's SQE enters the kernel. */
enum fsaio__enter {
	FSAIO__ENTER_NOW,       /* before fsaio__uring_queue returns */
	FSAIO__ENTER_BY_CALL,   /* with the submit call's flush (fsaio__uring_flush_soon) */
	FSAIO__ENTER_MAY_HOLD,  /* the same, or held past the call (uring_doorbell.c) */
};

void fsaio__uring_init(struct fsaio__uring_exec *x, unsigned depth,
		       const struct fsaio__uring_ops *ops, void *arg, struct fsaio__counters *st);
/* Queue the remainder of a request to the ring, creating it on first use:
 * 0, or -errno (the ring is unavailable or stopping) and the caller must
 * carry the request another way. Unless when is ENTER_NOW the SQE waits
 * for the submit call's flush: one io_uring_enter for a caller's batch.
 * Whether a request may go to the ring at all is the caller's choice. */
int fsaio__uring_queue(struct fsaio__uring_exec *x, struct fsaio_req *r, enum fsaio__enter when);
void fsaio__uring_flush(struct fsaio__uring_exec *x);
/* The end of a submit call: flush, or leave the SQEs for the caller's next
 * visit when it keeps coming back (uring_doorbell.c). */
void fsaio__uring_flush_soon(struct fsaio__uring_exec *x);
/* A call into the ring begins: note how soon after the last submit call. */
void fsaio__uring_back(struct fsaio__uring_exec *x);
/* Take back a WAITING request: 0 if it will be reported -ECANCELED,
 * -EBUSY if too late. */
int fsaio__uring_cancel(struct fsaio__uring_exec *x, struct fsaio_req *r);
/* Whether a ring can exist (none is made). */
bool fsaio__uring_usable(struct fsaio__uring_exec *x);
void fsaio__uring_stop(struct fsaio__uring_exec *x);      /* destroy: drain, join */
void fsaio__uring_forget(struct fsaio__uring_exec *x);    /* forked child: free only */

/*
 * Harvest the ring's completions in this thread and, when none came and
 * *word still reads seen, wait in io_uring_enter once, until deadline
 * (CLOCK_MONOTONIC ns; INT64_MAX: none; 0: do not wait). 0 (look again),
 * -EINTR (a signal), or -EAGAIN: the ring is not this caller's to carry
 * now; sleep another way. The word's owner honours `waiter`.
 */
int fsaio__uring_drive(struct fsaio__uring_exec *x, const _Atomic uint32_t *word,
		       uint32_t seen, int64_t deadline);
/* The same, its wait in io_uring_enter a cancellation point. */
int fsaio__uring_drive_cancellable(struct fsaio__uring_exec *x, const _Atomic uint32_t *word,
				   uint32_t seen, int64_t deadline);
/* A waiter that relies on the ring's thread comes (+1) or goes (-1). */
void fsaio__uring_need(struct fsaio__uring_exec *x, int delta);
/* Wake a caller waiting in the ring. */
void fsaio__uring_kick(struct fsaio__uring_exec *x);

#endif /* FSAIO_URING_H */
