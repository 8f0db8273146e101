/* SPDX-License-Identifier: MIT */
/*
 * libfsaio: asynchronous buffered file I/O for Linux, in user space.
 *
 * A request is first attempted in the submitting thread without blocking
 * (preadv2 with RWF_NOWAIT, guided by a cachestat(2) residency probe). What
 * completes there is posted at once; what would block is handed, with the
 * part already done removed, to the context's io_uring ring (small read
 * misses) or to its worker threads (the rest, and everything where io_uring
 * is refused), which carry it to completion. Every accepted request yields
 * exactly one event.
 *
 * Conventions: every call returns a count, 0, or -errno and leaves errno as
 * the caller had it. An event's res is the number of bytes transferred or
 * -errno. No call is a thread cancellation point (fsaio_getevents waits
 * as io_getevents does, on a raw syscall): a cancel pending for the
 * caller's thread is acted on after the call returns, at the caller's own
 * next cancellation point.
 *
 * A request is bound to the open file its fd names at submit, as the
 * kernel's AIO holds a file reference: what runs after fsaio_submit returns
 * runs on the engine's own reference (a duplicate descriptor, a slot of its
 * io_uring ring's fixed-file table, or the poller's duplicate), released at
 * the event. Closing the fd or dup2() over it while requests are in flight
 * sends none of them to another file. A child forked meanwhile holds copies
 * of those duplicates (close-on-exec) until it execs or exits.
 */
#ifndef FSAIO_H
#define FSAIO_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <time.h>

#include "fsaio_version.h"

#ifdef __cplusplus
extern "C" {
#endif

#if defined(FSAIO_BUILDING) && defined(__GNUC__)
#define FSAIO_API __attribute__((visibility("default")))
#else
#define FSAIO_API
#endif

/* The request's buffer union has no name (r->buf, r->iov), which C99 and
 * strict ISO C modes call an extension: __extension__ says it is meant. */
#if defined(__GNUC__) && !defined(__cplusplus)
#define FSAIO_EXTENSION __extension__
#else
#define FSAIO_EXTENSION
#endif

/* A strict ISO C mode (-std=c99) leaves POSIX's struct timespec out of
 * <time.h>: declared here, it names the same type the caller has. */
struct timespec;

typedef struct fsaio_ctx fsaio_ctx_t;

enum fsaio_opcode {
	FSAIO_OP_PREAD = 1,
	FSAIO_OP_PWRITE,
	FSAIO_OP_PREADV,
	FSAIO_OP_PWRITEV,
	FSAIO_OP_FSYNC,
	FSAIO_OP_FDSYNC,
	FSAIO_OP_POLL,          /* wait for readiness: len holds POLL* events, res the revents */
	FSAIO_OP__MAX
};

/* fsaio_req.flags */
enum {
	/*
	 * Pipes, FIFOs, sockets, ttys, eventfds: a read completes only when its
	 * whole range is filled (or at EOF or an error), instead of read(2)'s
	 * "what is there". Without it, on those fds:
	 *  - a read completes with what is available once at least one byte
	 *    arrived, as read(2) returns;
	 *  - a write completes when all of it is written, however many times
	 *    the pipe or socket buffer has to drain first;
	 *  - EOF (no writer left, peer shut down) completes with the bytes done
	 *    so far, possibly 0; an error with the bytes done if any, else
	 *    -errno (-EPIPE; SIGPIPE only if the write was made in the
	 *    submitting thread, as write(2) raises it);
	 *  - the offset is ignored; waiting requests hold no thread, and one
	 *    thread's requests on one fd transfer in submission order;
	 *  - FSAIO_OP_POLL gives poll(2)'s revents once one of the events holds.
	 * The caller's O_NONBLOCK is never changed; without RWF_NOWAIT support
	 * (FIFOs opened by name, ttys) a blocking tty may hold a worker.
	 */
	FSAIO_REQ_FULL = 1u << 0,
};

/*
 * A request: owned by the caller, filled by an fsaio_prep_* helper, and left
 * untouched (with its buffers) from submit until its event is reaped. The
 * engine allocates nothing per request.
 */
struct fsaio_req {
	/* Set by the caller. */
	void *user_data;        /* returned in the event */
	FSAIO_EXTENSION union {
		void *buf;                  /* PREAD, PWRITE */
		const struct iovec *iov;    /* PREADV, PWRITEV: read at submit (len entries) and
					     * again by retries: must stay valid until the event */
	};
	uint64_t len;           /* bytes (PREAD/PWRITE) or iovec count (PREADV/PWRITEV) */
	int64_t offset;         /* file offset; -1 on pipes and sockets means "no offset" */
	int32_t fd;
	uint16_t opcode;        /* enum fsaio_opcode */
	uint16_t flags;         /* FSAIO_REQ_* */
	int32_t rw_flags;       /* RWF_NOWAIT (fail with -EAGAIN rather than queue), RWF_DSYNC, RWF_SYNC,
				 * RWF_HIPRI, RWF_APPEND, RWF_NOAPPEND, RWF_DONTCACHE (0x80: the pages
				 * the request brings into the page cache are dropped once it is done;
				 * -EOPNOTSUPP at submit where the file's filesystem cannot) */
	/* The I/O priority of a read or write, as ioprio_set(2) takes one
	 * (class << 13 | level, IOPRIO_PRIO_VALUE); 0: none, the thread's own
	 * (IOPRIO_CLASS_NONE). Checked at submit as the kernel checks
	 * IOCB_FLAG_IOPRIO: a bad class or level -EINVAL, IOPRIO_CLASS_RT
	 * without CAP_SYS_ADMIN or CAP_SYS_NICE -EPERM. The device I/O the
	 * engine does for the request runs at it: io_uring's sqe->ioprio, or
	 * the worker thread's own priority while it carries the request. */
	uint16_t ioprio;
	uint16_t reserved;      /* must be 0 */

	/* Private to the engine: zeroed by the prep helpers, never read by the caller. */
	struct fsaio_req *next_;
	struct fsaio_req *prev_;
	void *ctx_;             /* the context it was submitted to */
	uint64_t done_;         /* bytes already transferred (the kernel's bytes_done) */
	uint32_t state_;        /* atomic: who owns it now */
	uint32_t method_;       /* the method of its fd's kind of file */
	uint64_t total_;        /* bytes of the read or write */
	uint64_t run_fd_;       /* the descriptor it runs on, and how */
	uint64_t hints_;        /* what the engine noted about it on its way */
	uint64_t exec_;         /* its executor's word */
};

/* One completion; the layout of the kernel's struct io_event (32 bytes). */
struct fsaio_event {
	void *user_data;        /* req->user_data */
	struct fsaio_req *req;  /* the request, now the caller's again */
	int64_t res;            /* bytes transferred, or -errno */
	int64_t res2;           /* with res -ECANCELED: bytes transferred before the cancel; else 0 */
};

/* fsaio_params.flags */
enum {
	/* Never attempt inline: every request goes to the pool (for comparisons). */
	FSAIO_CTX_NO_INLINE = 1u << 0,
	/* Never call the residency probe before the inline attempt. */
	FSAIO_CTX_NO_PROBE = 1u << 1,
	/* No readahead of the engine's own (upfront or stream): for comparisons. */
	FSAIO_CTX_NO_READAHEAD = 1u << 2,
	/* Buffered writes to regular files complete inside fsaio_submit,
	 * blocking where they must (a page to read, dirty throttling, O_DSYNC),
	 * as the kernel's AIO does them inside io_submit: their event is
	 * queued when submit returns. Reads stay asynchronous. */
	FSAIO_CTX_INLINE_WRITES = 1u << 3,
	/* Where the kernel's AIO answers differently from the defaults, answer
	 * as it does: an O_PATH fd is refused with -EBADF whatever the opcode;
	 * a read or write on an O_NONBLOCK pipe, socket or other pollable fd
	 * that would wait completes with what one attempt did or -EAGAIN; a
	 * socket read or write with a non-zero offset completes with -ESPIPE;
	 * FSAIO_OP_POLL on a file that cannot wait (a regular file, a
	 * directory) for events it never has is refused with -EINVAL. */
	FSAIO_CTX_KERNEL_RULES = 1u << 4,
};

/*
 * Context parameters; zero means the default. A completion callback, when
 * set, receives every event instead of the context's queue (getevents then
 * returns nothing): it runs on the thread that completed the request (the
 * submitter, a worker, the io_uring or poller thread, or destroy), must not
 * block nor call into this
 * context, and the request is the caller's again from the moment it is called
 * (its queue_depth slot too: it may be submitted again from another thread).
 */
struct fsaio_params {
	uint32_t queue_depth;   /* requests accepted and not yet reaped; default 256 */
	uint32_t workers;       /* maximum pool threads, started on demand, idle ones end after 1 s; default 32 (env FSAIO_WORKERS) */
	uint32_t flags;         /* FSAIO_CTX_* */
	uint32_t miss_backend;  /* enum fsaio_backend: who carries a miss (env FSAIO_BACKEND) */
	void (*complete)(void *arg, const struct fsaio_event *ev);
	void *complete_arg;
	uint64_t reserved[6];   /* must be 0 */
};

/* fsaio_params.miss_backend */
enum fsaio_backend {
	FSAIO_BACKEND_AUTO = 0,     /* the engine picks per workload */
	FSAIO_BACKEND_THREADS,      /* the worker pool */
	FSAIO_BACKEND_URING,        /* io_uring's async buffered path, where available */
};

struct fsaio_stats {
	uint64_t requests;          /* accepted by submit */
	uint64_t completed_inline;  /* completed entirely in the submitting thread */
	uint64_t partial_inline;    /* part done inline, the remainder queued */
	uint64_t queued;            /* handed to the worker pool */
	uint64_t retries;           /* blocking calls made by workers on remaining ranges
				     * (only by workers: see blocking_inline) */
	uint64_t bytes_inline;      /* transferred in the submitting thread */
	uint64_t bytes_worker;      /* transferred by workers */
	uint64_t pool_queue_len;    /* requests waiting for a worker now */
	uint64_t pool_threads;      /* worker threads running now */
	uint64_t probe_calls;       /* residency probes made */
	uint64_t probe_cold;        /* probes that sent a request straight to the pool */
	uint64_t cancelled;         /* completed with -ECANCELED */
	uint64_t readahead_calls;   /* readahead(2) calls made by workers (upfront and stream) */
	uint64_t prefetched_bytes;  /* bytes those calls asked for */
	uint64_t stream_hits;       /* reads of a detected sequential stream completed inline */
	uint64_t uring_submissions; /* SQEs submitted to the context's io_uring ring */
	uint64_t bytes_uring;       /* transferred through io_uring */
	uint64_t reaper_sleeps;     /* times a getevents caller went to sleep */
	uint64_t reaper_wakeups;    /* wake-ups sent to sleeping getevents callers */
	uint64_t straight_to_ring;  /* read misses sent to io_uring without an inline
				     * attempt or probe (their fd keeps missing) */
	uint64_t ring_reaped_caller; /* io_uring completions taken by a getevents
				      * caller waiting in the ring itself */
	uint64_t ring_reaped_thread; /* ... by the ring's completion thread */
	uint64_t blocking_inline;   /* blocking calls made outside the pool, in the thread
				     * that had the request: writes done in the submit
				     * call (FSAIO_CTX_INLINE_WRITES), requests no worker
				     * or descriptor could be had for */
	uint64_t batch_calls;       /* system calls that made the first attempt of several
				     * reads (and, with FSAIO_CTX_INLINE_WRITES, writes)
				     * of one submit call at once */
	uint64_t batch_requests;    /* requests those calls carried */
	uint64_t batch_refused;     /* submit calls whose reads were attempted one by one
				     * because the kernel refused the engine an AIO
				     * context (seccomp, aio-max-nr) */
	uint64_t pool_collected;    /* started reads the pool finished together, their
				     * pages found landed after another's wait,
				     * without a blocking read of their own */
	uint64_t reserved[5];
};

/* Create a context; p may be NULL for defaults. 0 or -EINVAL, -EFAULT, -ENOMEM. */
FSAIO_API int fsaio_ctx_create(const struct fsaio_params *p, fsaio_ctx_t **ctxp);

/* Destroy: queued retries complete with -ECANCELED, running ones are waited
 * for; events not yet reaped are discarded (or delivered to the callback).
 * No buffer is touched after it returns. 0 or -EINVAL. */
FSAIO_API int fsaio_ctx_destroy(fsaio_ctx_t *ctx);

/* Submit nr requests in order. Returns how many were accepted; if the first
 * is refused, its -errno (-EAGAIN when queue_depth requests are in flight). */
FSAIO_API int fsaio_submit(fsaio_ctx_t *ctx, struct fsaio_req **reqs, unsigned nr);

/* Wait for at least min_nr and reap up to nr events. timeout NULL waits,
 * {0,0} polls, otherwise a relative limit after which what is there is
 * returned. Count reaped, -EINVAL, or -EINTR if a signal came before any. */
FSAIO_API int fsaio_getevents(fsaio_ctx_t *ctx, unsigned min_nr, unsigned nr,
			      struct fsaio_event *events, const struct timespec *timeout);

/* Cancel a request whose retry has not started (queued for a worker, or
 * waiting for readiness): 0, and its event arrives with -ECANCELED. -EBUSY if
 * it is running, completing, or in the io_uring ring (which does not give
 * requests back); -EINVAL if it is not in flight on this context. */
FSAIO_API int fsaio_cancel(fsaio_ctx_t *ctx, struct fsaio_req *req);

/* An eventfd, owned by the context, readable exactly while events are pending. */
FSAIO_API int fsaio_event_fd(fsaio_ctx_t *ctx);

/* Snapshot the context's counters. 0 or -EINVAL. */
FSAIO_API int fsaio_get_stats(fsaio_ctx_t *ctx, struct fsaio_stats *st);

/* Say how fd will be read: POSIX_FADV_NORMAL, _RANDOM (no stream readahead)
 * or _SEQUENTIAL (prefetch from the first read); also given to the kernel
 * as posix_fadvise(fd, 0, 0, advice). 0, -EINVAL or -EBADF. */
FSAIO_API int fsaio_fadvise(fsaio_ctx_t *ctx, int fd, int advice);

/* The running library's version, "MAJOR.MINOR.PATCH" (FSAIO_VERSION_STRING
 * is the one a program was compiled against). */
FSAIO_API const char *fsaio_version(void);

/* 1 when the running library serves a program built against major.minor:
 * the same major version and a minor at least as new; else 0. */
FSAIO_API int fsaio_version_check(int major, int minor);

/* Prep helpers: fill a request and clear the rest of it, the engine's
 * private part included. Plain assignments, field by field, so the header
 * is C99 and C++ alike; compilers merge them into a few wide stores, where
 * a memset of the whole request became a string instruction with a slow
 * start. FSAIO_PREP is static inline; libfsaio-ffi.so defines it otherwise
 * to export each helper as a function, for languages that cannot inline C. */
#ifndef FSAIO_PREP
#define FSAIO_PREP static inline
#endif

static inline void fsaio_prep__(struct fsaio_req *r, int op, int fd, void *buf,
				uint64_t len, int64_t offset)
{
	r->user_data = NULL;
	r->buf = buf;
	r->len = len;
	r->offset = offset;
	r->fd = fd;
	r->opcode = (uint16_t)op;
	r->flags = 0;
	r->rw_flags = 0;
	r->ioprio = 0;
	r->reserved = 0;
	r->next_ = NULL;
	r->prev_ = NULL;
	r->ctx_ = NULL;
	r->done_ = 0;
	r->state_ = 0;
	r->method_ = 0;
	r->total_ = 0;
	r->run_fd_ = 0;
	r->hints_ = 0;
	r->exec_ = 0;
}

FSAIO_PREP void fsaio_prep_pread(struct fsaio_req *r, int fd, void *buf, size_t n, int64_t off)
{
	fsaio_prep__(r, FSAIO_OP_PREAD, fd, buf, n, off);
}

FSAIO_PREP void fsaio_prep_pwrite(struct fsaio_req *r, int fd, const void *buf, size_t n, int64_t off)
{
	fsaio_prep__(r, FSAIO_OP_PWRITE, fd, (void *)buf, n, off);
}

FSAIO_PREP void fsaio_prep_preadv(struct fsaio_req *r, int fd, const struct iovec *iov, int iovcnt, int64_t off)
{
	fsaio_prep__(r, FSAIO_OP_PREADV, fd, (void *)iov, (uint64_t)(int64_t)iovcnt, off);
}

FSAIO_PREP void fsaio_prep_pwritev(struct fsaio_req *r, int fd, const struct iovec *iov, int iovcnt, int64_t off)
{
	fsaio_prep__(r, FSAIO_OP_PWRITEV, fd, (void *)iov, (uint64_t)(int64_t)iovcnt, off);
}

FSAIO_PREP void fsaio_prep_fsync(struct fsaio_req *r, int fd)
{
	fsaio_prep__(r, FSAIO_OP_FSYNC, fd, NULL, 0, 0);
}

FSAIO_PREP void fsaio_prep_fdatasync(struct fsaio_req *r, int fd)
{
	fsaio_prep__(r, FSAIO_OP_FDSYNC, fd, NULL, 0, 0);
}

FSAIO_PREP void fsaio_prep_poll(struct fsaio_req *r, int fd, short events)
{
	fsaio_prep__(r, FSAIO_OP_POLL, fd, NULL, (uint64_t)(unsigned short)events, -1);
}

#ifdef __cplusplus
}
#endif
#endif /* FSAIO_H */
