/* SPDX-License-Identifier: MIT */
/*
 * DESIGN: when the SQEs of a submit call enter the kernel. By default
 * before the call returns (fsaio__uring_flush). A caller that submits one
 * request per call with many in flight (fio's libaio and posixaio engines,
 * any submit-reap loop) would then pay an io_uring_enter and a device
 * notification per request. So a submit call that brings one request
 * leaves its SQE queued (held) while
 *  - at least FSAIO__HOLD_MIN of the ring's requests are in the kernel:
 *    the device has work, and their completions bring a harvest;
 *  - the callers came back into the ring within HOLD_BACK_NS of the last
 *    submit call returning: someone will be here shortly;
 *  - what is held reads or writes less than FSAIO__HOLD_BYTES: a batch
 *    enters in one plug, and its first reads wait at the device while the
 *    rest are built; past about 64 KiB that wait costs more than the
 *    notifications it saves (bench/RESULTS.md). For the same reason a
 *    batch one submit call builds enters as soon as it carries that much
 *    (fsaio__ring_queue);
 *  - no waiter relies on the ring's thread (an eventfd, RESFD requests, a
 *    sleeper), and nobody waits in the ring (a caller or the thread): they
 *    would sleep with them.
 * A held request's slot is bound by a registration syscall before the call
 * returns, so a call of several requests does not hold: one enter at its
 * end costs less than a registration each, and it is a batch already.
 * Held SQEs enter with the next of: a submit call that does not hold, a
 * harvest that found completions (a caller's poll, the thread), a caller
 * or the thread about to wait in the ring, the thread's return from a step
 * back (STEP_BACK_NS at most, uring_reap.c), a cancel, or stop. A caller
 * that pauses after submitting thus delays that call's requests by its
 * pause at most, and by STEP_BACK_NS in the worst case; its next submit
 * calls enter at once until it comes back quickly again.
 */
#include "monoclock.h"
#include "uring_ring.h"

#define HOLD_BACK_NS 50000LL

void fsaio__uring_flush_soon(struct fsaio__uring_exec *x)
{
	struct fsaio__uring *u = fsaio__ring_live(x);

	if (!u)
		return;
	/* Nothing of ours unpublished; a harvester may have published it and
	 * not yet entered: the flush waits for the kernel to take it. */
	if (!atomic_load_explicit(&u->pending, memory_order_relaxed)) {
		fsaio__uring_flush(x);
		return;
	}
	atomic_store_explicit(&u->left_at, fsaio__mono_ns(), memory_order_relaxed);
	/* Bound by fd at the enter: only entering now takes the file now. */
	if (!atomic_load_explicit(&u->must_enter, memory_order_relaxed) && fsaio__ring_may_hold(u, 0)) {
		/* Dekker with whoever waits in the ring (x->waiter, u->in_wait):
		 * it sets its flag, then submits what is held. */
		fsaio__ring_handshake(u);
		if (!atomic_load(&x->waiter) && !atomic_load(&u->in_wait)) {
			FSAIO__COUNT(x->st, uring_held, 1);
			return;
		}
	}
	fsaio__uring_flush(x);
}

void fsaio__uring_back(struct fsaio__uring_exec *x)
{
	struct fsaio__uring *u = fsaio__ring_live(x);
	int64_t at;

	if (!u)
		return;
	if (atomic_load_explicit(&u->left_at, memory_order_relaxed) &&
	    (at = atomic_exchange_explicit(&u->left_at, 0, memory_order_relaxed)))
		atomic_store_explicit(&u->back_soon, fsaio__mono_ns() - at < HOLD_BACK_NS,
				      memory_order_relaxed);
}
