/* SPDX-License-Identifier: MIT */
/*
 * DESIGN: the io_uring executor's ring, request by request.
 *
 * Owns: the SQ side of the ring (struct fsaio__uring_exec's, created on
 * first use by uring_setup.c), what one CQE of a request means (on_req),
 * cancellation, the waiters that rely on the ring's thread (needs) and
 * waking that thread. Who harvests the CQEs (a caller waiting for events,
 * or the completion thread fsaio-uring) is uring_reap.c's; it calls down
 * into this file, never the other way. A short result or an interruption
 * nobody asked for is continued from req->done_ by whoever harvests it, so
 * a request in the ring is reported exactly once (ops->done, or ops->punt
 * when only a worker can go on).
 *
 * Binding: each request holds a fixed-file slot (uring_slots.c) from its
 * first SQE to its completion, so every SQE of it reaches the file it named.
 * The slot gets its file in the enter of the request's submit call, or
 * before that call returns when its SQE may wait for a later enter
 * (uring_doorbell.c): either way the fd is taken at submit.
 *
 * Locks: sq_lock serialises the SQ side, the slots and `stopping`; it is a
 * leaf (completions are posted after it is dropped). The CQ side belongs
 * to the holder of u->owner (uring_reap.c). x->ring goes NULL ->
 * CREATING -> ring (or UNAVAILABLE) by CAS; a submitter that sees CREATING
 * is refused, and carries that request another way.
 *
 * Cancel: an async cancel, waited for (0: the request ends -ECANCELED;
 * -EALREADY/-ENOENT: -EBUSY). uring.cancels lists the caller's cancels: any
 * other -ECANCELED or -EINTR (io_uring ends io-wq work of a submitting
 * thread that exits) is resubmitted, and so is a first -EFAULT (task work of
 * an exiting submitter ends that way); a second -EFAULT is real.
 *
 * Unavailable io_uring (io_uring_disabled = 2, or ENOSYS/EPERM/EACCES from
 * setup) is found once per process; every later ring refuses at once.
 * Whether a request comes here at all is the owner's decision (carry.c);
 * the ring only queues what it is given.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <liburing.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "uring_ring.h"

/* Fill sqe for what remains of r. Called under sq_lock: the iovec copy in
 * tmp need only live until io_uring_submit returns (IORING_FEAT_SUBMIT_STABLE,
 * checked at setup). tmp is used only for a vectored r with done_ > 0 (NULL
 * otherwise, queue_iov_rest). */
static void prep(struct io_uring_sqe *sqe, struct fsaio_req *r, struct iovec *tmp)
{
	/* RWF_HIPRI needs an IOPOLL ring (EINVAL otherwise): it is a hint.
	 * RWF_DONTCACHE goes on with the rest. */
	int rwf = r->rw_flags & ~RWF_HIPRI;
	uint64_t off = (uint64_t)r->offset + r->done_;
	int fd = fsaio__ring_slot_of(r) ? (int)fsaio__ring_slot_of(r) - 1 : fsaio__fd(r);

	if (!fsaio__is_rw(r)) {
		io_uring_prep_fsync(sqe, fd, r->opcode == FSAIO_OP_FDSYNC ?
				    IORING_FSYNC_DATASYNC : 0);
	} else if (!fsaio__is_vectored(r)) {
		char *p = (char *)r->buf + r->done_;
		unsigned n = r->len - r->done_ > UINT_MAX ? UINT_MAX & ~4095u :
			     (unsigned)(r->len - r->done_);

		if (fsaio__is_write(r))
			io_uring_prep_write(sqe, fd, p, n, off);
		else
			io_uring_prep_read(sqe, fd, p, n, off);
		sqe->rw_flags = rwf;
	} else {
		const struct iovec *iov;
		int cnt = fsaio__iov_rest(r, tmp, FSAIO__IOV_MAX, &iov);

		if (fsaio__is_write(r))
			io_uring_prep_writev(sqe, fd, iov, (unsigned)cnt, off);
		else
			io_uring_prep_readv(sqe, fd, iov, (unsigned)cnt, off);
		sqe->rw_flags = rwf;
	}
	/* The request's I/O priority, checked at submit; io_uring checks it
	 * again (ioprio_check_cap) and gives it to the kiocb. */
	if (fsaio__is_rw(r))
		sqe->ioprio = r->ioprio;
	if (fsaio__ring_slot_of(r))
		sqe->flags |= IOSQE_FIXED_FILE;
	io_uring_sqe_set_data(sqe, r);
}

/* A free SQE; with a full SQ, what is queued is submitted first. */
struct io_uring_sqe *fsaio__ring_get_sqe(struct fsaio__uring *u)
{
	struct io_uring_sqe *sqe;

	while (!(sqe = io_uring_get_sqe(&u->ring))) {
		int ret = io_uring_submit(&u->ring);

		if (ret < 0 && ret != -EINTR && ret != -EAGAIN && ret != -EBUSY)
			return NULL;
	}
	return sqe;
}

/* Everything queued has been handed to the kernel: nothing pending, held,
 * or bound by fd in the SQ. Under sq_lock. */
static void sq_handed_over(struct fsaio__uring *u)
{
	atomic_store_explicit(&u->pending, false, memory_order_relaxed);
	atomic_store_explicit(&u->held, 0, memory_order_relaxed);
	atomic_store_explicit(&u->held_bytes, 0, memory_order_relaxed);
	atomic_store_explicit(&u->must_enter, false, memory_order_relaxed);
}

/* Submit what is prepared. The kernel consumes SQEs it cannot start with an
 * error CQE, so only a refused io_uring_enter leaves them in the SQ; EINTR,
 * EAGAIN (no memory for now) and EBUSY (CQ overflow backlog) go round. */
int fsaio__ring_flush(struct fsaio__uring *u)
{
	for (;;) {
		int ret = io_uring_submit(&u->ring);

		if (ret >= 0 && !io_uring_sq_ready(&u->ring)) {
			sq_handed_over(u);
			return 0;
		}
		if (ret < 0 && ret != -EINTR && ret != -EAGAIN && ret != -EBUSY)
			return ret;
	}
}

static void futex_wake(_Atomic uint32_t *w, int n)
{
	syscall(SYS_futex, w, FUTEX_WAKE_PRIVATE, n, NULL, NULL, 0);
}

/* Wake the thread if it parks (uring_reap.c, park): park moves first. */
void fsaio__ring_wake_thread(struct fsaio__uring *u)
{
	atomic_fetch_add(&u->park, 1);
	if (atomic_load(&u->parked))
		futex_wake(&u->park, 1);
}

/* A request entered the ring: while a waiter relies on the thread, a
 * parked thread must carry it. Dekker with fsaio__uring_need: inflight was
 * raised first, then needs is read. */
static void wake_for_waiters(struct fsaio__uring *u)
{
	if (atomic_load(&u->x->needs) > 0 && atomic_load(&u->parked))
		fsaio__ring_wake_thread(u);
}

/* The bytes r's SQE moves: what a held batch weighs (uring_doorbell.c). */
static uint64_t sqe_bytes(const struct fsaio_req *r)
{
	return fsaio__is_rw(r) ? fsaio__total(r) - r->done_ : 0;
}

/* r's SQE, taken under sq_lock: none once destroy began (-ESHUTDOWN). A
 * first SQE comes with its FILES_UPDATEs, all in one submission: room for
 * three (-EAGAIN) and r's slot, bound now when the SQE may be held past the
 * call (may_hold, and the held doorbell agrees for bytes), else by the
 * SQEs left in bind[] for the enter (must_enter). 0 or -errno. */
static int take_sqe(struct fsaio__uring *u, struct fsaio_req *r, bool again, bool may_hold,
		    uint64_t bytes, struct io_uring_sqe **sqe, struct io_uring_sqe *bind[2])
{
	bool hold;
	int ret;

	if (u->stopping)
		return -ESHUTDOWN;
	if (!again && io_uring_sq_space_left(&u->ring) < 3 && fsaio__ring_flush(u) < 0)
		return -EAGAIN;
	if (!again)
		r->exec_ = 0;
	hold = may_hold && fsaio__ring_may_hold(u, bytes);
	if (!again && (ret = fsaio__ring_bind_slot(u, r, hold, bind)))
		return ret;
	*sqe = io_uring_get_sqe(&u->ring);
	if (!*sqe)
		return -EAGAIN;         /* cannot happen: there was room for three */
	return 0;
}

/* Leave r's prepared SQE for a later enter, under sq_lock: pending, held
 * and weighed by bytes. A batch enters at FSAIO__HOLD_BYTES
 * (uring_doorbell.c): the reads it holds would wait in its plug while the
 * rest are built; a refused enter leaves them for the end of the call. */
static void leave_queued(struct fsaio__uring *u, struct io_uring_sqe *bind[2], uint64_t bytes)
{
	if (bind[1])
		atomic_store_explicit(&u->must_enter, true, memory_order_relaxed);
	atomic_store_explicit(&u->pending, true, memory_order_relaxed);
	atomic_fetch_add_explicit(&u->held, 1, memory_order_relaxed);
	if (atomic_fetch_add_explicit(&u->held_bytes, bytes, memory_order_relaxed) + bytes >=
	    FSAIO__HOLD_BYTES)
		(void)fsaio__ring_flush(u);
}

/* An SQE the kernel did not consume, under sq_lock: made a harmless NOP for
 * a later submit, with the FILES_UPDATEs of a first SQE, whose slot goes
 * back to the free list. */
static void unqueue(struct fsaio__uring *u, struct fsaio_req *r, struct io_uring_sqe *sqe,
		    struct io_uring_sqe *bind[2])
{
	io_uring_prep_nop(sqe);
	io_uring_sqe_set_data(sqe, NULL);
	if (bind[1]) {
		for (int i = 0; i < 2; i++) {
			io_uring_prep_nop(bind[i]);
			io_uring_sqe_set_data(bind[i], NULL);
		}
		u->free_slots[u->nfree++] = fsaio__ring_slot_of(r) - 1;
		r->exec_ = 0;
	}
}

/* Queue r's remainder, entered as when says; tmp: room for a vectored
 * remainder's copy of its iovecs (NULL when r has none), which must live
 * until the submit that consumes it, so such an r is entered here. */
static int queue(struct fsaio__uring *u, struct fsaio_req *r, bool again,
		 enum fsaio__enter when, struct iovec *tmp)
{
	struct io_uring_sqe *sqe, *bind[2] = { NULL, NULL };
	bool defer = when != FSAIO__ENTER_NOW;
	uint64_t bytes;
	int ret;

	/* Read before r is WAITING: from then on a harvester may write it. */
	bytes = defer ? sqe_bytes(r) : 0;
	pthread_mutex_lock(&u->sq_lock);
	ret = take_sqe(u, r, again, defer && when == FSAIO__ENTER_MAY_HOLD, bytes, &sqe, bind);
	if (ret) {
		pthread_mutex_unlock(&u->sq_lock);
		return ret;
	}
	prep(sqe, r, tmp);
	if (!again) {
		atomic_fetch_add(&u->inflight, 1);
		atomic_fetch_add_explicit(&u->queued_gen, 1, memory_order_relaxed);
	}
	/* WAITING before the kernel can complete it: the thread may see the
	 * CQE before submit returns. */
	fsaio__state_set(r, FSAIO__WAITING);
	if (defer) {
		leave_queued(u, bind, bytes);
		pthread_mutex_unlock(&u->sq_lock);
		FSAIO__COUNT(u->x->st, uring_sqes, 1);
		wake_for_waiters(u);
		return 0;
	}
	ret = fsaio__ring_flush(u);
	if (ret)
		unqueue(u, r, sqe, bind);
	pthread_mutex_unlock(&u->sq_lock);
	if (ret && !again)
		atomic_fetch_sub_explicit(&u->inflight, 1, memory_order_relaxed);
	if (!ret)
		FSAIO__COUNT(u->x->st, uring_sqes, 1);
	if (!ret && !again)
		wake_for_waiters(u);
	return ret;
}

/* A vectored remainder (done_ > 0): its iovecs from the first not yet
 * done are copied into tmp, on this frame only, so that no other queue
 * call carries FSAIO__IOV_MAX iovecs on its stack. The copy lives until
 * queue() returns, so it is entered now, never held. */
static __attribute__((noinline)) int queue_iov_rest(struct fsaio__uring *u,
						    struct fsaio_req *r, bool again)
{
	struct iovec tmp[FSAIO__IOV_MAX];

	return queue(u, r, again, FSAIO__ENTER_NOW, tmp);
}

/* Queue r's remainder; called by submitters and by whoever harvests, to
 * continue a short result. -ESHUTDOWN once destroy began. */
int fsaio__ring_queue(struct fsaio__uring *u, struct fsaio_req *r, bool again,
		      enum fsaio__enter when)
{
	if (fsaio__is_vectored(r) && r->done_)
		return queue_iov_rest(u, r, again);
	return queue(u, r, again, when, NULL);
}

/* Whether r's -ECANCELED is the caller's cancel (and forget it). */
static bool asked_cancel(struct fsaio__uring *u, struct fsaio_req *r)
{
	bool mine = false;

	pthread_mutex_lock(&u->sq_lock);
	for (unsigned i = 0; i < CANCEL_MAX && !mine; i++) {
		if (u->cancels[i] == r) {
			u->cancels[i] = NULL;
			mine = true;
		}
	}
	pthread_mutex_unlock(&u->sq_lock);
	return mine;
}

/* r leaves the ring with its event; its slot is free again. */
static void finish(struct fsaio__uring *u, struct fsaio_req *r, int64_t res,
		   struct fsaio__batch *b)
{
	/* The slot is given back before the round's events are posted: the
	 * caller may submit again as soon as it reaps. */
	if (fsaio__ring_slot_of(r))
		u->rel_slots[u->nrel++] = fsaio__ring_slot_of(r) - 1;
	r->exec_ = 0;
	atomic_fetch_sub_explicit(&u->inflight, 1, memory_order_relaxed);
	u->x->ops->done(u->x->arg, r, res, b);
}

/* One CQE of a request: continue, or complete. Under owner. */
void fsaio__ring_on_req(struct fsaio__uring *u, struct fsaio_req *r, int res,
			struct fsaio__batch *b)
{
	struct fsaio__uring_exec *x = u->x;
	int ret;

	/* Pairs with the release store of WAITING in queue(): what the
	 * submitter wrote into r is visible here (the kernel orders it too,
	 * but the compiler and TSan only know of this). */
	(void)fsaio__state_get(r);
	if (res > 0) {
		r->done_ += (uint64_t)res;
		FSAIO__COUNT(x->st, bytes_uring, (uint64_t)res);
	}
	/* Its FILES_UPDATE failed (the fd was closed before the submit
	 * reached the kernel): it ran on the emptied slot, and failed. */
	if (r->exec_ >> 32) {
		finish(u, r, -(int64_t)(r->exec_ >> 32), b);
		return;
	}
	if (res == -ECANCELED && asked_cancel(u, r)) {
		finish(u, r, -ECANCELED, b);
		return;
	}
	/* The caller's RWF_NOWAIT: -EAGAIN is the answer it asked for. */
	if (res == -EAGAIN && (r->rw_flags & RWF_NOWAIT)) {
		finish(u, r, fsaio__result(r, res), b);
		return;
	}
	/* A first -EFAULT may only mean that the submitter exited (see the
	 * DESIGN comment): go round again, from this thread. */
	if (res == -EFAULT &&
	    !(__atomic_fetch_or(&r->hints_, (uint64_t)FSAIO__HINT_EFAULT_RETRY,
				__ATOMIC_RELAXED) & FSAIO__HINT_EFAULT_RETRY))
		res = -EINTR;
	/* Continue: a short count that is not EOF, or a cancel/interruption
	 * nobody asked for, on the same file (its slot or duplicate fd). A
	 * read's 0 is EOF; a write's 0 would loop. An -EAGAIN (should not
	 * come without NOWAIT) is not sent round the ring again. */
	if ((res > 0 && fsaio__is_rw(r) && r->done_ < fsaio__total(r)) ||
	    res == -EINTR || res == -EAGAIN || res == -ECANCELED) {
		ret = res == -EAGAIN ? -EAGAIN : fsaio__ring_queue(u, r, true, FSAIO__ENTER_NOW);
		if (ret == 0)
			return;
		if (ret == -ESHUTDOWN) {
			finish(u, r, -ECANCELED, b);
		} else if (!fsaio__ring_slot_of(r)) {
			/* The ring refused the remainder: the pool carries it
			 * (r holds a duplicate fd). */
			atomic_fetch_sub_explicit(&u->inflight, 1, memory_order_relaxed);
			x->ops->punt(x->arg, r);
		} else {
			/* Only the ring holds r's file: what was done, or why not. */
			finish(u, r, fsaio__result(r, ret), b);
		}
		return;
	}
	finish(u, r, res >= 0 ? (fsaio__is_rw(r) ? (int64_t)r->done_ : 0) : fsaio__result(r, res), b);
}

/* Hand the prepared SQEs to the kernel's SQ (what liburing's submit does
 * before it enters). Under sq_lock. */
static void publish(struct fsaio__uring *u)
{
	struct io_uring_sq *sq = &u->ring.sq;

	if (sq->sqe_head != sq->sqe_tail) {
		sq->sqe_head = sq->sqe_tail;
		io_uring_smp_store_release(sq->ktail, sq->sqe_tail);
	}
	sq_handed_over(u);
}

/*
 * The one io_uring_enter of a caller's batch (an fsaio_submit call). The SQEs are published
 * under sq_lock and the kernel is entered without it: the enter pays the
 * device's doorbell, and the harvester must not wait for that to give back
 * slots. The kernel takes its SQ in order whoever enters, so an enter of
 * another thread meanwhile may submit ours, and ours its. Returns once
 * the kernel has issued every SQE published so far, whoever published it:
 * the kernel moves the head only at the end of a submission, so a caller
 * that finds its SQEs published by another thread (a harvester) does not
 * return before the file an SQE names by fd has been taken. A refused
 * enter leaves the SQEs for the next one (pending).
 */
void fsaio__uring_flush(struct fsaio__uring_exec *x)
{
	struct fsaio__uring *u = fsaio__ring_live(x);

	if (!u)
		return;
	if (atomic_load_explicit(&u->pending, memory_order_relaxed)) {
		pthread_mutex_lock(&u->sq_lock);
		publish(u);
		pthread_mutex_unlock(&u->sq_lock);
	}
	for (;;) {
		unsigned n = io_uring_smp_load_acquire(u->ring.sq.ktail) -
			     io_uring_smp_load_acquire(u->ring.sq.khead);
		int ret;

		if (!n)
			return;
		ret = io_uring_enter((unsigned)u->ring.ring_fd, n, 0, 0, NULL);
		FSAIO__COUNT(x->st, uring_enters, 1);
		if (ret < 0 && ret != -EINTR && ret != -EAGAIN && ret != -EBUSY) {
			atomic_store_explicit(&u->pending, true, memory_order_relaxed);
			return;
		}
	}
}

void fsaio__uring_need(struct fsaio__uring_exec *x, int delta)
{
	struct fsaio__uring *u;

	if (atomic_fetch_add(&x->needs, delta) > 0 || delta <= 0)
		return;
	/* Dekker with queue(): it bumps inflight, then reads needs. */
	u = fsaio__ring_live(x);
	if (u && atomic_load(&u->inflight))
		fsaio__ring_wake_thread(u);
}

int fsaio__uring_cancel(struct fsaio__uring_exec *x, struct fsaio_req *r)
{
	struct fsaio__uring *u = fsaio__ring_live(x);
	struct fsaio__cancel_wait w = { .done = 0, .res = 0 };
	struct io_uring_sqe *sqe = NULL;
	unsigned slot = CANCEL_MAX;
	int ret;

	if (!u)
		return -EBUSY;
	pthread_mutex_lock(&u->sq_lock);
	for (unsigned i = 0; i < CANCEL_MAX && slot == CANCEL_MAX; i++)
		if (!u->cancels[i])
			slot = i;
	/* r is not written here: it may complete (and be reused) at any time
	 * until the answer; only its address is used. */
	if (u->stopping || slot == CANCEL_MAX || fsaio__state_get(r) != FSAIO__WAITING ||
	    !(sqe = fsaio__ring_get_sqe(u))) {
		pthread_mutex_unlock(&u->sq_lock);
		return -EBUSY;
	}
	u->cancels[slot] = r;
	io_uring_prep_cancel(sqe, r, 0);
	io_uring_sqe_set_data(sqe, (void *)((uintptr_t)&w | TAG_CANCEL));
	ret = fsaio__ring_flush(u);
	if (ret)
		u->cancels[slot] = NULL;
	pthread_mutex_unlock(&u->sq_lock);
	if (ret)
		return -EBUSY;
	/* The answer comes with whoever harvests: the thread, if no caller
	 * drives. */
	fsaio__uring_need(x, 1);
	fsaio__ring_wake_thread(u);
	while (!atomic_load_explicit(&w.done, memory_order_acquire))
		syscall(SYS_futex, &w.done, FUTEX_WAIT_PRIVATE, 0, NULL, NULL, 0);
	fsaio__uring_need(x, -1);
	/* -ENOENT: between two pieces, or completing; -EALREADY: at the device.
	 * Then the request goes on, and a later stray -ECANCELED (a submitting
	 * thread that exits) must be resubmitted, not taken as ours. */
	if (w.res != 0) {
		pthread_mutex_lock(&u->sq_lock);
		if (u->cancels[slot] == r)
			u->cancels[slot] = NULL;
		pthread_mutex_unlock(&u->sq_lock);
		return -EBUSY;
	}
	return 0;
}
