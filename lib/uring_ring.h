/* SPDX-License-Identifier: MIT */
/*
 * Private to the io_uring ring (uring.c: submission, completion, cancel;
 * uring_setup.c: creation, teardown, fixed-file slots).
 */
#ifndef FSAIO_URING_RING_H
#define FSAIO_URING_RING_H

#include <liburing.h>

#include "cq.h"
#include "ctx.h"
#include "req.h"
#include "rw.h"
#include "uring.h"

/* ctx->uring markers: not real pointers. */
#define URING_CREATING ((struct fsaio__uring *)(uintptr_t)1)
#define URING_UNAVAILABLE ((struct fsaio__uring *)(uintptr_t)2)

/* CQE user_data: a request pointer (8-aligned), or tagged in its low bits. */
#define TAG_MASK 7u
#define TAG_CANCEL 1u           /* a struct cancel_wait waiting for its answer */
#define UD_IGNORE 2u            /* destroy's cancel-all: nobody waits */
#define UD_STOP 4u              /* destroy's wake-up NOP */
#define TAG_BIND 3u             /* a request's FILES_UPDATE (only failures post a CQE) */

#define CANCEL_MAX 64           /* cancels in progress at once; beyond: -EBUSY */
#define SQ_MAX 256
#define CQ_MAX 65536

struct fsaio__uring {
	pthread_mutex_t sq_lock;
	struct io_uring ring;   /* SQ side: sq_lock; CQ side: the thread only */
	bool stopping;          /* sq_lock */
	/* SQEs prepared and not yet submitted: set under sq_lock, cleared by
	 * whoever submits; read without it by fsaio__uring_flush to skip the
	 * lock when there is nothing to do. */
	_Atomic bool pending;
	_Atomic unsigned inflight; /* requests with an SQE or CQE outstanding */
	/* sq_lock: requests fsaio_cancel asked the ring to take back; an entry
	 * goes when the -ECANCELED arrives or the cancel failed. */
	struct fsaio_req *cancels[CANCEL_MAX];
	pthread_t thread;       /* immutable once published */
	struct fsaio_ctx *ctx;  /* immutable */
	/* Fixed-file slots binding requests to their files (see bind_slot).
	 * nslots is immutable (0: none could be registered, requests hold a
	 * duplicate fd instead); the rest is under sq_lock. */
	unsigned nslots;
	int *slot_fd;           /* the fd a slot's FILES_UPDATE installs */
	uint32_t *free_slots;   /* stack of free slots */
	unsigned nfree;
	_Atomic bool dirty;     /* a free slot may still hold a file; written
				 * under sq_lock, read without it as a hint */
};

struct io_uring_sqe *fsaio__ring_get_sqe(struct fsaio__uring *u);   /* under sq_lock */
int fsaio__ring_flush(struct fsaio__uring *u);                        /* under sq_lock */
void *fsaio__ring_thread(void *arg);
/* The context's ring, created on first use; NULL while another thread
 * creates it or when io_uring cannot be had. */
struct fsaio__uring *fsaio__ring_get(struct fsaio_ctx *ctx);

#endif /* FSAIO_URING_RING_H */
