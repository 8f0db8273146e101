/* SPDX-License-Identifier: MIT */
/*
 * libfsaio-posixaio: glibc's POSIX AIO ABI on top of the libfsaio engine.
 *
 * Private structures shared by the drop-in's files.
 *
 * Where the state lives. A request's status is kept where glibc keeps it,
 * in the program's aiocb: __error_code (EINPROGRESS until the request is
 * complete, then 0 or the errno) and __return_value. aio_error and
 * aio_return are then one load, as in glibc, and need no lookup. Everything
 * else a request needs (the engine's 120-byte request, the copied
 * notification, the order on its fd) is a struct px_req of ours, allocated
 * per request: __glibc_reserved is 32 bytes, too small for the engine's
 * request.
 *
 * Threads: any program thread calls in; the engine's callback px__complete
 * runs on the thread that completed a request (the submitter for a cache
 * hit, an engine worker, the io_uring or poller thread, or a canceller);
 * one dispatcher thread of ours submits the requests that were held back
 * behind earlier ones on their fd (aio_fsync, O_APPEND writes).
 *
 * Locks, outer first: ctx_lock (engine.c) -> engine locks, while it makes
 * or destroys a context; in the fork handlers alone ctx_lock -> disp_lock
 * -> every bucket->lock (core.c). Otherwise bucket->lock and disp_lock are
 * leaves. The engine's locks are leaves too: it calls px__complete with
 * none of them held, but in the thread of whichever call completes the
 * request (fsaio_submit's cache hit, fsaio_cancel), and px__complete takes
 * a bucket lock; so no bucket lock is held across a call into the engine.
 *
 * Files, top first, each using only those below it (scripts/check-layers):
 * api.c; start.c; core.c; wait.c; engine.c; notify.c; this header. Each .c
 * declares what it offers in the header of its name.
 */
#ifndef FSAIO_PX_H
#define FSAIO_PX_H

#include <aio.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "fsaio.h"

/* glibc's struct aiocb on x86-64, field by field: the drop-in reads the
 * program's control blocks and writes the two status fields. */
#define PX_OFF(f, o) _Static_assert(offsetof(struct aiocb, f) == (o) && \
				    offsetof(struct aiocb64, f) == (o), #f)
PX_OFF(aio_fildes, 0);
PX_OFF(aio_lio_opcode, 4);
PX_OFF(aio_reqprio, 8);
PX_OFF(aio_buf, 16);
PX_OFF(aio_nbytes, 24);
PX_OFF(aio_sigevent, 32);
PX_OFF(__error_code, 112);
PX_OFF(__return_value, 120);
PX_OFF(aio_offset, 128);
#undef PX_OFF
_Static_assert(sizeof(struct aiocb) == 168 && sizeof(struct aiocb64) == 168,
	       "struct aiocb and aiocb64 are 168 bytes and alike on x86-64");
_Static_assert(sizeof(((struct aiocb *)0)->__error_code) == sizeof(_Atomic int),
	       "__error_code is accessed as an atomic int");
_Static_assert(sizeof(((struct aiocb *)0)->aio_offset) == 8, "64-bit offsets");

enum px_kind { PX_READ, PX_WRITE, PX_SYNC, PX_DSYNC, PX_BAD };

enum px_state {
	PX_HELD,        /* waits for earlier requests on its fd (blockers > 0) */
	PX_QUEUED,      /* free to go, in the dispatcher's queue */
	PX_SUBMITTING,  /* being handed to the engine: not to be cancelled yet */
	PX_ENGINE,      /* the engine's: fsaio_cancel may take it back */
	PX_CANCEL,      /* taken back by aio_cancel before the engine saw it */
	PX_DONE,        /* status published; unlinked */
};

/* lio_listio's list-wide notification and LIO_WAIT's wait. */
struct px_group {
	_Atomic uint32_t pending;   /* requests not yet complete, +1 while lio_listio submits */
	_Atomic uint32_t refs;      /* pending requests' share (1) + the LIO_WAIT caller (1) */
	struct sigevent sev;        /* immutable copy; SIGEV_NONE for LIO_WAIT */
	pid_t pid;                  /* immutable: the submitter, for si_pid (SIGEV_SIGNAL only) */
};

struct px_req {
	struct fsaio_req req;       /* the engine's: owned by it from submit to px__complete */
	struct aiocb *cb;           /* immutable: the program's control block */
	struct px_group *group;     /* immutable: lio_listio's group, or NULL */
	struct sigevent sev;        /* immutable copy of the request's notification */
	pid_t pid;                  /* immutable: the submitter, for si_pid (SIGEV_SIGNAL only) */
	int fd;                     /* immutable */
	uint8_t kind;               /* immutable: enum px_kind */
	uint8_t ctx_kind;           /* immutable: the engine context that carries it (PX_PLAIN...) */
	bool barrier;               /* immutable: waits for earlier requests (fsync, O_APPEND write) */
	bool ordered;               /* immutable: a write that a later O_APPEND write waits for */
	int bound_fd;               /* set at link (bucket lock), closed at finish: a held
				     * barrier's duplicate of fd, the one given to the engine; or -1 */
	/* bucket lock: */
	uint8_t state;              /* enum px_state */
	unsigned blockers;          /* earlier requests on the fd this one still waits for */
	uint64_t seq;               /* its place in the bucket's submission order */
	struct px_req *next, *prev; /* the bucket's requests, in submission order */
	struct px_req *hnext, *hprev; /* the bucket's PX_HELD requests, in submission order */
	_Atomic uint32_t refs;      /* 1 while in flight, +1 for each aio_cancel looking at it,
				     * the dispatcher queue holding it, the submitter in fsaio_submit */
	struct px_req *dnext;       /* disp_lock: the dispatcher's queue */
};

/* cb's final status: res bytes, or -errno (aio_return -1, aio_error
 * errno). The error is stored last, with release: from then on the aiocb
 * is the program's again. */
static inline void px__set_status(struct aiocb *cb, int64_t res)
{
	cb->__return_value = res < 0 ? -1 : (ssize_t)res;
	atomic_store_explicit((_Atomic int *)&cb->__error_code, res < 0 ? (int)-res : 0,
			      memory_order_release);
}

#endif /* FSAIO_PX_H */
