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
 * else a request needs (the engine's 128-byte request, the copied
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
 * Locks, outer first: ctx_lock -> (engine); bucket->lock -> nothing.
 * A bucket lock is a leaf: never held across a call into the engine, which
 * may call px__complete with its own locks held, and px__complete takes a
 * bucket lock. disp_lock is a leaf too.
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

/* engine.c: the engine contexts (PX_PLAIN, PX_SIGNALLED) and process start */
enum { PX_PLAIN, PX_SIGNALLED, PX_NCTX };
void px__init(void);                            /* once per process, idempotent */
void px__set_workers(unsigned n);               /* aio_init's aio_threads, before first use */
int px__ctx_kind(const struct px_req *r);       /* which context carries r */
fsaio_ctx_t *px__engine(int kind);              /* made on first use; NULL if it cannot be */
fsaio_ctx_t *px__engine_now(int kind);          /* NULL until made */
void *px__engine_tag(int kind);                 /* the complete_arg of kind's context */

/* core.c */
void px__queues_init(void);
void px__queues_fork_prepare(void);             /* fork handlers of the request queues */
void px__queues_fork_parent(void);
void px__queues_fork_child(void);
struct px_req *px__alloc(struct aiocb *cb, int kind, struct px_group *g, bool notify);
/* Accept r: link it on its fd and hand it to the engine (or hold it).
 * 0, or -EAGAIN when it could not be taken (status set in the aiocb). */
int px__submit(struct px_req *r);
int px__submit_engine(struct px_req *r, bool submitter);
void px__complete(void *arg, const struct fsaio_event *ev);   /* wait.c */
void px__finish(struct px_req *r, int64_t res);
void px__unref(struct px_req *r);
void px__group_put(struct px_group *g);
void px__notify(const struct sigevent *sev, pid_t pid);
/* Around a call into the engine: this thread's notifications are held
 * and sent by px__hold_end. */
void px__hold_begin(void);
void px__hold_end(void);
/* Is cb a request in flight (submitted, not yet complete)? */
bool px__in_flight(const struct aiocb *cb);
/* aio_cancel's work on one fd (cb NULL: all): AIO_CANCELED, _NOTCANCELED,
 * _ALLDONE, or -EINVAL for an aiocb in progress that is no request. */
int px__cancel(int fd, struct aiocb *cb);

/* wait.c: one futex word bumped by every completion */
extern _Atomic uint32_t px__seq;
void px__wake(void);
/* Sleep until px__seq moves from seen or the absolute CLOCK_MONOTONIC
 * deadline (NULL: none) passes: 0, -ETIMEDOUT or -EINTR. cancellable: a
 * pthread_cancel ends the sleep (the thread unwinds from it). */
int px__wait(uint32_t seen, const struct timespec *deadline, bool cancellable);
/* Between them the caller counts as a sleeper (aio_cancel's wait). */
void px__wait_begin(void);
void px__wait_end(void);
void px__wait_fork_child(void);                 /* no thread of the child waits */
/* The cancellable wait of aio_suspend and lio_listio: until done(arg),
 * looked at after every completion; 0, -ETIMEDOUT or -EINTR. */
int px__wait_until(bool (*done)(void *), void *arg, const struct timespec *deadline);

#endif /* FSAIO_PX_H */
