/* SPDX-License-Identifier: MIT */
/*
 * Private structures shared by the engine's files.
 *
 * Threads: any number of caller threads submit and reap on one context at
 * once; worker threads (pool.c) run retries. Lock order, outer first:
 *   pool.lock -> cq.lock
 * (cancel holds pool.lock while it completes a request; nothing takes
 * pool.lock while holding cq.lock). fdtable.lock is a leaf. poller.lock
 * (poller.c) is a leaf too: the poller completes requests and hands them
 * to the pool only after releasing it. uring.sq_lock (uring.c), the
 * readahead slot locks and ra.up_lock (readahead.c) are leaves as well:
 * completions, pool_queue and pool_job are called after they are dropped.
 */
#ifndef FSAIO_INTERNAL_H
#define FSAIO_INTERNAL_H

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
	FSAIO__FD_SOCKET = 1u << 11,
	FSAIO__FD_PATH = 1u << 12,      /* opened O_PATH: no I/O of any kind */
	FSAIO__FD_NO_READ_ITER = 1u << 13, /* the file has no read_iter (directory, inotify, epoll) */
	FSAIO__FD_NO_WRITE_ITER = 1u << 14, /* nor write_iter (directory, eventfd, timerfd, signalfd) */
	FSAIO__FD_ANON = 1u << 15,      /* an anonymous inode (eventfd, timerfd, signalfd, ...) */
};

struct fsaio__fdinfo {
	uint32_t flags;         /* FSAIO__FD_* */
	uint32_t kind;          /* enum fsaio__kind */
};

/* FSAIO__FD_NO_READ_ITER / _NO_WRITE_ITER of an anonymous inode, by name. */
uint32_t fsaio__anon_no_iter(int fd);

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
	struct fsaio__pfd **fds; /* lock: [nfds] by fd number, NULL until used */
	unsigned nfds;          /* lock */
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
	unsigned waiters;       /* lock: threads sleeping on seq */
	int efd;                /* lock: -1 until fsaio_event_fd() asks for it */
	bool efd_set;           /* lock: efd holds a non-zero count */
};

struct fsaio__counters {
	_Atomic uint64_t requests, completed_inline, partial_inline, queued, retries;
	_Atomic uint64_t bytes_inline, bytes_worker, probe_calls, probe_cold, cancelled;
	/* readahead.c, uring.c */
	_Atomic uint64_t ra_calls, ra_bytes, stream_hits, uring_sqes, bytes_uring;
};

struct fsaio_ctx {
	unsigned fork_gen;      /* immutable: fsaio__fork_gen at creation */
	unsigned depth;         /* immutable */
	uint32_t flags;         /* immutable: FSAIO_CTX_* */
	void (*complete_cb)(void *, const struct fsaio_event *); /* immutable */
	void *complete_arg;     /* immutable */
	_Atomic unsigned in_flight; /* accepted and not yet reaped (or called back) */
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

/* Inline completions of one submit call, posted together at its end. */
#define FSAIO__BATCH 32
struct fsaio__batch {
	unsigned n;
	struct fsaio_event ev[FSAIO__BATCH];
};

/* ctx.c */
extern _Atomic unsigned fsaio__fork_gen;
bool fsaio__ctx_ok(const struct fsaio_ctx *ctx);

/* cq.c */
int fsaio__cq_init(struct fsaio__cq *cq, unsigned size);
void fsaio__cq_fini(struct fsaio__cq *cq);
void fsaio__post(struct fsaio_ctx *ctx, const struct fsaio_event *ev, unsigned n);

/* completion: turn progress and a final result into the event (submit.c) */
int64_t fsaio__result(const struct fsaio_req *req, int64_t err);
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
/* Total bytes of a read or write, computed once at submit (priv_[0]). */
static inline uint64_t fsaio__total(const struct fsaio_req *r) { return r->priv_[0]; }
/* FSAIO_OP_POLL on a regular file: always ready, as poll(2) says of one. */
static inline int64_t fsaio__file_revents(const struct fsaio_req *r)
{
	return (int64_t)(r->len & (POLLIN | POLLOUT | POLLRDNORM | POLLWRNORM));
}
/* priv_[1]: 1 when the fd has no file position to honour (pipes, sockets). */
static inline bool fsaio__is_stream(const struct fsaio_req *r) { return r->priv_[1] != 0; }
/* priv_[2] of FILE and DIRECT requests: FSAIO__P2_* flags, written by whoever
 * owns the request at the time (state_ hands it over with release/acquire);
 * priv_[3] is free. */
enum {
	FSAIO__P2_SEQ = 1u << 0,        /* part of a sequential stream (readahead.c) */
	FSAIO__P2_KERNEL_RA = 1u << 1,  /* a NOWAIT miss already started readahead */
	/* 1u << 2 free: cancels are tracked in uring.c, not in the request */
	FSAIO__P2_EFAULT_RETRY = 1u << 3, /* uring.c: resubmitted once after an -EFAULT */
};
/* The iovecs of what remains after req->done_; returns the count, fills *out
 * (pointing into tmp when a copy was needed); at most cap entries. */
int fsaio__iov_rest(const struct fsaio_req *r, struct iovec *tmp, int cap,
		    const struct iovec **out);
/* One preadv2/pwritev2 of the remainder; returns bytes or -errno. */
ssize_t fsaio__rw_once(const struct fsaio_req *r, struct iovec *tmp, int cap, int flags);
/* Blocking: run the remainder to completion, EOF or error; returns the event res. */
int64_t fsaio__rw_blocking(struct fsaio_ctx *ctx, struct fsaio_req *r);
/* A method's start() hands a request to the pool, or with the caller's
 * RWF_NOWAIT completes it with what was done or -EAGAIN. */
/* The retry every method uses on a worker: fsync/fdatasync, poll(2), or
 * fsaio__rw_blocking (method_blocking.c). */
int64_t fsaio__retry_blocking(struct fsaio_ctx *ctx, struct fsaio_req *r);
void fsaio__handoff(struct fsaio_ctx *ctx, struct fsaio_req *r, struct fsaio__batch *b);

/* fdtable.c */
int fsaio__fdtable_init(struct fsaio__fdtable *t);
void fsaio__fdtable_fini(struct fsaio__fdtable *t);
int fsaio__fd_get(struct fsaio_ctx *ctx, int fd, struct fsaio__fdinfo *out);
int fsaio__fd_refresh(struct fsaio_ctx *ctx, int fd, struct fsaio__fdinfo *out);
void fsaio__fd_set(struct fsaio_ctx *ctx, int fd, uint32_t flags);
void fsaio__fd_clear(struct fsaio_ctx *ctx, int fd, uint32_t flags);

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
uint32_t fsaio__backend_param(uint32_t param);      /* the param or FSAIO_BACKEND */
/* A buffered read or write that would block: RWF_NOWAIT answer, ring or pool. */
void fsaio__miss(struct fsaio_ctx *ctx, struct fsaio_req *r, struct fsaio__batch *b);

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

/* pool.c */
int fsaio__pool_init(struct fsaio__pool *p, unsigned max);
void fsaio__pool_queue(struct fsaio_ctx *ctx, struct fsaio_req *req);
/* Queue a side job unless it is queued already; dropped by pool_stop. */
void fsaio__pool_job(struct fsaio_ctx *ctx, struct fsaio__job *job);
int fsaio__pool_cancel(struct fsaio_ctx *ctx, struct fsaio_req *req);
void fsaio__pool_stop(struct fsaio_ctx *ctx);
void fsaio__pool_fini(struct fsaio__pool *p);
unsigned fsaio__pool_snapshot(struct fsaio_ctx *ctx, unsigned *threads);
/* Requests the pool runs or holds now, when no worker is idle; else 0. */
unsigned fsaio__pool_busy(struct fsaio_ctx *ctx);

/* stats.c */
#define FSAIO__INC(ctx, field, n) \
	atomic_fetch_add_explicit(&(ctx)->st.field, (n), memory_order_relaxed)

#endif /* FSAIO_INTERNAL_H */
