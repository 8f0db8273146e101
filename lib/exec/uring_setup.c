/* SPDX-License-Identifier: MIT */
/*
 * DESIGN: the io_uring executor's ring comes and goes: created on first
 * use by fsaio__uring_queue (sized for the depth it was given, with a
 * sparse fixed-file table of one slot per request in flight and its
 * completion thread), taken down at stop (cancel what has not reached the
 * device, wait for the rest, join the thread; it carries what is left
 * whoever carried the ring before), and forgotten in a forked child.
 * Whether io_uring can be had at all is found once per process.
 *
 * The top of the executor's files: it calls down into uring_reap.c (the
 * thread) and uring.c (the SQ side), which never call it.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "thread.h"
#include "uring_ring.h"

/* Process-wide: 0 unknown, 1 io_uring_setup worked once, -1 denied. */
static _Atomic int uring_sys;

static bool sysctl_disabled(void)
{
	char c = '0';
	int fd = open("/proc/sys/kernel/io_uring_disabled", O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return false;   /* older kernels have no such switch */
	if (read(fd, &c, 1) != 1)
		c = '0';
	close(fd);
	/* 1 lets root and io_uring_group in: setup tells us with EPERM. */
	return c == '2';
}

static struct fsaio__uring *ring_create(struct fsaio__uring_exec *x)
{
	struct io_uring_params p;
	struct fsaio__uring *u;
	unsigned sq = SQ_MAX, cq;
	int ret;

	if (atomic_load_explicit(&uring_sys, memory_order_relaxed) < 0)
		return NULL;
	if (sysctl_disabled()) {
		atomic_store_explicit(&uring_sys, -1, memory_order_relaxed);
		return NULL;
	}
	u = calloc(1, sizeof(*u));
	if (!u)
		return NULL;
	/* The SQ is drained at every submit, so a small one does (three SQEs
	 * a request: two FILES_UPDATEs and itself); the CQ
	 * holds one CQE per request in flight (at most queue_depth), and
	 * beyond CQ_MAX the kernel's overflow list keeps them (FEAT_NODROP). */
	while (sq > 8 && sq / 2 >= 3 * x->depth)
		sq /= 2;
	cq = 2 * sq;
	while (cq < x->depth && cq < CQ_MAX)
		cq *= 2;
	/* A request's completion is task work of the thread that submitted
	 * it, by default run at once, by an IPI if that thread is running.
	 * Where the thread relays the completions (someone relies on it as
	 * the ring is made: an eventfd reader, RESFD requests), the submitter
	 * only feeds it, so COOP_TASKRUN: the submitter runs the work at its
	 * next entry into the kernel (a system call, or an interrupt such as
	 * the completion's own), and is still woken if asleep. A submitter
	 * that waits in the ring runs its own work either way. Before 5.19
	 * the flag is refused. */
	for (unsigned coop = atomic_load(&x->needs) > 0 ? IORING_SETUP_COOP_TASKRUN : 0;;
	     coop = 0) {
		memset(&p, 0, sizeof(p));
		p.flags = IORING_SETUP_CQSIZE | IORING_SETUP_CLAMP | coop;
		p.cq_entries = cq;
		ret = io_uring_queue_init_params(sq, &u->ring, &p);
		if (ret != -EINVAL || !coop)
			break;
	}
	if (ret < 0) {
		if (ret == -ENOSYS || ret == -EPERM || ret == -EACCES)
			atomic_store_explicit(&uring_sys, -1, memory_order_relaxed);
		free(u);
		return NULL;
	}
	if (!(p.features & IORING_FEAT_SUBMIT_STABLE) || !(p.features & IORING_FEAT_NODROP)) {
		/* Kernels before 5.5: prep()'s stack iovecs would not be safe. */
		io_uring_queue_exit(&u->ring);
		free(u);
		atomic_store_explicit(&uring_sys, -1, memory_order_relaxed);
		return NULL;
	}
	atomic_store_explicit(&uring_sys, 1, memory_order_relaxed);
	u->x = x;
	u->ext_arg = p.features & IORING_FEAT_EXT_ARG;
	fsaio__ring_slots_init(u, x->depth);
	pthread_mutex_init(&u->sq_lock, NULL);
	ret = fsaio__thread_start(&u->thread, 0, fsaio__ring_thread, u);
	if (ret) {
		pthread_mutex_destroy(&u->sq_lock);
		io_uring_queue_exit(&u->ring);
		fsaio__ring_slots_free(u);
		free(u);
		return NULL;
	}
	pthread_setname_np(u->thread, "fsaio-uring");
	return u;
}

/* The ring, creating it on first use; NULL while another thread creates it
 * or when io_uring cannot be had. */
static struct fsaio__uring *ring_get(struct fsaio__uring_exec *x)
{
	struct fsaio__uring *u = atomic_load_explicit(&x->ring, memory_order_acquire);
	struct fsaio__uring *expect = NULL;

	if (u == URING_CREATING || u == URING_UNAVAILABLE)
		return NULL;
	if (u)
		return u;
	if (!atomic_compare_exchange_strong_explicit(&x->ring, &expect, URING_CREATING,
						     memory_order_acquire, memory_order_acquire))
		return NULL;
	u = ring_create(x);
	atomic_store_explicit(&x->ring, u ? u : URING_UNAVAILABLE, memory_order_release);
	return u;
}

void fsaio__uring_init(struct fsaio__uring_exec *x, unsigned depth,
		       const struct fsaio__uring_ops *ops, void *arg, struct fsaio__counters *st)
{
	x->ops = ops;
	x->arg = arg;
	x->st = st;
	x->depth = depth;
	atomic_init(&x->ring, NULL);
	atomic_init(&x->needs, 0);
	atomic_init(&x->waiter, false);
}

int fsaio__uring_queue(struct fsaio__uring_exec *x, struct fsaio_req *r, enum fsaio__enter when)
{
	struct fsaio__uring *u = ring_get(x);

	if (!u)
		return -EOPNOTSUPP;
	r->hints_ &= ~(uint64_t)FSAIO__HINT_EFAULT_RETRY;
	return fsaio__ring_queue(u, r, false, when);
}

bool fsaio__uring_usable(struct fsaio__uring_exec *x)
{
	struct fsaio__uring *u = atomic_load_explicit(&x->ring, memory_order_acquire);

	if (u == URING_UNAVAILABLE)
		return false;
	return atomic_load_explicit(&uring_sys, memory_order_relaxed) >= 0;
}

void fsaio__uring_stop(struct fsaio__uring_exec *x)
{
	struct fsaio__uring *u = fsaio__ring_live(x);
	struct io_uring_sqe *sqe;

	if (!u)
		return;
	pthread_mutex_lock(&u->sq_lock);
	u->stopping = true;
	atomic_store(&u->stop, true);
	/* Take back what has not reached the device; the rest is waited for. */
	sqe = fsaio__ring_get_sqe(u);
	if (sqe) {
		io_uring_prep_cancel(sqe, NULL, IORING_ASYNC_CANCEL_ANY);
		io_uring_sqe_set_data(sqe, (void *)(uintptr_t)UD_IGNORE);
	}
	sqe = fsaio__ring_get_sqe(u);
	if (sqe) {
		io_uring_prep_nop(sqe);
		io_uring_sqe_set_data(sqe, (void *)(uintptr_t)UD_STOP);
	}
	(void)fsaio__ring_flush(u);
	pthread_mutex_unlock(&u->sq_lock);
	/* The NOP wakes a thread waiting in the ring; a parked one wakes here. */
	fsaio__ring_wake_thread(u);
	pthread_join(u->thread, NULL);
	/* The ring's own teardown runs later, in the kernel's workqueue: the
	 * files its slots hold are let go here, before destroy returns. */
	fsaio__ring_clear_slots(u);
	io_uring_queue_exit(&u->ring);
	pthread_mutex_destroy(&u->sq_lock);
	atomic_store_explicit(&x->ring, NULL, memory_order_relaxed);
	fsaio__ring_slots_free(u);
	free(u);
}

void fsaio__uring_forget(struct fsaio__uring_exec *x)
{
	struct fsaio__uring *u = atomic_load_explicit(&x->ring, memory_order_relaxed);

	if (!u || u == URING_CREATING || u == URING_UNAVAILABLE)
		return;
	/* The parent's thread does not exist here: unmap and close only. */
	io_uring_queue_exit(&u->ring);
	fsaio__ring_slots_free(u);
	free(u);
}
