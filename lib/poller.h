/* SPDX-License-Identifier: MIT */
/* The readiness poller (poller.c, poller_table.c). */
#ifndef FSAIO_POLLER_H
#define FSAIO_POLLER_H

#include <pthread.h>
#include <stdatomic.h>

#include "req.h"

/* What the poller's step returns besides a res. */
#define FSAIO__STEP_AGAIN INT64_MIN             /* would block: wait for readiness */
#define FSAIO__STEP_POOL (INT64_MIN + 1)        /* only a blocking call will do: a worker */

/* The readiness poller of the pollable method (poller.c). */
struct fsaio__pfd;
struct fsaio__poller {
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

void fsaio__poller_init(struct fsaio__poller *pl);
/* Park r (state WAITING) until its fd is ready: 0, or -errno and r is the
 * caller's still (-EPERM: epoll cannot watch the fd). */
int fsaio__poller_park(struct fsaio_ctx *ctx, struct fsaio_req *r);
/* Requests of r's direction wait on its fd: r must queue behind them. */
bool fsaio__poller_queued(struct fsaio_ctx *ctx, const struct fsaio_req *r);
int fsaio__poller_cancel(struct fsaio_ctx *ctx, struct fsaio_req *r);
void fsaio__poller_stop(struct fsaio_ctx *ctx);     /* destroy: join, cancel */
void fsaio__poller_fini(struct fsaio__poller *pl);
void fsaio__poller_forget(struct fsaio__poller *pl); /* forked child: free only */

#endif /* FSAIO_POLLER_H */
