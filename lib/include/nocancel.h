/* SPDX-License-Identifier: MIT */
/*
 * The public calls of libfsaio and of its libaio drop-in run with the
 * caller's thread cancellation disabled. On their way they open files,
 * read and write eventfds and wait in ppoll, some of it under the engine's
 * locks or holding a context reference; a cancel acted on there would leave
 * a request half accepted, a lock held or a context that cannot be
 * destroyed. The kernel's io_* syscalls are not cancellation points either.
 * A pending cancel is acted on at the caller's next cancellation point.
 */
#ifndef FSAIO_NOCANCEL_H
#define FSAIO_NOCANCEL_H

#include <pthread.h>

static inline int fsaio__nocancel_begin(void)
{
	int old = PTHREAD_CANCEL_ENABLE;

	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &old);
	return old;
}

static inline void fsaio__nocancel_end(int old)
{
	int ignored;

	pthread_setcancelstate(old, &ignored);
}

/*
 * fsaio_submit without its own cancellation toggle, for the libaio drop-in,
 * whose io_submit disables cancellation only around what may be a
 * cancellation point: the engine disables it for the rest of the call
 * before any step that may reach one (every request but a buffered
 * read or write on a regular file, and on those every path but the attempt
 * that completes inline), and puts it back before it returns. The
 * completion callback is called with cancellation as the caller had it.
 */
struct fsaio_ctx;
struct fsaio_req;
int fsaio__submit_lazy(struct fsaio_ctx *ctx, struct fsaio_req **reqs, unsigned nr);

/* The value of expr, evaluated with the caller's cancellation disabled. */
#define FSAIO__NOCANCEL(expr) __extension__({				\
	int fsaio__cs_ = fsaio__nocancel_begin();			\
	__typeof__(expr) fsaio__r_ = (expr);				\
	fsaio__nocancel_end(fsaio__cs_);				\
	fsaio__r_;							\
})

#endif /* FSAIO_NOCANCEL_H */
