/* SPDX-License-Identifier: MIT */
/* The engine's own threads: started with every signal blocked. */
#ifndef FSAIO_THREAD_H
#define FSAIO_THREAD_H

#include <pthread.h>
#include <signal.h>
#include <stddef.h>

/* Start fn(arg) on a joinable thread with the given stack size and every
 * signal blocked: the caller's handlers must not run on it, and a SIGPIPE
 * it causes stays pending there instead of killing the process. The
 * caller's mask is left as it was. Returns 0 or a positive errno. */
static inline int fsaio__thread_start(pthread_t *t, size_t stack,
				      void *(*fn)(void *), void *arg)
{
	pthread_attr_t attr;
	sigset_t all, old;
	int ret;

	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, stack);
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	ret = pthread_create(t, &attr, fn, arg);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	pthread_attr_destroy(&attr);
	return ret;
}

#endif
