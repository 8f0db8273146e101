/* SPDX-License-Identifier: MIT */
/* Threads of the engine and of the drop-ins: started with every signal
 * blocked but the faults. */
#ifndef FSAIO_THREAD_H
#define FSAIO_THREAD_H

#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>

/* Start fn(arg) on a new thread with every signal blocked but SIGSEGV and
 * SIGBUS: the caller's handlers must not run on it, and a SIGPIPE it causes
 * stays pending there instead of killing the process. A fault is never
 * blocked: the thread's copies of the caller's memory answer EFAULT through
 * the fault handler (usercopy.h), and the kernel kills a thread that
 * blocks the fault it causes. stack 0 keeps the default stack size;
 * a detached thread cannot be joined. The caller's mask is left as it
 * was. Returns 0 or a positive errno. */
static inline int fsaio__thread_spawn(pthread_t *t, size_t stack, bool detached,
				      void *(*fn)(void *), void *arg)
{
	pthread_attr_t attr;
	sigset_t all, old;
	int ret;

	pthread_attr_init(&attr);
	if (stack)
		pthread_attr_setstacksize(&attr, stack);
	if (detached)
		pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	sigfillset(&all);
	sigdelset(&all, SIGSEGV);
	sigdelset(&all, SIGBUS);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	ret = pthread_create(t, &attr, fn, arg);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	pthread_attr_destroy(&attr);
	return ret;
}

/* A joinable thread (stack 0: the default size), so that its owner can
 * join it at teardown. */
static inline int fsaio__thread_start(pthread_t *t, size_t stack,
				      void *(*fn)(void *), void *arg)
{
	return fsaio__thread_spawn(t, stack, false, fn, arg);
}

/* A detached thread of the default stack size, for one that lives as long
 * as the process. */
static inline int fsaio__thread_start_detached(void *(*fn)(void *), void *arg)
{
	pthread_t t;

	return fsaio__thread_spawn(&t, 0, true, fn, arg);
}

#endif
