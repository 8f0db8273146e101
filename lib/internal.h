/* SPDX-License-Identifier: MIT */
/*
 * Private structures shared by the engine's files.
 *
 * Threads: any number of caller threads submit and reap on one context at
 * once; the executors' threads (pool.c, poller.c, uring.c) run the rest.
 * Every lock of the engine is a leaf: none is taken while another is held
 * (pool.lock, cq.lock, fdtable.lock, poller.lock, the ring's sq_lock, the
 * readahead locks); completions and hand-offs are made after a lock is
 * released. Each shared field names its lock or atomic rule.
 */
#ifndef FSAIO_INTERNAL_H
#define FSAIO_INTERNAL_H

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "fsaio.h"
#include "nocancel.h"

#define FSAIO__API __attribute__((visibility("default")))
#define FSAIO__IOV_MAX 1024

/* req->state_: who owns the request now. Changes are atomic; the
 * transitions out of QUEUED happen under pool.lock. */
enum fsaio__state {
	FSAIO__IDLE = 0,        /* never submitted, or reaped */
	FSAIO__INLINE,          /* in the submitting thread */
	FSAIO__QUEUED,          /* waiting in the pool's queue: cancellable */
	FSAIO__RUNNING,         /* a worker runs it */
	FSAIO__WAITING,         /* parked by its method (readiness, io_uring): method->cancel decides */
	FSAIO__DONE,            /* event posted or being posted */
};

/* req->state_ is a plain uint32_t in the public header (no <stdatomic.h>
 * there), so it is accessed with the compiler's atomic builtins. Stores
 * release and loads acquire: whoever sees a state also sees the request
 * fields written before it was set. */
static inline uint32_t fsaio__state_get(const struct fsaio_req *r)
{
	return __atomic_load_n(&r->state_, __ATOMIC_ACQUIRE);
}
static inline void fsaio__state_set(struct fsaio_req *r, uint32_t s)
{
	__atomic_store_n(&r->state_, s, __ATOMIC_RELEASE);
}

/* What the engine knows about an fd: one atomic word per fd (fdtable.c). */
enum fsaio__kind {
	FSAIO__KIND_FILE = 0,   /* regular file or block device, buffered */
	FSAIO__KIND_POLLABLE,   /* pipe, FIFO, socket, tty, eventfd */
	FSAIO__KIND_DIRECT,     /* opened with O_DIRECT */
	FSAIO__KIND_BLOCKING,   /* anything else: run on a worker as is */
	FSAIO__KIND_MAX
};

enum {
	FSAIO__FD_VALID = 1u << 0,
	FSAIO__FD_READ = 1u << 1,       /* opened for reading */
	FSAIO__FD_WRITE = 1u << 2,      /* opened for writing */
	FSAIO__FD_NOWAIT_RBAD = 1u << 3, /* preadv2(RWF_NOWAIT) refused: don't try again */
	FSAIO__FD_NOWAIT_WBAD = 1u << 4, /* pwritev2(RWF_NOWAIT) refused */
	FSAIO__FD_PROBE_NEXT = 1u << 5, /* last inline attempt missed: probe first next time */
	FSAIO__FD_SEEKABLE = 1u << 6,
	FSAIO__FD_SYNC = 1u << 7,       /* opened O_SYNC or O_DSYNC: writes wait for the device */
	FSAIO__FD_ADV_RANDOM = 1u << 8, /* fsaio_fadvise(POSIX_FADV_RANDOM): no stream readahead */
	FSAIO__FD_ADV_SEQ = 1u << 9,    /* fsaio_fadvise(POSIX_FADV_SEQUENTIAL): a stream from the start */
	FSAIO__FD_FIFO = 1u << 10,      /* a pipe or FIFO: splice reaches it without blocking */
	/* Reads missed in a row since the last hit, saturating (a hint). */
	FSAIO__FD_MISS_ONE = 1u << 12,
	FSAIO__FD_MISS_MASK = 7u << 12,
	/* What the engine learnt by using the fd, not by asking the kernel. */
	FSAIO__FD_LEARNT = FSAIO__FD_NOWAIT_RBAD | FSAIO__FD_NOWAIT_WBAD | FSAIO__FD_PROBE_NEXT |
			   FSAIO__FD_ADV_RANDOM | FSAIO__FD_ADV_SEQ | FSAIO__FD_MISS_MASK,
};

struct fsaio__fdinfo {
	uint32_t flags;         /* FSAIO__FD_* */
	uint32_t kind;          /* enum fsaio__kind */
};

struct fsaio__fdtable {
	pthread_mutex_t lock;   /* serialises chunk allocation and refreshes */
	/* chunks[i] points to FDT_CHUNK atomic words; published with release,
	 * read with acquire; never freed before the context. */
	_Atomic(_Atomic uint64_t *) chunks[1024];
};

/* A side job for the pool: work that belongs to no request (prefetching).
 * Embedded in its owner, which keeps it alive until pool_stop; next and
 * queued are under pool.lock. Workers run jobs before requests. */
struct fsaio__job {
	struct fsaio__job *next;
	void (*fn)(struct fsaio_ctx *ctx, struct fsaio__job *job);
	bool queued;
};

struct fsaio__pool {
	pthread_mutex_t lock;
	struct fsaio__job *jobs, *jobs_tail; /* lock: FIFO of side jobs */
	pthread_cond_t work;    /* idle workers wait here (monotonic clock) */
	struct fsaio_req *head; /* lock: FIFO through req->next_/prev_ */
	struct fsaio_req *tail; /* lock */
	unsigned queued;        /* lock */
	unsigned nthreads;      /* lock: threads started */
	unsigned idle;          /* lock: threads waiting on work */
	unsigned signalled;     /* lock: wake-ups sent and not yet taken */
	unsigned running;       /* lock: requests being run by a worker */
	unsigned max;           /* immutable after create */
	bool stopping;          /* lock */
	pthread_t *threads;     /* lock: [max], first nthreads valid */
};

/* The readiness poller of the pollable method (poller.c). */
struct fsaio__pfd;
struct fsaio__poller {
	pthread_mutex_t lock;
	struct fsaio__pfd **fds; /* lock: [nfds] by the entry's own duplicate fd */
	unsigned nfds;          /* lock */
	struct fsaio__pfd **alias; /* lock: [nalias] by the caller's fd number */
	unsigned nalias;        /* lock */
	bool started;           /* lock: the thread runs (set once) */
	bool stopping;          /* lock: destroy began; nothing parks any more */
	_Atomic bool active;    /* set once something parked; relaxed: a hint
				 * that lets submitters skip the lock before */
	pthread_t thread;       /* written under lock before started is set */
	int epfd, wakefd;       /* -1, then set under lock before the thread
				 * starts; immutable until fini */
	int spl[2];             /* the thread's private pipe for FIFO writes:
				 * only the poller thread touches it; -1 */
};

struct fsaio__cq {
	pthread_mutex_t lock;
	struct fsaio_event *ring; /* lock: [size] */
	unsigned size;          /* immutable: queue_depth */
	unsigned head, count;   /* lock */
	_Atomic uint32_t seq;   /* futex word: bumped under lock on every post */
	unsigned sleepers;      /* lock: threads gone to sleep on seq since the
				 * last wake-up; a post wakes only when > 0 */
	int efd;                /* lock: -1 until fsaio_event_fd() asks for it */
	bool efd_set;           /* lock: efd holds a non-zero count */
};

struct fsaio__counters {
	_Atomic uint64_t requests, completed_inline, partial_inline, queued, retries;
	_Atomic uint64_t bytes_inline, bytes_worker, probe_calls, probe_cold, cancelled;
	/* readahead.c, uring.c */
	_Atomic uint64_t ra_calls, ra_bytes, stream_hits, uring_sqes, bytes_uring;
	/* cq.c, method_file.c */
	_Atomic uint64_t reaper_sleeps, reaper_wakeups, straight_to_ring;
};

/* Inline completions of one submit call, posted together at its end. */
#define FSAIO__BATCH 32
struct fsaio__batch {
	unsigned n;
	struct fsaio_event ev[FSAIO__BATCH];
};

/*
 * What the executors (pool.c, poller.c, uring.c) are given: the work they
 * run and where they report, as a thread pool is given a job and a done
 * function. They know nothing of methods or of the completion queue; ctx.c
 * wires these once.
 */
struct fsaio__exec_ops {
	/* Pool: carry r's remainder to its end with blocking calls; the res. */
	int64_t (*run)(struct fsaio_ctx *ctx, struct fsaio_req *r);
	/* Poller: non-blocking progress on r: its res, FSAIO__STEP_AGAIN or
	 * FSAIO__STEP_POOL. */
	int64_t (*step)(struct fsaio_ctx *ctx, struct fsaio_req *r);
	/* r is finished with res (b: a batch the caller flushes, or NULL). */
	void (*done)(struct fsaio_ctx *ctx, struct fsaio_req *r, int64_t res,
		     struct fsaio__batch *b);
	/* Ring, poller: only a blocking call will carry the rest of r. */
	void (*punt)(struct fsaio_ctx *ctx, struct fsaio_req *r);
};

struct fsaio_ctx {
	const struct fsaio__exec_ops *ops; /* immutable */
	unsigned fork_gen;      /* immutable: fsaio__fork_gen at creation */
	unsigned depth;         /* immutable */
	uint32_t flags;         /* immutable: FSAIO_CTX_* */
	void (*complete_cb)(void *, const struct fsaio_event *); /* immutable */
	void *complete_arg;     /* immutable */
	_Atomic unsigned in_flight; /* accepted and not yet reaped (or called back) */
	_Atomic unsigned straight_seq; /* method_file.c: sampling of fds sent straight to io_uring */
	struct fsaio__counters st;  /* relaxed atomics */
	struct fsaio__fdtable fdt;
	struct fsaio__pool pool;
	struct fsaio__cq cq;
	struct fsaio__poller poller;
	uint32_t backend;       /* immutable: enum fsaio_backend, after FSAIO_BACKEND */
	/* uring.c: NULL, then a creation marker, then the ring, each by CAS;
	 * the ring itself is immutable until destroy (see uring.c). */
	_Atomic(struct fsaio__uring *) uring;
	struct fsaio__ra *ra;   /* readahead.c: immutable after create; its own locks */
};

/* fork.c */
extern _Atomic unsigned fsaio__fork_gen;
bool fsaio__ctx_ok(const struct fsaio_ctx *ctx);

/* cq.c: the completion queue, and turning progress and a final result
 * into the event */
int fsaio__cq_init(struct fsaio__cq *cq, unsigned size);
void fsaio__cq_fini(struct fsaio__cq *cq);
void fsaio__cq_forget(struct fsaio__cq *cq);        /* forked child: free only */
void fsaio__post(struct fsaio_ctx *ctx, const struct fsaio_event *ev, unsigned n);
/* The kernel's bytes_done rule: progress wins over a later error; only a
 * request that did nothing reports the error. Cancel is the exception and
 * reports -ECANCELED with the progress in res2 (fsaio__complete). */
static inline int64_t fsaio__result(const struct fsaio_req *req, int64_t err)
{
	if (err < 0 && err != -ECANCELED && req->done_)
		return (int64_t)req->done_;
	return err;
}
void fsaio__complete(struct fsaio_ctx *ctx, struct fsaio_req *req, int64_t res,
		     struct fsaio__batch *b);
void fsaio__batch_flush(struct fsaio_ctx *ctx, struct fsaio__batch *b);

/* request geometry */
static inline bool fsaio__is_vectored(const struct fsaio_req *r)
{
	return r->opcode == FSAIO_OP_PREADV || r->opcode == FSAIO_OP_PWRITEV;
}
static inline bool fsaio__is_write(const struct fsaio_req *r)
{
	return r->opcode == FSAIO_OP_PWRITE || r->opcode == FSAIO_OP_PWRITEV;
}
static inline bool fsaio__is_rw(const struct fsaio_req *r)
{
	return r->opcode >= FSAIO_OP_PREAD && r->opcode <= FSAIO_OP_PWRITEV;
}
/* Total bytes of a read or write, computed once at submit (total_). */
static inline uint64_t fsaio__total(const struct fsaio_req *r) { return r->total_; }
/* FSAIO_OP_POLL on a regular file: always ready, as poll(2) says of one. */
static inline int64_t fsaio__file_revents(const struct fsaio_req *r)
{
	return (int64_t)(r->len & (POLLIN | POLLOUT | POLLRDNORM | POLLWRNORM));
}
/*
 * run_fd_: the descriptor the engine runs the request on, in the low 32
 * bits, and two flags above. A request handed on from the submitter holds a
 * duplicate of the caller's fd (FSAIO__RUN_BOUND), taken before fsaio_submit
 * returns and closed at its completion, so it stays bound to the file it
 * named at submit, as the kernel's AIO holds a file reference, whatever the
 * caller later does with that fd number.
 */
#define FSAIO__RUN_STREAM (1ull << 32)   /* no file position to honour (pipes, sockets) */
#define FSAIO__RUN_BOUND (1ull << 33)    /* the low bits are the engine's own duplicate */
static inline bool fsaio__is_stream(const struct fsaio_req *r)
{
	return r->run_fd_ & FSAIO__RUN_STREAM;
}
static inline int fsaio__fd(const struct fsaio_req *r) { return (int)(uint32_t)r->run_fd_; }
static inline void fsaio__set_stream(struct fsaio_req *r, bool stream)
{
	r->run_fd_ = (r->run_fd_ & ~FSAIO__RUN_STREAM) | (stream ? FSAIO__RUN_STREAM : 0);
}
/* hints_ of FILE and DIRECT requests: FSAIO__HINT_* flags, written by
 * whoever owns the request at the time (state_ hands it over with
 * release/acquire). exec_ belongs to the executor that holds the request:
 * the ring's fixed-file slot, or the poller's result for its completion. */
enum {
	FSAIO__HINT_SEQ = 1u << 0,        /* part of a sequential stream (readahead.c) */
	FSAIO__HINT_KERNEL_RA = 1u << 1,  /* a NOWAIT miss already started readahead */
	/* 1u << 2 free: cancels are tracked in uring.c, not in the request */
	FSAIO__HINT_EFAULT_RETRY = 1u << 3, /* uring.c: resubmitted once after an -EFAULT */
};
/* rw.c. The iovecs of what remains after req->done_; returns the count,
 * fills *out (pointing into tmp when a copy was needed); at most cap entries. */
int fsaio__iov_rest(const struct fsaio_req *r, struct iovec *tmp, int cap,
		    const struct iovec **out);
/* One preadv2/pwritev2 of the remainder; returns bytes or -errno. */
ssize_t fsaio__rw_once(const struct fsaio_req *r, struct iovec *tmp, int cap, int flags);
/* Blocking: run the remainder to completion, EOF or error; returns the event res. */
int64_t fsaio__rw_blocking(struct fsaio_ctx *ctx, struct fsaio_req *r);
/* Whatever the kind of file, with ordinary blocking calls: fsync/fdatasync,
 * poll(2), or fsaio__rw_blocking. */
int64_t fsaio__retry_blocking(struct fsaio_ctx *ctx, struct fsaio_req *r);
/* Bind r to its file before it leaves the submitter: 0, or -errno (no
 * descriptor left) and r is unchanged. Idempotent. */
int fsaio__bind(struct fsaio_req *r);
/* Undo fsaio__bind for a request refused at submit. */
void fsaio__unbind(struct fsaio_req *r);

/* carry.c: who carries what the submitter cannot finish. */
uint32_t fsaio__backend_param(uint32_t param);      /* the param or FSAIO_BACKEND */
/* A request that would block: the caller's RWF_NOWAIT answer, or the pool. */
void fsaio__handoff(struct fsaio_ctx *ctx, struct fsaio_req *r, struct fsaio__batch *b);
/* A buffered read or write that would block: RWF_NOWAIT answer, ring or pool. */
void fsaio__miss(struct fsaio_ctx *ctx, struct fsaio_req *r, struct fsaio__batch *b);
/* Whether a miss of r would be carried by the ring (the backend's choice). */
bool fsaio__miss_to_ring(struct fsaio_ctx *ctx, const struct fsaio_req *r);
/* Run r to its end here, with blocking calls, and complete it: what the
 * submitter does when r cannot be bound for a hand-off. */
void fsaio__run_here(struct fsaio_ctx *ctx, struct fsaio_req *r, struct fsaio__batch *b);
int64_t fsaio__carry_run(struct fsaio_ctx *ctx, struct fsaio_req *r);   /* exec_ops.run */
void fsaio__carry_punt(struct fsaio_ctx *ctx, struct fsaio_req *r);     /* exec_ops.punt */
/* A pipe or socket request only a worker can carry now, in the submitter:
 * 0, or -EAGAIN (refused: no worker or descriptor, nothing done yet); with
 * progress made, it completes with it. */
int fsaio__carry_pollable(struct fsaio_ctx *ctx, struct fsaio_req *r, struct fsaio__batch *b);

/* fdtable.c */
int fsaio__fdtable_init(struct fsaio__fdtable *t);
void fsaio__fdtable_fini(struct fsaio__fdtable *t);
void fsaio__fdtable_forget(struct fsaio__fdtable *t); /* forked child: free only */
/* Whether facts fi fit request r (access mode, offset on a seekable fd):
 * 0 and r set to run on them (method, descriptor), or -EBADF / -EINVAL. */
int fsaio__fd_fit(struct fsaio_req *r, struct fsaio__fdinfo fi);
/* Learn r's fd again into *fi and fit r to it: the one re-check of every
 * method's "the fd may name another file now". */
int fsaio__fd_recheck(struct fsaio_ctx *ctx, struct fsaio_req *r, struct fsaio__fdinfo *fi);
/* Whether fd's facts differ from fi now (learning them again). */
bool fsaio__fd_changed(struct fsaio_ctx *ctx, int fd, struct fsaio__fdinfo fi);
int fsaio__fd_get(struct fsaio_ctx *ctx, int fd, struct fsaio__fdinfo *out);
int fsaio__fd_refresh(struct fsaio_ctx *ctx, int fd, struct fsaio__fdinfo *out);
void fsaio__fd_set(struct fsaio_ctx *ctx, int fd, uint32_t flags);
void fsaio__fd_clear(struct fsaio_ctx *ctx, int fd, uint32_t flags);
/* A read on fd missed the cache: probe its next one first, and count the
 * streak (fi: the facts the read was started with). */
void fsaio__fd_missed(struct fsaio_ctx *ctx, int fd, struct fsaio__fdinfo fi);
static inline unsigned fsaio__fd_misses(struct fsaio__fdinfo fi)
{
	return (fi.flags & FSAIO__FD_MISS_MASK) / FSAIO__FD_MISS_ONE;
}

/* probe.c: residency of [off, off+len) */
enum fsaio__residency { FSAIO__RES_UNKNOWN, FSAIO__RES_COLD, FSAIO__RES_PARTIAL, FSAIO__RES_HOT };
enum fsaio__residency fsaio__probe(struct fsaio_ctx *ctx, int fd, uint64_t off, uint64_t len);

/* uring.c: the context's io_uring ring, created on first use. Queue the
 * remainder of a request to the ring: 0, or -errno (the ring is unavailable
 * or stopping) and the caller must carry the request another way. With
 * defer (only from a start() called by fsaio_submit) the SQE is submitted
 * by the fsaio__uring_flush() at the end of fsaio_submit, one
 * io_uring_enter for the whole call. */
int fsaio__uring_queue(struct fsaio_ctx *ctx, struct fsaio_req *r, bool defer);
void fsaio__uring_flush(struct fsaio_ctx *ctx);
int fsaio__uring_cancel(struct fsaio_ctx *ctx, struct fsaio_req *r);
bool fsaio__uring_usable(struct fsaio_ctx *ctx);
void fsaio__uring_stop(struct fsaio_ctx *ctx);      /* destroy: drain, join */
void fsaio__uring_forget(struct fsaio_ctx *ctx);    /* forked child: free only */

/* readahead.c */
int fsaio__ra_init(struct fsaio_ctx *ctx);
void fsaio__ra_fini(struct fsaio_ctx *ctx);
/* In the submitter, before a buffered read's inline attempt: stream detection. */
void fsaio__stream_enter(struct fsaio_ctx *ctx, struct fsaio_req *r, struct fsaio__fdinfo fi);
/* A stream read missed (before it is handed on): start or widen prefetch. */
void fsaio__stream_miss(struct fsaio_ctx *ctx, struct fsaio_req *r);
/* A stream request completed inline (a hit): grows an existing window. */
void fsaio__stream_hit(struct fsaio_ctx *ctx, struct fsaio_req *r);
/* A missed read the kernel has not seen waits for a busy pool: have a
 * worker start its readahead (in the submitter: records and queues). */
void fsaio__ra_upfront(struct fsaio_ctx *ctx, struct fsaio_req *r);
/* The readahead limit (bytes) of the device holding fd's file. */
uint64_t fsaio__ra_limit(int fd);

/* poller.c: parked requests of the pollable method (method_pollable.c) */
void fsaio__poller_init(struct fsaio__poller *pl);
/* Park r (state WAITING) until its fd is ready: 0, or -errno and r is the
 * caller's still (-EPERM: epoll cannot watch the fd). */
int fsaio__poller_park(struct fsaio_ctx *ctx, struct fsaio_req *r);
/* Requests of r's direction wait on its fd: r must queue behind them. */
bool fsaio__poller_queued(struct fsaio_ctx *ctx, const struct fsaio_req *r);
int fsaio__poller_cancel(struct fsaio_ctx *ctx, struct fsaio_req *r);
void fsaio__poller_stop(struct fsaio_ctx *ctx);     /* destroy: join, cancel */
void fsaio__poller_fini(struct fsaio__poller *pl);
void fsaio__poller_forget(struct fsaio__poller *pl); /* forked child: free only */
/* The poller's non-blocking retry of r's remainder (method_pollable.c): the
 * event's res, or one of these. */
#define FSAIO__STEP_AGAIN INT64_MIN             /* would block: wait for readiness */
#define FSAIO__STEP_POOL (INT64_MIN + 1)        /* only a blocking call will do: a worker */
int64_t fsaio__pollable_step(struct fsaio_ctx *ctx, struct fsaio_req *r);
/* A method's start() that finds r's fd names another kind of file now,
 * before any progress: submit checks it again and starts the right method. */
#define FSAIO__RESTART 1

/* pool.c */
int fsaio__pool_init(struct fsaio__pool *p, unsigned max);
int fsaio__pool_queue(struct fsaio_ctx *ctx, struct fsaio_req *req);
/* Queue a side job unless it is queued already; dropped by pool_stop. */
void fsaio__pool_job(struct fsaio_ctx *ctx, struct fsaio__job *job);
int fsaio__pool_cancel(struct fsaio_ctx *ctx, struct fsaio_req *req);
void fsaio__pool_stop(struct fsaio_ctx *ctx);
void fsaio__pool_fini(struct fsaio__pool *p);
void fsaio__pool_forget(struct fsaio__pool *p);     /* forked child: free only */
unsigned fsaio__pool_snapshot(struct fsaio_ctx *ctx, unsigned *threads);
/* Requests the pool runs or holds now, when no worker is idle; else 0. */
unsigned fsaio__pool_busy(struct fsaio_ctx *ctx);

/* stats.c */
#define FSAIO__INC(ctx, field, n) \
	atomic_fetch_add_explicit(&(ctx)->st.field, (n), memory_order_relaxed)

#endif /* FSAIO_INTERNAL_H */
