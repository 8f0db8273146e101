/* SPDX-License-Identifier: MIT */
/*
 * libfsaio-libaio: libaio's ABI on top of the libfsaio engine.
 *
 * Private structures shared by the shim's files. One struct shim_ctx per
 * io_context_t; the io_context_t value handed to the program is the address
 * of the context's ring, laid out as the kernel's struct aio_ring, so that
 * programs which reap straight from the ring (libaio's own fast check,
 * fio --userspace_reap) keep working.
 *
 * Threads: any number of program threads call in on one context at once;
 * the engine's workers (and the submitter, for inline hits, and destroy)
 * hand each batch of completions to shim__deliver(), which puts it in the
 * ring.
 *
 * Locks, outer first:
 *   ctx->cancel_lock -> engine locks (fsaio_cancel); ctx->cancel_lock ->
 *       ctx->lock. One io_cancel at a time.
 *   ctx->lock, ctx->reap_lock, the registry lock (context.c): leaves.
 * The engine's locks are leaves too: it calls the delivery hook (which
 * takes ctx->lock) with none of them held, but in the thread of whichever
 * call completes the request, fsaio_submit's inline completions and
 * fsaio_cancel's included; so nothing calls into the engine holding
 * ctx->lock, except fsaio__drive_need, which takes no lock and completes
 * nothing. The registry lock is held across fsaio_get_stats alone (atomic
 * counters).
 *
 * Files, top first, each using only those below it (scripts/check-layers):
 * syscall.c; libaio.c; context.c, submit.c; ring.c; decode.c; resfd.c;
 * hazard.c, wake.c, usermem.c, kernel.c; self.c; this header. Each .c
 * declares what it offers in the header of its name.
 */
#ifndef FSAIO_SHIM_H
#define FSAIO_SHIM_H

#include <linux/aio_abi.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/uio.h>
#include <time.h>

#include "fsaio.h"
#include "nocancel.h"

#define SHIM_API __attribute__((visibility("default")))

/* libaio's opaque handle; its value is the ring's address, as the kernel's is. */
typedef struct io_context *io_context_t;

/* The kernel's constants, as fs/aio.c and include/linux/fs.h have them. */
#define SHIM_RING_MAGIC 0xa10a10a1u
#define SHIM_RING_COMPAT_FEATURES 1u
#define SHIM_UIO_MAXIOV 1024u
#define SHIM_MAX_RW_COUNT 0x7ffff000u   /* INT_MAX & PAGE_MASK */
#define SHIM_IOV_INLINE 8               /* UIO_FASTIOV: larger vectors are malloc'd */

/* The kernel's struct aio_ring: a 32-byte header, then nr io_events.
 * head is advanced by whoever reaps (io_getevents here, or the program
 * itself); tail only by shim__deliver() under ctx->lock. Both are stored
 * with release and loaded with acquire, so an event's contents are visible
 * before the index that publishes it. */
struct shim_ring {
	uint32_t id;
	uint32_t nr;
	_Atomic uint32_t head;
	_Atomic uint32_t tail;
	uint32_t magic;
	uint32_t compat_features;
	uint32_t incompat_features;
	uint32_t header_length;
	struct io_event io_events[];
};

_Static_assert(sizeof(struct iocb) == 64, "struct iocb is 64 bytes in the kernel ABI");
_Static_assert(sizeof(struct io_event) == 32, "struct io_event is 32 bytes in the kernel ABI");
_Static_assert(sizeof(struct shim_ring) == 32, "struct aio_ring's header is 32 bytes");
_Static_assert(sizeof(_Atomic uint32_t) == sizeof(uint32_t), "ring indices keep the kernel's layout");

/* One request in flight: the engine's request plus what the event needs.
 * The fields marked ctx->lock say whether the slot is free; the others
 * belong to whoever holds the slot: the submitting thread until the engine
 * accepts the request, then the engine until it hands the event to
 * shim__deliver(), which reads them and gives the slot back under
 * ctx->lock. */
struct shim_slot {
	struct fsaio_req req;   /* user_data points back at the slot */
	uint64_t data;          /* iocb->aio_data, for io_event.data */
	uint64_t obj;           /* the iocb's address, for io_event.obj; written with relaxed
				 * atomic stores, as io_cancel reads it under ctx->lock */
	int resfd;              /* our dup of aio_resfd, or -1 */
	struct shim_efd *resfd_e; /* its cache entry (resfd.c), or NULL: our own dup */
	uint16_t opcode;        /* IOCB_CMD_* */
	uint32_t old_key;       /* aio_key before submit wrote 0: put back if the fd was bad */
	bool busy;              /* ctx->lock: submitted and not yet completed */
	bool pinned;            /* ctx->lock: io_cancel is looking at it; not reusable */
	bool free_on_unpin;     /* ctx->lock: completed while pinned */
	struct shim_slot *next_free; /* ctx->lock */
	struct iovec *iov;      /* the copied vector: iov_inline or malloc'd */
	struct iovec iov_inline[SHIM_IOV_INLINE];
};

/* A cached duplicate of an IOCB_FLAG_RESFD eventfd (resfd.c). */
#define RESFD_CACHE 4
struct shim_efd {
	int fd;                 /* ctx->lock: the program's number for it */
	int dup;                /* ctx->lock: ours, or -1 (entry free) */
	_Atomic uint32_t users; /* requests holding it (see resfd.c) */
};

#define SHIM_SEQ_SLEEPER 1u
#define SHIM_SEQ_STEP 2u

struct shim_ctx {
	struct shim_ring *ring; /* immutable: mmap'd, ring_bytes long, then the slots */
	size_t ring_bytes;      /* immutable */
	size_t map_bytes;       /* immutable: the mapping's length, ring and slots */
	uint32_t nr_events;     /* immutable: what io_setup was asked for */
	uint32_t capacity;      /* immutable: ring->nr - 1, the kernel's reqs_available */
	fsaio_ctx_t *engine;    /* immutable after setup */
	struct reg_node *node;  /* immutable after setup: its registry entry (context.c) */

	_Atomic uint32_t dead;  /* set once by io_destroy: new waits return -EINVAL */

	pthread_mutex_t lock;
	uint32_t avail;         /* lock: slots that a submit may take */
	uint32_t unsettled;     /* lock: completions not yet credited back to avail */
	uint32_t in_flight;     /* lock: accepted and not yet completed */
	struct shim_slot *free; /* lock: free list */
	uint32_t used;          /* lock: slots[0, used) have been handed out at least once */
	struct shim_slot *slots; /* immutable pointer, [capacity + 1]: one spare for
				  * the slot io_cancel may keep pinned; in the
				  * ring's mapping, after the ring */

	pthread_mutex_t reap_lock; /* serialises io_getevents callers over ring->head */
	pthread_mutex_t cancel_lock; /* one io_cancel at a time: at most one pinned slot */

	/* Waiting: a futex word (wake.c). Its upper 31 bits count publishes
	 * (and destroy): a post adds SHIM_SEQ_STEP. Bit 0 (SHIM_SEQ_SLEEPER) is
	 * set by a sleeper before it sleeps on the word and cleared, in the
	 * same compare-and-swap that counts, by the poster that then wakes
	 * them all: a completion makes the futex call only when someone went
	 * to sleep since the last one did, not once per completion while a
	 * woken sleeper is still on its way out. */
	_Atomic uint32_t seq;
	/* io_pgetevents with a signal mask sleeps in ppoll on efd, the one way
	 * to change the mask and sleep atomically. Created on first use. */
	_Atomic int efd;        /* -1 until then; set once under lock */
	_Atomic uint32_t pwaiters; /* seq_cst, like waiters: ppoll sleepers */
	struct shim_efd efds[RESFD_CACHE]; /* resfd.c */
};

#endif /* FSAIO_SHIM_H */
