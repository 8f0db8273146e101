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
 *   shim registry lock (ctx.c) -> nothing: it is a leaf, held by io_setup
 *       and io_destroy only; calls find their context without it.
 *   ctx->cancel_lock -> engine locks -> ctx->lock
 *   ctx->reap_lock -> ctx->lock (a reaper refilling nothing: only the
 *       submit path takes ctx->lock to credit reaped slots back)
 * ctx->lock is taken by the batch-done hook, which the engine may call
 * with its own locks held, so nothing calls into the engine while holding
 * ctx->lock.
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

struct shim_ctx {
	struct shim_ring *ring; /* immutable: mmap'd, ring_bytes long, then the slots */
	size_t ring_bytes;      /* immutable */
	size_t map_bytes;       /* immutable: the mapping's length, ring and slots */
	uint32_t nr_events;     /* immutable: what io_setup was asked for */
	uint32_t capacity;      /* immutable: ring->nr - 1, the kernel's reqs_available */
	fsaio_ctx_t *engine;    /* immutable after setup */
	struct reg_node *node;  /* immutable after setup: its registry entry (ctx.c) */

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

	/* Waiting: a futex word bumped after every publish (and by destroy);
	 * waiters counts sleepers so that a completion wakes only when needed.
	 * Both are seq_cst: a poster bumps seq and then reads waiters, a
	 * waiter bumps waiters and then re-reads seq in FUTEX_WAIT. */
	_Atomic uint32_t seq;
	_Atomic uint32_t waiters;
	/* io_pgetevents with a signal mask sleeps in ppoll on efd, the one way
	 * to change the mask and sleep atomically. Created on first use. */
	_Atomic int efd;        /* -1 until then; set once under lock */
	_Atomic uint32_t pwaiters; /* seq_cst, like waiters: ppoll sleepers */
	struct shim_efd efds[RESFD_CACHE]; /* resfd.c */
};

/* hazard.c: a thread's record of the registry entry its call uses. */
struct shim_hazard {
	_Atomic(const void *) held; /* the owner's: relaxed store, then a compiler
				     * barrier; cleared with release. Read by io_destroy */
	_Atomic bool taken;     /* claimed by CAS, given back at the thread's exit */
	struct shim_hazard *next; /* immutable once on the list */
} __attribute__((aligned(64)));
/* The calling thread's record, free for this call; NULL: count in refs. */
struct shim_hazard *shim__hazard_mine(void);
static inline void shim__hazard_set(struct shim_hazard *h, const void *p)
{
	atomic_store_explicit(&h->held, p, memory_order_relaxed);
	atomic_signal_fence(memory_order_seq_cst);
}
static inline void shim__hazard_clear(struct shim_hazard *h)
{
	atomic_store_explicit(&h->held, NULL, memory_order_release);
}
void shim__hazard_sync(void);           /* io_destroy, after clearing a key */
bool shim__hazard_names(const void *p); /* some call still holds p */
void shim__hazard_fork_child(void);

/* ctx.c: the registry of live contexts. shim__get finds a live context and
 * holds it for the call (NULL: unknown): in the thread's hazard record
 * (*held) or, when *held is NULL, counted in the entry; shim__put ends
 * that. */
struct reg_node;
struct shim_ctx *shim__get(io_context_t id, struct shim_hazard **held);
void shim__put(struct shim_ctx *c, struct shim_hazard *held);
/* Copy n bytes from or to the caller's memory: -EFAULT instead of a fault. */
int shim__user_copy(void *dst, const void *src, size_t n, bool to_user);

/* resfd.c: IOCB_FLAG_RESFD eventfds, held and signalled */
int shim__resfd_take(struct shim_ctx *c, uint32_t fd, int *dup, struct shim_efd **entry);
void shim__resfd_drop(int dup, struct shim_efd *e);
void shim__resfd_signal(struct shim_ctx *c, int dup, struct shim_efd *e);
void shim__resfd_flush(void);           /* at the end of an engine batch */
void shim__resfd_init(struct shim_ctx *c);
void shim__resfd_fini(struct shim_ctx *c);
pid_t shim__self_pid(void);             /* ctx.c: getpid, kept across fork */

/* ring.c */
void shim__complete(void *arg, const struct fsaio_event *ev);
void shim__deliver(void *arg, const struct fsaio_event *ev, unsigned n);
void shim__wake(struct shim_ctx *c);
long shim__getevents(struct shim_ctx *c, long min_nr, long nr, struct io_event *events,
		     const struct timespec *timeout, const sigset_t *sigmask);
void shim__slots_release(struct shim_ctx *c, struct shim_slot **slots, unsigned n);
unsigned shim__take_slots(struct shim_ctx *c, unsigned n, struct shim_slot **out);

/* decode.c: judging an iocb (no context needed, for the fuzz target too).
 * decode_head before a slot is taken; decode_fd, then (aio_key written)
 * decode_op; on an error from either, decode_fail gives the kernel's answer
 * and says whether the fd itself was bad; decode_undo frees what a decode
 * took (the RESFD dup, a malloc'd vector). */
uint64_t shim__user_limit(void);
bool shim__user_ok(const void *p, uint64_t len);
bool shim__user_ptr_ok(const void *p, uint64_t len);
bool shim__fd_unusable(int fd);
int shim__decode_head(const struct iocb *cb);
int shim__decode_fd(struct shim_ctx *c, struct shim_slot *s, const struct iocb *cb);
int shim__decode_op(struct shim_slot *s, const struct iocb *cb);
int shim__decode_fail(const struct iocb *cb, int ret, bool *fd_bad);
void shim__decode_undo(struct shim_slot *s);

/* submit.c */
long shim__submit(struct shim_ctx *c, long nr, struct iocb **ios);
int shim__cancel(struct shim_ctx *c, struct iocb *iocb);

/* libaio.c: the entry points' bodies, for the compat forms and syscall.c
 * without going through the PLT. */
int shim__libaio_setup(int nr_events, io_context_t *ctxp);
int shim__libaio_destroy(io_context_t ctx);
int shim__libaio_submit(io_context_t ctx, long nr, struct iocb *ios[]);
int shim__libaio_pgetevents(io_context_t ctx, long min_nr, long nr, struct io_event *events,
			    struct timespec *timeout, const sigset_t *sigmask);
int shim__io_getevents(io_context_t ctx, long min_nr, long nr, struct io_event *events,
		       struct timespec *timeout);
int shim__io_setup(int nr_events, io_context_t *ctxp);
int shim__io_destroy(io_context_t ctx);
int shim__io_cancel(io_context_t ctx, struct iocb *iocb, struct io_event *evt);

/* syscall.c: the raw system call, as -errno, errno untouched; never through
 * the exported syscall(), which hands the io_* numbers to the drop-in. */
long shim__kernel(long nr, long a, long b, long c, long d, long e, long f);

#endif /* FSAIO_SHIM_H */
