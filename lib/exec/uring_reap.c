/* SPDX-License-Identifier: MIT */
/*
 * DESIGN: who turns the ring's CQEs into completions.
 *
 * Whoever holds u->owner harvests: a caller waiting for events
 * (fsaio__uring_drive, from fsaio_getevents or a drop-in's getevents) or
 * the completion thread. A caller that waits sleeps in io_uring_enter itself,
 * so the kernel's completion wakes it directly and a completion costs no
 * thread hop and no futex wake. The thread carries the ring when nobody
 * drives: callback contexts, eventfd users, programs that read their events
 * from memory, a request continued after its caller stopped waiting.
 *
 * The thread steps back while callers drive: it gives up owner when a
 * driver arrives (the driver kicks it out of io_uring_enter with a NOP) and
 * parks for STEP_BACK_NS at a time while drive_seq keeps moving. A caller
 * that only polls (no time to wait for the owner) moves drive_seq and
 * kicks it too, so a program that polls reaps in its own thread from its
 * next poll on, instead of through the thread for as long as it polls. Anyone
 * who waits for the ring without driving (needs > 0: a sleeper of the
 * completion queue, an eventfd or a cancel) wakes it, and it does not
 * step back while they wait. So completions arrive whether or not a
 * caller drives; without a driver or a waiter that needs it, at most
 * STEP_BACK_NS late.
 *
 * A driver waiting in the ring sets x->waiter; the owner of the word it
 * waits on, posting a completion from another thread (a worker, the
 * poller), kicks it with a NOP (fsaio__uring_kick; see uring.h).
 *
 * Calls down only: into uring.c (SQ side, slots, on_req, waking the
 * thread); what is harvested leaves through x->ops.
 */
#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <liburing.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "monoclock.h"
#include "uring_ring.h"

/* How long the thread stays parked, at a time, while callers drive. */
#define STEP_BACK_NS 10000000LL

/* FUTEX_WAIT for at most ns (< 0: no limit): 0, or -errno. */
static int futex_wait(_Atomic uint32_t *w, uint32_t val, int64_t ns)
{
	struct timespec rel = { .tv_sec = ns / 1000000000, .tv_nsec = ns % 1000000000 };

	if (syscall(SYS_futex, w, FUTEX_WAIT_PRIVATE, val, ns < 0 ? NULL : &rel, NULL, 0) < 0)
		return -errno;
	return 0;
}

static void futex_wake(_Atomic uint32_t *w, int n)
{
	syscall(SYS_futex, w, FUTEX_WAKE_PRIVATE, n, NULL, NULL, 0);
}

/* A NOP whose CQE wakes whoever waits in the ring. */
static void kick(struct fsaio__uring *u)
{
	struct io_uring_sqe *sqe;

	pthread_mutex_lock(&u->sq_lock);
	if (!u->stopping && (sqe = fsaio__ring_get_sqe(u))) {
		io_uring_prep_nop(sqe);
		io_uring_sqe_set_data(sqe, (void *)(uintptr_t)UD_KICK);
		(void)fsaio__ring_flush(u);
	}
	pthread_mutex_unlock(&u->sq_lock);
}

/* Turn every CQE there is into its completion or continuation; how many
 * were requests' (counted before their events are posted, so a caller that
 * has its events sees them counted). Rounds of HARVEST_MAX CQEs: each ends
 * by giving back the finished requests' slots, then posting their events.
 * Under owner. */
static unsigned harvest(struct fsaio__uring *u, bool by_caller)
{
	struct fsaio__uring_exec *x = u->x;
	struct fsaio__batch b = { .n = 0 };
	struct io_uring_cqe *cqes[HARVEST_MAX];
	unsigned n, reqs = 0;
	bool any = false;

	do {
		n = io_uring_peek_batch_cqe(&u->ring, cqes, HARVEST_MAX);
		for (unsigned i = 0; i < n; i++) {
			uintptr_t ud = (uintptr_t)io_uring_cqe_get_data(cqes[i]);
			int res = cqes[i]->res;

			if ((ud & TAG_MASK) == TAG_CANCEL) {
				struct fsaio__cancel_wait *w = (void *)(ud & ~(uintptr_t)TAG_MASK);

				/* The canceller set w up and submitted under
				 * sq_lock: taking it orders that before us. */
				pthread_mutex_lock(&u->sq_lock);
				pthread_mutex_unlock(&u->sq_lock);
				w->res = res;
				atomic_store_explicit(&w->done, 1, memory_order_release);
				futex_wake(&w->done, 1);
			} else if ((ud & TAG_MASK) == TAG_BIND) {
				/* Only a failed FILES_UPDATE posts: its request's
				 * CQE (-EBADF, on the emptied slot) follows and
				 * reads this. */
				struct fsaio_req *r = (struct fsaio_req *)(ud & ~(uintptr_t)TAG_MASK);

				/* Pairs with the release store of WAITING in
				 * queue(), after the submitter's last write of
				 * exec_ (the kernel orders it too; TSan knows
				 * only this). */
				(void)fsaio__state_get(r);
				r->exec_ |= (uint64_t)(uint32_t)-res << 32;
			} else if (ud && !(ud & TAG_MASK)) {
				reqs++;
				if (by_caller)
					FSAIO__COUNT(x->st, ring_reaped_caller, 1);
				else
					FSAIO__COUNT(x->st, ring_reaped_thread, 1);
				fsaio__ring_on_req(u, (struct fsaio_req *)ud, res, &b);
			}
		}
		io_uring_cq_advance(&u->ring, n);
		fsaio__ring_release_slots(u);
		if (b.n)
			x->ops->flush(x->arg, &b);
		any |= n != 0;
	} while (n == HARVEST_MAX);
	/* What submit calls held (uring_doorbell.c) enters with a harvest:
	 * its caller may be the one it waits for. */
	if (any)
		fsaio__uring_flush(x);
	return reqs;
}

static bool take_owner(struct fsaio__uring *u, uint32_t who, uint32_t *was)
{
	*was = OWN_NONE;
	return atomic_compare_exchange_strong(&u->owner, was, who);
}

static void release_owner(struct fsaio__uring *u)
{
	atomic_store(&u->owner, OWN_NONE);
	if (atomic_load(&u->owner_waiters))
		futex_wake(&u->owner, INT_MAX);
}

/* Sleep while owner is still was, at most ns (< 0: no limit). */
static int wait_owner(struct fsaio__uring *u, uint32_t was, int64_t ns)
{
	int ret;

	atomic_fetch_add(&u->owner_waiters, 1);
	ret = futex_wait(&u->owner, was, ns);
	atomic_fetch_sub(&u->owner_waiters, 1);
	return ret;
}

/* Whether the thread should leave the ring to the callers. */
static bool step_back(struct fsaio__uring *u, uint32_t seen_drive)
{
	return !atomic_load(&u->stop) && atomic_load(&u->x->needs) <= 0 &&
	       (atomic_load(&u->drivers) || atomic_load(&u->drive_seq) != seen_drive);
}

static void park(struct fsaio__uring *u)
{
	uint32_t seen = atomic_load(&u->park);

	atomic_store(&u->parked, true);
	/* Dekker with fsaio__uring_need and stop: they change needs or
	 * stop, then read parked. */
	if (atomic_load(&u->x->needs) <= 0 && !atomic_load(&u->stop))
		(void)futex_wait(&u->park, seen, STEP_BACK_NS);
	atomic_store(&u->parked, false);
}

/* Slots that may still hold files, and nothing in the ring. */
static bool idle_dirty(struct fsaio__uring *u)
{
	return atomic_load_explicit(&u->dirty, memory_order_relaxed) &&
	       !atomic_load_explicit(&u->inflight, memory_order_relaxed);
}

/* Drop the files free slots hold once the ring stayed idle from one look
 * to the next (STEP_BACK_NS apart): a clear per request would cost a
 * system call each at depth 1. *gen: queued_gen at the last look. */
static void idle_chores(struct fsaio__uring *u, uint32_t *gen)
{
	uint32_t g = atomic_load_explicit(&u->queued_gen, memory_order_relaxed);

	if (idle_dirty(u) && g == *gen)
		fsaio__ring_clear_slots(u);
	*gen = g;
}

void *fsaio__ring_thread(void *arg)
{
	struct fsaio__uring *u = arg;
	uint32_t seen_drive = atomic_load(&u->drive_seq), was, gen = 0;

	for (;;) {
		if (atomic_load(&u->stop) && !atomic_load(&u->inflight))
			break;
		if (step_back(u, seen_drive)) {
			seen_drive = atomic_load(&u->drive_seq);
			park(u);
			/* Back from a step back: what submit calls held enters. */
			fsaio__uring_flush(u->x);
			idle_chores(u, &gen);
			continue;
		}
		if (!take_owner(u, OWN_THREAD, &was)) {
			/* A caller drives while a waiter needs the thread: take
			 * over when it leaves. */
			(void)wait_owner(u, was, STEP_BACK_NS);
			continue;
		}
		for (;;) {
			struct io_uring_cqe *cqe;
			struct __kernel_timespec ts = { .tv_nsec = STEP_BACK_NS };

			harvest(u, false);
			if (atomic_load(&u->stop) ? !atomic_load(&u->inflight) :
			    step_back(u, seen_drive))
				break;
			/* Nothing held back (uring_doorbell.c) waits with the
			 * thread: Dekker with a submit call that holds. */
			atomic_store(&u->in_wait, true);
			fsaio__ring_handshake(u);
			fsaio__uring_flush(u->x);
			/* Idle with files held: look again after a while. */
			if (idle_dirty(u) && u->ext_arg) {
				gen = atomic_load_explicit(&u->queued_gen, memory_order_relaxed);
				if (io_uring_wait_cqe_timeout(&u->ring, &cqe, &ts) == -ETIME)
					idle_chores(u, &gen);
			} else {
				if (idle_dirty(u))
					fsaio__ring_clear_slots(u);
				(void)io_uring_wait_cqe(&u->ring, &cqe);
			}
			atomic_store(&u->in_wait, false);
		}
		release_owner(u);
		atomic_store(&u->back_asked, false);
		seen_drive = atomic_load(&u->drive_seq);
	}
	return NULL;
}

/* Wait in the ring for a CQE until deadline: 0, -EINTR or -ETIME. The
 * arguments are the thread's, not on the stack: a cancellable wait is
 * unwound without returning (wait_ring_cancellable), and a sanitizer's
 * marks of dead stack slots would outlive it. */
static __thread struct io_uring_cqe *wait_cqe;
static __thread struct __kernel_timespec wait_ts;

static int wait_ring(struct fsaio__uring *u, int64_t deadline)
{
	struct io_uring_cqe **cqe = &wait_cqe;
	struct __kernel_timespec *ts = &wait_ts;
	int64_t left;

	if (deadline == INT64_MAX)
		return io_uring_wait_cqe(&u->ring, cqe);
	left = deadline - fsaio__mono_ns();
	if (left <= 0)
		return -ETIME;
	ts->tv_sec = left / 1000000000;
	ts->tv_nsec = left % 1000000000;
	return io_uring_wait_cqe_timeout(&u->ring, cqe, ts);
}

/* The caller's cancellation state and type across a cancellable wait.
 * Not on the stack: a cancel unwinds the waiting frames without returning. */
static __thread int caller_cancel_state, caller_cancel_type;

/* A driver cancelled in its wait leaves the ring to the others. */
static void wait_unwound(void *arg)
{
	struct fsaio__uring *u = arg;

	atomic_store(&u->x->waiter, false);
	release_owner(u);
	atomic_fetch_add(&u->drive_seq, 1);
	atomic_fetch_sub(&u->drivers, 1);
}

/* wait_ring as a cancellation point: asynchronous cancellation enabled
 * around it alone (nothing else runs there), wait_unwound as cleanup. */
static int wait_ring_cancellable(struct fsaio__uring *u, int64_t deadline)
{
	int ret;

	pthread_cleanup_push(wait_unwound, u);
	pthread_setcanceltype(PTHREAD_CANCEL_ASYNCHRONOUS, &caller_cancel_type);
	pthread_setcancelstate(PTHREAD_CANCEL_ENABLE, &caller_cancel_state);
	ret = wait_ring(u, deadline);
	pthread_setcancelstate(caller_cancel_state, &caller_cancel_state);
	pthread_setcanceltype(caller_cancel_type, &caller_cancel_type);
	pthread_cleanup_pop(0);
	return ret;
}

/* Harvest; with nothing harvested or delivered since seen, wait once. */
static int reap_once(struct fsaio__uring *u, const _Atomic uint32_t *word, uint32_t seen,
		     int64_t deadline, bool cancellable)
{
	_Atomic bool *waiter = &u->x->waiter;
	int ret;

	if (harvest(u, true) || !deadline || atomic_load(word) != seen ||
	    !atomic_load(&u->inflight))
		return 0;
	/* Dekker with the word's owner (uring.h, waiter): it moves the word,
	 * then reads waiter. And with a submit call that holds its SQEs
	 * (uring_doorbell.c): nothing held waits with the caller. */
	atomic_store(waiter, true);
	fsaio__ring_handshake(u);
	fsaio__uring_flush(u->x);
	if (atomic_load(word) != seen) {
		atomic_store(waiter, false);
		return 0;
	}
	ret = cancellable ? wait_ring_cancellable(u, deadline) : wait_ring(u, deadline);
	atomic_store(waiter, false);
	harvest(u, true);
	return ret == -EINTR ? -EINTR : 0;
}

static int drive(struct fsaio__uring_exec *x, const _Atomic uint32_t *word, uint32_t seen,
		 int64_t deadline, bool cancellable)
{
	struct fsaio__uring *u = fsaio__ring_live(x);
	uint32_t was;
	int ret = 0;

	fsaio__uring_back(x);
	if (!u || !u->ext_arg || !atomic_load(&u->inflight))
		return -EAGAIN;
	atomic_fetch_add(&u->drivers, 1);
	while (!take_owner(u, OWN_CALLER, &was)) {
		int64_t left = -1;

		/* Another caller drives (it posts what comes), or the thread
		 * stays for a waiter: sleep the caller's own way. */
		if (was == OWN_CALLER || !deadline || atomic_load(&x->needs) > 0 ||
		    atomic_load(&u->stop)) {
			/* A poll cannot wait for the thread to leave: it asks,
			 * and a later poll finds the ring free. */
			if (was == OWN_THREAD && !deadline && atomic_load(&x->needs) <= 0 &&
			    !atomic_load(&u->stop)) {
				atomic_fetch_add(&u->drive_seq, 1);
				if (!atomic_exchange(&u->back_asked, true))
					kick(u);
			}
			ret = -EAGAIN;
			goto out;
		}
		if (deadline != INT64_MAX && (left = deadline - fsaio__mono_ns()) <= 0)
			goto out;
		/* The thread waits in the ring for nobody: kicked, it steps
		 * back. */
		kick(u);
		ret = wait_owner(u, OWN_THREAD, left);
		if (ret == -EINTR)
			goto out;
		if (ret == -ETIMEDOUT) {
			ret = 0;
			goto out;
		}
		ret = 0;
	}
	ret = reap_once(u, word, seen, deadline, cancellable);
	release_owner(u);
	atomic_fetch_add(&u->drive_seq, 1);
out:
	atomic_fetch_sub(&u->drivers, 1);
	return ret;
}

int fsaio__uring_drive(struct fsaio__uring_exec *x, const _Atomic uint32_t *word, uint32_t seen,
		       int64_t deadline)
{
	return drive(x, word, seen, deadline, false);
}

int fsaio__uring_drive_cancellable(struct fsaio__uring_exec *x, const _Atomic uint32_t *word,
				   uint32_t seen, int64_t deadline)
{
	return drive(x, word, seen, deadline, true);
}

void fsaio__uring_kick(struct fsaio__uring_exec *x)
{
	struct fsaio__uring *u = fsaio__ring_live(x);

	if (u)
		kick(u);
}
