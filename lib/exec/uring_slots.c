/* SPDX-License-Identifier: MIT */
/*
 * DESIGN: the ring's fixed-file slots, which bind each request to the file
 * it named for its whole life in the ring: the table (made with the ring,
 * sized for its depth), a request's slot taken with its first SQE, given
 * back at its completion, and the files free slots still hold let go once
 * the ring is idle. All under sq_lock but the table's making and freeing
 * (the ring is not shared then). Below uring.c: it calls nothing of the
 * executor's.
 */
#include <errno.h>
#include <liburing.h>
#include <stdlib.h>

#include "uring_ring.h"

/* One fixed-file slot per request the ring can have in flight; without
 * them (memory, or a kernel without sparse tables) requests hold dups. The
 * kernel refuses a table larger than RLIMIT_NOFILE: a deeper ring gets
 * the largest it allows (halving down to SQ_MAX), and its requests beyond
 * that many hold dups (fsaio__ring_bind_slot). */
void fsaio__ring_slots_init(struct fsaio__uring *u, unsigned n)
{
	while (io_uring_register_files_sparse(&u->ring, n) != 0)
		if ((n /= 2) < SQ_MAX)
			return;
	u->slot_fd = malloc(n * sizeof(*u->slot_fd));
	u->free_slots = malloc(n * sizeof(*u->free_slots));
	if (u->slot_fd && u->free_slots) {
		for (unsigned i = 0; i < n; i++)
			u->free_slots[i] = n - 1 - i;
		u->nfree = u->nslots = n;
		return;
	}
	(void)io_uring_unregister_files(&u->ring);
	free(u->slot_fd);
	free(u->free_slots);
	u->slot_fd = NULL;
	u->free_slots = NULL;
}

void fsaio__ring_slots_free(struct fsaio__uring *u)
{
	free(u->slot_fd);
	free(u->free_slots);
}

/*
 * Bind r to its file for its whole life in the ring, as the kernel's AIO
 * holds a file reference: a free slot of the ring's fixed-file table gets
 * the caller's fd by a FILES_UPDATE just before r's first SQE, in the same
 * io_uring_enter, and every SQE of r names the slot. The two are not
 * linked (a linked SQE is issued later, from task work, outside the
 * submission's plug: one device doorbell per request); the kernel issues
 * them in order, and a FILES_UPDATE completes at its issue. So that a
 * failed update (the fd closed meanwhile) cannot leave r on the slot's
 * previous file, a FILES_UPDATE of -1 empties the slot first: r then fails
 * with -EBADF, and the bind's error CQE (TAG_BIND, before r's) says why.
 * Nothing is paid outside that enter. A slot is given back at r's
 * completion and keeps its file until it is reused or the ring has stayed
 * idle a while (fsaio__ring_clear_slots). Free slots are a stack, so a ring at depth k
 * uses the lowest k slots and slot_hi bounds what a clear rewrites. Where
 * no table could be registered, or all of a table smaller than the
 * context's depth are taken, r holds a duplicate fd (fsaio__bind).
 * With now, the slot gets the file by a registration update instead, before
 * this returns: r's SQE may then wait in the SQ past the caller's return
 * (uring_doorbell.c), and the fd is still taken at submit, as the kernel's
 * AIO takes it. Under sq_lock, with three SQEs free. 0 or -errno.
 */
int fsaio__ring_bind_slot(struct fsaio__uring *u, struct fsaio_req *r, bool now,
			  struct io_uring_sqe **out)
{
	static int no_file = -1;
	struct io_uring_sqe *sqe;
	uint32_t slot;

	out[0] = out[1] = NULL;
	if (!u->nslots)
		return fsaio__bind(r);
	if (!u->nfree)
		return u->nslots < u->x->depth ? fsaio__bind(r) : -EAGAIN;
	slot = u->free_slots[--u->nfree];
	if (slot >= u->slot_hi)
		u->slot_hi = slot + 1;
	u->slot_fd[slot] = fsaio__fd(r);
	if (now) {
		int ret = io_uring_register_files_update(&u->ring, slot, &u->slot_fd[slot], 1);

		if (ret != 1) {
			/* The slot keeps what it held: free again. */
			u->free_slots[u->nfree++] = slot;
			return ret < 0 ? ret : -EBADF;
		}
		r->exec_ = slot + 1;
		return 0;
	}
	out[0] = sqe = io_uring_get_sqe(&u->ring);
	io_uring_prep_files_update(sqe, &no_file, 1, (int)slot);
	sqe->flags |= IOSQE_CQE_SKIP_SUCCESS;
	io_uring_sqe_set_data(sqe, (void *)(uintptr_t)UD_IGNORE);
	out[1] = sqe = io_uring_get_sqe(&u->ring);
	io_uring_prep_files_update(sqe, &u->slot_fd[slot], 1, (int)slot);
	sqe->flags |= IOSQE_CQE_SKIP_SUCCESS;
	io_uring_sqe_set_data(sqe, (void *)((uintptr_t)r | TAG_BIND));
	r->exec_ = slot + 1;
	return 0;
}

/* The slots of the requests a harvest round finished are free again (still
 * holding their files), in one round of sq_lock. Under owner. */
void fsaio__ring_release_slots(struct fsaio__uring *u)
{
	if (!u->nrel)
		return;
	pthread_mutex_lock(&u->sq_lock);
	for (unsigned i = 0; i < u->nrel; i++)
		u->free_slots[u->nfree++] = u->rel_slots[i];
	atomic_store_explicit(&u->dirty, true, memory_order_relaxed);
	pthread_mutex_unlock(&u->sq_lock);
	u->nrel = 0;
}

/* With nothing in the ring, drop the files free slots still hold, so a file
 * the caller closed is not kept open by the engine: the slots used since
 * the last clear, [0, slot_hi). */
void fsaio__ring_clear_slots(struct fsaio__uring *u)
{
	pthread_mutex_lock(&u->sq_lock);
	if (atomic_load_explicit(&u->dirty, memory_order_relaxed) &&
	    !atomic_load_explicit(&u->inflight, memory_order_relaxed)) {
		for (unsigned i = 0; i < u->slot_hi; i++)
			u->slot_fd[i] = -1;
		/* Under sq_lock: no slot can be handed out meanwhile. */
		(void)io_uring_register_files_update(&u->ring, 0, u->slot_fd, u->slot_hi);
		u->slot_hi = 0;
		atomic_store_explicit(&u->dirty, false, memory_order_relaxed);
	}
	pthread_mutex_unlock(&u->sq_lock);
}
