/* SPDX-License-Identifier: MIT */
/* A request's private fields and state, as the engine's files read them. */
#ifndef FSAIO_REQ_H
#define FSAIO_REQ_H

#include <errno.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "fsaio.h"
#include "nocancel.h"

#define FSAIO__API __attribute__((visibility("default")))

/* Linux 6.14's uncached buffered I/O, where the system headers predate it. */
#ifndef RWF_DONTCACHE
#define RWF_DONTCACHE 0x00000080
#endif
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

/* Inline completions of one submit call, posted together at its end. */
#define FSAIO__BATCH 32
/* fsaio__batch.cs when the submitter has not disabled cancellation (yet);
 * otherwise it holds the caller's state, to be put back at the end. */
#define FSAIO__CS_LAZY (-1)
struct fsaio__batch {
	unsigned n;
	int cs;                 /* the submitter's: FSAIO__CS_LAZY or a PTHREAD_CANCEL_* */
	/* The call brought this one request: what it sends to the ring may
	 * wait past the call's return (uring_doorbell.c). A call of several
	 * enters them once at its end: holding costs a registration each. */
	bool alone;
	/* The request being started had its first attempt made already, with
	 * the call's other reads (rw_batch.c): its answer, taken by the
	 * method's attempt in place of its first system call. */
	bool has_first;
	int64_t first;
	struct fsaio_event ev[FSAIO__BATCH];
};

/* Before a step that may reach a cancellation point: disable cancellation
 * for the rest of the submit call, unless that is done already. */
static inline void fsaio__batch_nocancel(struct fsaio__batch *b)
{
	if (b && b->cs == FSAIO__CS_LAZY)
		b->cs = fsaio__nocancel_begin();
}

/* The kernel's bytes_done rule: progress wins over a later error; only a
 * request that did nothing reports the error. Cancel is the exception and
 * reports -ECANCELED with the progress in res2 (fsaio__complete). */
static inline int64_t fsaio__result(const struct fsaio_req *req, int64_t err)
{
	if (err < 0 && err != -ECANCELED && req->done_)
		return (int64_t)req->done_;
	return err;
}

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
/* RWF_DONTCACHE: the pages r brings in are dropped once it is done. The
 * engine starts no readahead of its own for it (readahead(2) would fill
 * the cache with pages kept), nor counts it in a stream (readahead.c). */
static inline bool fsaio__dontcache(const struct fsaio_req *r)
{
	return r->rw_flags & RWF_DONTCACHE;
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
#define FSAIO__RUN_READY (1ull << 34)    /* its file's reads return what is ready (FSAIO__FD_READS_READY) */
/* What fsaio__fd_fit decided of the request, kept when its descriptor changes. */
#define FSAIO__RUN_HOW (FSAIO__RUN_STREAM | FSAIO__RUN_READY)
static inline bool fsaio__is_stream(const struct fsaio_req *r)
{
	return r->run_fd_ & FSAIO__RUN_STREAM;
}
/*
 * The short-read rule: a request's result is what one blocking call on its
 * file would return. A read of a file whose blocking read(2) returns what is
 * ready (pipe, socket, tty, eventfd...: FSAIO__FD_READS_READY) ends with the
 * first call that moves bytes, unless the caller asked for FSAIO_REQ_FULL.
 * Everywhere else (regular files, block devices, /dev/zero and the other
 * memory devices) a short count, a RWF_NOWAIT one above all, is not an
 * answer: the engine carries on to the full count, EOF or an error.
 */
static inline bool fsaio__short_is_final(const struct fsaio_req *r)
{
	return (r->run_fd_ & FSAIO__RUN_READY) && !fsaio__is_write(r) &&
	       !(r->flags & FSAIO_REQ_FULL);
}
static inline int fsaio__fd(const struct fsaio_req *r) { return (int)(uint32_t)r->run_fd_; }
/* hints_ of FILE and DIRECT requests: FSAIO__HINT_* flags, written by
 * whoever owns the request at the time (state_ hands it over with
 * release/acquire). exec_ belongs to the executor that holds the request:
 * the ring's fixed-file slot, or the poller's result for its completion. */
enum {
	FSAIO__HINT_SEQ = 1u << 0,        /* part of a sequential stream (readahead.c) */
	FSAIO__HINT_KERNEL_RA = 1u << 1,  /* a NOWAIT miss already started readahead */
	FSAIO__HINT_EFAULT_RETRY = 1u << 3, /* uring.c: resubmitted once after an -EFAULT */
};

#endif /* FSAIO_REQ_H */
