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

/* The value of expr, evaluated with the caller's cancellation disabled. */
#define FSAIO__NOCANCEL(expr) __extension__({				\
	int fsaio__cs_ = fsaio__nocancel_begin();			\
	__typeof__(expr) fsaio__r_ = (expr);				\
	fsaio__nocancel_end(fsaio__cs_);				\
	fsaio__r_;							\
})

#endif /* FSAIO_NOCANCEL_H */
