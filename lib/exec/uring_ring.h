/* SPDX-License-Identifier: MIT */
/*
 * Private to the io_uring executor, whose files call only down:
 * uring_setup.c (creation on first use, teardown, the entry that creates)
 * above uring_reap.c (who harvests the CQEs: a waiting caller or the
 * thread) above uring.c (the SQ side, what one CQE of a request means,
 * cancel) above uring_slots.c (the fixed-file slots).
 */
#ifndef FSAIO_URING_RING_H
#define FSAIO_URING_RING_H

#include <liburing.h>

#include "counters.h"
#include "req.h"
#include "rw.h"
#include "uring.h"

/* fsaio__uring_exec.ring markers: not real pointers. */
#define URING_CREATING ((struct fsaio__uring *)(uintptr_t)1)
#define URING_UNAVAILABLE ((struct fsaio__uring *)(uintptr_t)2)

/* CQE user_data: a request pointer (8-aligned), or tagged in its low bits. */
#define TAG_MASK 7u
#define TAG_CANCEL 1u           /* a struct cancel_wait waiting for its answer */
#define UD_IGNORE 2u            /* destroy's cancel-all: nobody waits */
#define UD_STOP 4u              /* destroy's wake-up NOP */
#define TAG_BIND 3u             /* a request's FILES_UPDATE (only failures post a CQE) */
#define UD_KICK 5u              /* wakes whoever waits in the ring; nothing else */

#define CANCEL_MAX 64           /* cancels in progress at once; beyond: -EBUSY */
#define SQ_MAX 256
#define CQ_MAX 65536
/* The most a batch of SQEs carries before it enters (uring_doorbell.c). */
#define FSAIO__HOLD_BYTES (64u * 1024)
/* The ring's requests in the kernel beside those held, at least, for a
 * submit call to hold its SQEs (uring_doorbell.c). */
#define FSAIO__HOLD_MIN 4

/* CQEs taken per harvest round: fewer than a batch of events, so that the
 * batch is posted only at the end of the round, after the slots. */
#define HARVEST_MAX (FSAIO__BATCH - 1)

/* Who harvests CQEs: the holder of fsaio__uring.owner. */
#define OWN_NONE 0u
#define OWN_THREAD 1u           /* the completion thread */
#define OWN_CALLER 2u           /* a caller waiting for events (fsaio__drive) */

/* A cancel waiting for its answer (TAG_CANCEL). */
struct fsaio__cancel_wait {
	_Atomic uint32_t done;  /* futex word: 0 waiting, 1 answered */
	int res;                /* written before done is set (release) */
};

struct fsaio__uring {
	pthread_mutex_t sq_lock;
	struct io_uring ring;   /* SQ side: sq_lock; CQ side: whoever holds owner */
	bool stopping;          /* sq_lock */
	_Atomic bool stop;      /* set once with stopping: the thread ends when idle */
	/* SQEs prepared and not yet submitted: set under sq_lock, cleared by
	 * whoever submits; read without it by fsaio__uring_flush to skip the
	 * lock when there is nothing to do. */
	_Atomic bool pending;
	/* The held doorbell (uring_doorbell.c). held: requests whose SQE
	 * waits for a later enter (written under sq_lock, zeroed by whoever
	 * submits; read without it as a hint). left_at: monotonic ns when a
	 * submit call last returned with SQEs for the ring, 0 once the next
	 * call into the ring has measured the gap; back_soon: whether that gap
	 * was short; held_bytes: the bytes the held SQEs read or write (kept
	 * as held is). All relaxed: a heuristic, never a correctness rule. */
	_Atomic unsigned held;
	_Atomic uint64_t held_bytes;
	_Atomic int64_t left_at;
	_Atomic bool back_soon;
	/* A queued SQE's file is named by fd (a FILES_UPDATE in the SQ): the
	 * SQ must be entered before the submit call returns. Written under
	 * sq_lock; read relaxed by the submitter that queued it. */
	_Atomic bool must_enter;
	/* seq_cst: the thread waits in the ring (set before it submits what is
	 * held and waits, cleared after): a submit call then holds nothing. */
	_Atomic bool in_wait;
	/* The meeting point of that Dekker (fsaio__ring_handshake). */
	_Atomic unsigned handshake;
	_Atomic unsigned inflight; /* requests with an SQE or CQE outstanding */
	/* sq_lock: requests fsaio_cancel asked the ring to take back; an entry
	 * goes when the -ECANCELED arrives or the cancel failed. */
	struct fsaio_req *cancels[CANCEL_MAX];
	pthread_t thread;       /* immutable once published */
	bool ext_arg;           /* immutable: waits can carry a timeout */
	/*
	 * Reaping (uring_reap.c). owner is a futex word, taken by CAS and
	 * released with a wake when owner_waiters says someone sleeps on it.
	 * The rest are seq_cst atomics, each a flag read on the other side:
	 * drivers counts callers inside fsaio__drive, drive_seq moves when one
	 * leaves, needs counts waiters that rely on the thread (they sleep
	 * elsewhere), park is the word the thread parks on and parked says it
	 * does.
	 */
	_Atomic uint32_t owner;
	_Atomic uint32_t owner_waiters;
	_Atomic uint32_t drivers;
	_Atomic uint32_t drive_seq;
	_Atomic int needs;
	_Atomic uint32_t park;
	_Atomic bool parked;
	/* A polling caller found the thread in the ring and kicked it to step
	 * back: set by exchange (one kick), cleared by the thread when it
	 * leaves the ring. */
	_Atomic bool back_asked;
	/* owner: slots of requests finished in the current harvest round,
	 * given back in one round of sq_lock before their events are posted. */
	uint32_t rel_slots[HARVEST_MAX];
	unsigned nrel;
	struct fsaio__uring_exec *x; /* immutable: its owner's struct */
	/* Fixed-file slots binding requests to their files (uring_slots.c).
	 * nslots is immutable (0: none could be registered, requests hold a
	 * duplicate fd instead); the rest is under sq_lock. */
	unsigned nslots;
	int *slot_fd;           /* the fd a slot's FILES_UPDATE installs */
	uint32_t *free_slots;   /* stack of free slots */
	unsigned nfree;
	unsigned slot_hi;       /* one past the highest slot used since the last clear */
	/* Bumped for every request queued (relaxed): the thread clears the
	 * slots only after the ring stayed idle between two looks. */
	_Atomic uint32_t queued_gen;
	_Atomic bool dirty;     /* a free slot may still hold a file; written
				 * under sq_lock, read without it as a hint */
};

/* exec_ of a request in the ring: its fixed-file slot + 1, or 0; above
 * bit 32, the error of a FILES_UPDATE that failed. */
static inline unsigned fsaio__ring_slot_of(const struct fsaio_req *r)
{
	return (unsigned)(uint32_t)r->exec_;
}

/* Fixed-file slots (uring_slots.c). The table: made once the ring is, freed
 * with it. Bind r to a slot, with the two FILES_UPDATE SQEs returned in
 * out (or a duplicate fd, out NULL): 0 or -errno; under sq_lock, three
 * SQEs free. */
void fsaio__ring_slots_init(struct fsaio__uring *u, unsigned n);
void fsaio__ring_slots_free(struct fsaio__uring *u);
int fsaio__ring_bind_slot(struct fsaio__uring *u, struct fsaio_req *r, bool now,
			  struct io_uring_sqe **out);
/* Whether a submit call's SQEs may wait past its return (uring_doorbell.c),
 * with more bytes still to join those held: the heuristics only, read
 * without locks. Here, not in uring_doorbell.c: the queue asks it too. */
static inline bool fsaio__ring_may_hold(struct fsaio__uring *u, uint64_t more)
{
	return atomic_load_explicit(&u->back_soon, memory_order_relaxed) &&
	       atomic_load_explicit(&u->held_bytes, memory_order_relaxed) + more < FSAIO__HOLD_BYTES &&
	       atomic_load(&u->x->needs) <= 0 &&
	       atomic_load_explicit(&u->inflight, memory_order_relaxed) >=
	       atomic_load_explicit(&u->held, memory_order_relaxed) + FSAIO__HOLD_MIN;
}
void fsaio__ring_release_slots(struct fsaio__uring *u);  /* under owner */
void fsaio__ring_clear_slots(struct fsaio__uring *u);    /* takes sq_lock */

struct io_uring_sqe *fsaio__ring_get_sqe(struct fsaio__uring *u);   /* under sq_lock */
int fsaio__ring_flush(struct fsaio__uring *u);                        /* under sq_lock */
/* Queue r's remainder (again: a continuation from a CQE), to enter as when
 * says. 0 or -errno. */
int fsaio__ring_queue(struct fsaio__uring *u, struct fsaio_req *r, bool again,
		      enum fsaio__enter when);
/* A CQE of a request (tagged user_data handled by the caller). */
void fsaio__ring_on_req(struct fsaio__uring *u, struct fsaio_req *r, int res,
			struct fsaio__batch *b);
void fsaio__ring_wake_thread(struct fsaio__uring *u);
void *fsaio__ring_thread(void *arg);    /* uring_reap.c */

/* x's live ring, or NULL (none yet, being created, or unavailable). */
static inline struct fsaio__uring *fsaio__ring_live(struct fsaio__uring_exec *x)
{
	struct fsaio__uring *u = atomic_load_explicit(&x->ring, memory_order_acquire);

	return u == URING_CREATING || u == URING_UNAVAILABLE ? NULL : u;
}

/* The Dekker between a submit call that holds its SQEs and whoever waits
 * in the ring: each side stores its own flag (pending, or waiter/in_wait),
 * meets here, then reads the other's. Read-modify-writes of one word are
 * ordered, so the later side sees the earlier side's store. An RMW rather
 * than a fence: the thread sanitizer models the one, not the other. */
static inline void fsaio__ring_handshake(struct fsaio__uring *u)
{
	(void)atomic_fetch_add_explicit(&u->handshake, 1, memory_order_acq_rel);
}

#endif /* FSAIO_URING_RING_H */
