/* SPDX-License-Identifier: MIT */
/*
 * DESIGN: waiting for completions.
 *
 * One word, px__seq, is bumped by every completion (after the status is
 * in the aiocb); aio_suspend, lio_listio(LIO_WAIT) and aio_cancel wait for
 * it to move and look again at what they wait for.
 *
 * Who waits how. aio_suspend and lio_listio first reap PX_PLAIN's io_uring
 * ring themselves (fsaio__drive): a ring completion then runs px__complete
 * (core.c) in the waiting thread and costs no thread hop. A completion of another
 * path (a worker, the poller, the other context, a cancel) kicks such a
 * driver out of io_uring_enter (drivers counts them). When the ring is not
 * the waiter's to carry (nothing in it, another thread carries it), it
 * sleeps on px__seq's futex (waiters counts those, so that a completion
 * makes the wake system call only when someone sleeps there), while the
 * ring's thread carries the ring (fsaio__drive_need). All seq_cst: a
 * completion bumps seq and then reads waiters and drivers, a waiter bumps
 * its count and then reads seq before it sleeps.
 *
 * The futex sleep is FUTEX_WAIT_BITSET on an absolute CLOCK_MONOTONIC
 * deadline, as glibc's aio_suspend sleeps: a signal handler ends it with
 * EINTR when there is a deadline, and with none it is restarted if the
 * handler was installed with SA_RESTART. A wait in the ring ends with EINTR
 * on any handler (io_uring_enter is not restarted).
 *
 * Cancellation. aio_suspend and lio_listio(LIO_WAIT) are cancellation
 * points whose sleep a pthread_cancel ends at once. A raw futex system
 * call is not a cancellation point, so the cancellable sleep switches the
 * thread to asynchronous cancellation around that one system call and
 * back (glibc's own cancellable system calls do the same): a cancel
 * pending or arriving then unwinds the thread from the sleep. Nothing but
 * the system call runs in that window; the cleanup handlers undo what the
 * thread holds (the counts, the ring's ownership, a list's reference), and
 * the requests go on. The ring's harvest and the callbacks it runs are
 * never cancelled: the engine opens the window around its wait alone.
 */
#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "dropin.h"
#include "engine.h"
#include "wait.h"

_Atomic uint32_t px__seq;
static _Atomic uint32_t waiters;        /* threads asleep on px__seq's futex */
static _Atomic uint32_t drivers;        /* threads waiting in PX_PLAIN's ring */

/* What this thread holds while it waits, for the cleanup of a cancel. */
static __thread struct {
	fsaio_ctx_t *needs;     /* counted in fsaio__drive_need of that context */
	bool waiter, driver;
} holding_wait;

void px__wait_begin(void)
{
	atomic_fetch_add(&waiters, 1);
}

void px__wait_end(void)
{
	atomic_fetch_sub(&waiters, 1);
}

void px__wait_fork_child(void)
{
	atomic_store(&waiters, 0);
	atomic_store(&drivers, 0);
}

/* After every completion, its status stored. kick_ring is false for one
 * that PX_PLAIN's ring completes in its callback: the engine itself kicks
 * a thread waiting in that ring out of its wait after the callback. */
void px__wake(bool kick_ring)
{
	atomic_fetch_add(&px__seq, 1);
	if (atomic_load(&waiters))
		syscall(SYS_futex, &px__seq, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
	if (kick_ring && atomic_load(&drivers)) {
		fsaio_ctx_t *ring = px__engine_now(PX_PLAIN);

		if (ring)
			fsaio__drive_kick(ring);
	}
}

/* The cancellation type the caller had, across the cancellable sleep. Not
 * on the stack: a cancel unwinds the sleeping frame without returning,
 * and a sanitizer would find its poisoned slots under the cleanup. */
static __thread int saved_type;

int px__wait(uint32_t seen, const struct timespec *deadline, bool cancellable)
{
	int saved = errno;
	long r;
	int e;

	if (cancellable)
		pthread_setcanceltype(PTHREAD_CANCEL_ASYNCHRONOUS, &saved_type);
	r = syscall(SYS_futex, &px__seq, FUTEX_WAIT_BITSET_PRIVATE, seen, deadline,
		    NULL, FUTEX_BITSET_MATCH_ANY);
	e = errno;
	if (cancellable)
		pthread_setcanceltype(saved_type, &saved_type);

	errno = saved;
	if (r == 0 || e == EAGAIN)
		return 0;
	return -e;
}

static int64_t ns_of(const struct timespec *t)
{
	return t ? (int64_t)t->tv_sec * 1000000000LL + t->tv_nsec : INT64_MAX;
}

static int64_t mono_ns(void)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return ns_of(&now);
}

/* Until px__seq moves from seen: the waiter reaps PX_PLAIN's io_uring
 * ring itself when it can (its completions then reach it without a
 * thread hop; px__wake kicks it out for the others), else sleeps on the
 * futex while the ring's thread carries the ring. 0, -ETIMEDOUT or -EINTR.
 * The ring's calls run with cancellation disabled, but for its wait. */
static int wait_once(uint32_t seen, const struct timespec *deadline)
{
	fsaio_ctx_t *ring = px__engine_now(PX_PLAIN);
	int r = -EAGAIN;

	if (ring) {
		int64_t dl = ns_of(deadline);
		int state;

		if (dl != INT64_MAX && mono_ns() >= dl)
			return -ETIMEDOUT;
		holding_wait.driver = true;
		atomic_fetch_add(&drivers, 1);
		pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &state);
		if (atomic_load(&px__seq) != seen)
			r = 0;
		else if (state == PTHREAD_CANCEL_ENABLE)
			r = fsaio__drive_cancellable(ring, &px__seq, seen, dl);
		else
			r = fsaio__drive(ring, &px__seq, seen, dl);
		pthread_setcancelstate(state, &state);
		atomic_fetch_sub(&drivers, 1);
		holding_wait.driver = false;
		if (r != -EAGAIN)
			return r == 0 && dl != INT64_MAX && mono_ns() >= dl ? -ETIMEDOUT : r;
		fsaio__drive_need(ring, 1);
		holding_wait.needs = ring;
	}
	holding_wait.waiter = true;
	atomic_fetch_add(&waiters, 1);
	r = atomic_load(&px__seq) != seen ? 0 : px__wait(seen, deadline, true);
	atomic_fetch_sub(&waiters, 1);
	holding_wait.waiter = false;
	if (ring) {
		holding_wait.needs = NULL;
		fsaio__drive_need(ring, -1);
	}
	return r;
}

/* A waiter cancelled in wait_once gives back what it held. */
static void wait_cleanup(void *arg)
{
	(void)arg;
	if (holding_wait.driver)
		atomic_fetch_sub(&drivers, 1);
	if (holding_wait.waiter)
		atomic_fetch_sub(&waiters, 1);
	if (holding_wait.needs)
		fsaio__drive_need(holding_wait.needs, -1);
	holding_wait.needs = NULL;
	holding_wait.driver = holding_wait.waiter = false;
}

static int wait_loop(bool (*done)(void *), void *arg, const struct timespec *deadline)
{
	for (;;) {
		uint32_t seen = atomic_load(&px__seq);
		int r;

		if (done(arg))
			return 0;
		r = wait_once(seen, deadline);
		if (r)
			return r;
	}
}

int px__wait_until(bool (*done)(void *), void *arg, const struct timespec *deadline)
{
	int ret;

	pthread_cleanup_push(wait_cleanup, NULL);
	ret = wait_loop(done, arg, deadline);
	pthread_cleanup_pop(0);
	return ret;
}
