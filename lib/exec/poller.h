/* SPDX-License-Identifier: MIT */
/*
 * The readiness poller (poller.c, poller_table.c): requests it is given
 * wait for their fd's readiness; it steps them with ops->step and reports
 * each once through ops->done or ops->punt, all called with the private
 * arg of init. It knows nothing else of its owner.
 */
#ifndef FSAIO_POLLER_H
#define FSAIO_POLLER_H

#include <pthread.h>
#include <stdatomic.h>

#include "req.h"

struct fsaio__counters;

/* What ops->step returns besides a res. */
#define FSAIO__STEP_AGAIN INT64_MIN             /* would block: wait for readiness */
#define FSAIO__STEP_POOL (INT64_MIN + 1)        /* only a blocking call will do: a worker */

/* What a poller is given: the work it does and where it reports. */
struct fsaio__poller_ops {
	/* Non-blocking progress on r (on fsaio__fd(r)): its res,
	 * FSAIO__STEP_AGAIN or FSAIO__STEP_POOL. */
	int64_t (*step)(void *arg, struct fsaio_req *r);
	/* r is finished with res (b: a batch flush posts, or NULL). */
	void (*done)(void *arg, struct fsaio_req *r, int64_t res, struct fsaio__batch *b);
	/* Post what done put in b (once per round of the thread). */
	void (*flush)(void *arg, struct fsaio__batch *b);
	/* Only a blocking call will carry the rest of r. */
	void (*punt)(void *arg, struct fsaio_req *r);
};

/* The readiness poller of the pollable method (poller.c). */
struct fsaio__pfd;
struct fsaio__poller {
	const struct fsaio__poller_ops *ops; /* immutable after init */
	void *arg;              /* immutable after init: ops' first argument */
	struct fsaio__counters *st; /* immutable after init; relaxed atomics */
	pthread_mutex_t lock;
	struct fsaio__pfd **fds; /* lock: [nfds] by the entry's own duplicate fd */
	unsigned nfds;          /* lock */
	struct fsaio__pfd **alias; /* lock: [nalias] by the caller's fd number */
	unsigned nalias;        /* lock */
	bool started;           /* lock: the thread runs (set once) */
	bool stopping;          /* lock: destroy began; nothing parks any more */
	_Atomic bool active;    /* set once something parked; relaxed: a hint
				 * that lets submitters skip the lock before */
	pthread_t thread;       /* written under lock before started is set */
	int epfd, wakefd;       /* -1, then set under lock before the thread
				 * starts; immutable until fini */
	int spl[2];             /* the thread's private pipe for FIFO writes:
				 * only the poller thread touches it; -1 */
};

void fsaio__poller_init(struct fsaio__poller *pl, const struct fsaio__poller_ops *ops,
			void *arg, struct fsaio__counters *st);
/* Park r (state WAITING) until its fd is ready: 0, or -errno and r is the
 * caller's still (-EPERM: epoll cannot watch the fd). */
int fsaio__poller_park(struct fsaio__poller *pl, struct fsaio_req *r);
/* Requests of r's direction wait on its fd: r must queue behind them. */
bool fsaio__poller_queued(struct fsaio__poller *pl, const struct fsaio_req *r);
int fsaio__poller_cancel(struct fsaio__poller *pl, struct fsaio_req *r);
void fsaio__poller_stop(struct fsaio__poller *pl);     /* destroy: join, cancel */
void fsaio__poller_fini(struct fsaio__poller *pl);
void fsaio__poller_forget(struct fsaio__poller *pl); /* forked child: free only */

#endif /* FSAIO_POLLER_H */
