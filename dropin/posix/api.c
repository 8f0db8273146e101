/* SPDX-License-Identifier: MIT */
/*
 * DESIGN: the exported entry points, glibc's POSIX AIO ABI on x86-64.
 *
 * Each function is exported under the versions a program may have bound:
 * GLIBC_2.34 (libc.so.6 since glibc 2.34, the default for new links) and
 * GLIBC_2.2.5 (librt.so.1 before, and libc's compatibility copies), plus
 * lio_listio's GLIBC_2.4 (see lio below). The *64 forms take struct
 * aiocb64, which on x86-64 is struct aiocb (px.h checks it).
 *
 * errno: set on failure as POSIX says; left as it was on success. The
 * caller's aiocbs, lists, sigevent and timeout are read with the engine's
 * fault-safe copy first: one that cannot be read (or an aiocb that cannot
 * be written: its status is kept in it) is EFAULT and nothing of the call
 * is started, where glibc would crash. An aiocb must stay mapped until its
 * status has been read, as POSIX says. The
 * cancellation points are aio_suspend and lio_listio(LIO_WAIT)'s wait,
 * both cancellable while they sleep (wait.c); submitting runs with
 * cancellation disabled, as the engine's calls do.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <time.h>

#include "core.h"
#include "engine.h"
#include "nocancel.h"
#include "notify.h"
#include "start.h"
#include "symver.h"
#include "usercopy.h"
#include "wait.h"

#define PX_EXPORT(name, type, args) \
	FSAIO__SYMVER(px_##name, #name "@@GLIBC_2.34"); \
	FSAIO__SYMVER(px_##name, #name "@GLIBC_2.2.5"); \
	FSAIO__VERSIONED type px_##name args

static int fail(int e)
{
	errno = e;
	return -1;
}

/* An aiocb the call may read (its fields, its status). */
static bool cb_readable(const struct aiocb *cb)
{
	struct aiocb copy;

	return !fsaio__copy_user(&copy, cb, sizeof(copy));
}

/* An aiocb a request may be made for: the engine writes its status. */
static bool cb_usable(struct aiocb *cb)
{
	return !fsaio__user_rw_ok(cb, sizeof(*cb));
}

/* A list of nent aiocb pointers, each NULL or usable (or, !rw, readable). */
static bool list_ok(const struct aiocb *const list[], int nent, bool rw)
{
	for (int i = 0; i < nent; i++) {
		struct aiocb *cb;

		if (fsaio__copy_user(&cb, FSAIO__USER_AT(list, i * sizeof(*list)), sizeof(cb)))
			return false;
		if (cb && !(rw ? cb_usable(cb) : cb_readable(cb)))
			return false;
	}
	return true;
}

/* glibc refuses a priority outside [0, AIO_PRIO_DELTA_MAX] at submit,
 * and leaves EINVAL and -1 in the aiocb. */
static bool prio_ok(const struct aiocb *cb)
{
	return cb->aio_reqprio >= 0 && cb->aio_reqprio <= AIO_PRIO_DELTA_MAX;
}

static bool bad_prio(struct aiocb *cb)
{
	if (prio_ok(cb))
		return false;
	px__set_status(cb, -EINVAL);
	return true;
}

static int submit_one(struct aiocb *cb, int kind, struct px_group *g, bool notify)
{
	struct px_req *r;
	int ret;

	/* glibc checks the priority of reads and writes, not of aio_fsync. */
	if ((kind == PX_READ || kind == PX_WRITE || kind == PX_BAD) && bad_prio(cb))
		return -EINVAL;
	px__init();
	r = px__alloc(cb, kind, g, notify);
	if (!r) {
		px__set_status(cb, -EAGAIN);
		return -EAGAIN;
	}
	if (g)
		atomic_fetch_add_explicit(&g->pending, 1, memory_order_relaxed);
	ret = px__submit(r);
	if (ret && g)
		atomic_fetch_sub_explicit(&g->pending, 1, memory_order_relaxed);
	return ret;
}

/* A read the page cache has is done before a request is made for it
 * (px__reads_now), on a path with no cancellation point; a bad priority is
 * left for submit_one to refuse. */
static bool is_read(const struct aiocb *cb, int kind)
{
	return kind == PX_READ && prio_ok(cb);
}

static int rw(struct aiocb *cb, int kind)
{
	int saved = errno, cs, ret;

	if (!cb_usable(cb))
		return fail(EFAULT);
	if (is_read(cb, kind) && px__reads_now(&cb, 1)) {
		errno = saved;
		return 0;
	}
	cs = fsaio__nocancel_begin();
	ret = submit_one(cb, kind, NULL, true);
	fsaio__nocancel_end(cs);
	if (ret)
		return fail(-ret);
	errno = saved;
	return 0;
}

PX_EXPORT(aio_read, int, (struct aiocb *cb)) { return rw(cb, PX_READ); }
PX_EXPORT(aio_read64, int, (struct aiocb64 *cb)) { return rw((struct aiocb *)cb, PX_READ); }
PX_EXPORT(aio_write, int, (struct aiocb *cb)) { return rw(cb, PX_WRITE); }
PX_EXPORT(aio_write64, int, (struct aiocb64 *cb)) { return rw((struct aiocb *)cb, PX_WRITE); }

static int do_fsync(int op, struct aiocb *cb)
{
	int saved = errno;

	if (op != O_SYNC && op != O_DSYNC)
		return fail(EINVAL);
	if (!cb_usable(cb))
		return fail(EFAULT);
	/* glibc checks the descriptor here, not in the request. */
	if (fcntl(cb->aio_fildes, F_GETFL) == -1)
		return fail(EBADF);
	errno = saved;
	return rw(cb, op == O_SYNC ? PX_SYNC : PX_DSYNC);
}

PX_EXPORT(aio_fsync, int, (int op, struct aiocb *cb)) { return do_fsync(op, cb); }
PX_EXPORT(aio_fsync64, int, (int op, struct aiocb64 *cb)) { return do_fsync(op, (struct aiocb *)cb); }

static int error_of(const struct aiocb *cb)
{
	return atomic_load_explicit((_Atomic int *)&cb->__error_code, memory_order_acquire);
}

static int status_of(const struct aiocb *cb)
{
	return cb_readable(cb) ? error_of(cb) : fail(EFAULT);
}

PX_EXPORT(aio_error, int, (const struct aiocb *cb)) { return status_of(cb); }
PX_EXPORT(aio_error64, int, (const struct aiocb64 *cb)) { return status_of((const struct aiocb *)cb); }

static ssize_t return_of(struct aiocb *cb)
{
	if (!cb_readable(cb))
		return fail(EFAULT);
	(void)error_of(cb);     /* acquire: the value written before the status */
	return cb->__return_value;
}

PX_EXPORT(aio_return, ssize_t, (struct aiocb *cb)) { return return_of(cb); }
PX_EXPORT(aio_return64, ssize_t, (struct aiocb64 *cb)) { return return_of((struct aiocb *)cb); }

static int cancel(int fd, struct aiocb *cb)
{
	int saved = errno, cs, ret;

	if (fcntl(fd, F_GETFL) == -1)
		return fail(EBADF);
	if (cb && !cb_readable(cb))
		return fail(EFAULT);
	if (cb && cb->aio_fildes != fd)
		return fail(EINVAL);
	cs = fsaio__nocancel_begin();
	px__init();
	ret = px__cancel(fd, cb);
	fsaio__nocancel_end(cs);
	if (ret < 0)
		return fail(-ret);
	errno = saved;
	return ret;
}

PX_EXPORT(aio_cancel, int, (int fd, struct aiocb *cb)) { return cancel(fd, cb); }
PX_EXPORT(aio_cancel64, int, (int fd, struct aiocb64 *cb)) { return cancel(fd, (struct aiocb *)cb); }

static void deadline_after(const struct timespec *rel, struct timespec *abs)
{
	clock_gettime(CLOCK_MONOTONIC, abs);
	abs->tv_sec += rel->tv_sec;
	abs->tv_nsec += rel->tv_nsec;
	if (abs->tv_nsec >= 1000000000L) {
		abs->tv_sec++;
		abs->tv_nsec -= 1000000000L;
	}
}

/* Does aio_suspend return without sleeping? glibc's rule: when an entry is
 * complete, none is listed, or one in progress is not a request in flight
 * (an aiocb copied while in progress and never submitted). */
static bool suspend_at_once(const struct aiocb *const list[], int nent)
{
	bool pending = false;

	for (int i = 0; i < nent; i++) {
		if (!list[i])
			continue;
		if (error_of(list[i]) != EINPROGRESS)
			return true;
		pending = true;
	}
	if (!pending)
		return true;
	for (int i = 0; i < nent; i++)
		if (list[i] && !px__in_flight(list[i]))
			return true;
	return false;
}

struct suspend_list {
	const struct aiocb *const *list;
	int nent;
};

static bool suspend_done(void *arg)
{
	const struct suspend_list *l = arg;

	for (int i = 0; i < l->nent; i++)
		if (l->list[i] && error_of(l->list[i]) != EINPROGRESS)
			return true;
	return false;
}

static int suspend(const struct aiocb *const list[], int nent, const struct timespec *timeout)
{
	struct timespec dl, t;
	int saved = errno, ret;

	if (nent < 0)
		return fail(EINVAL);
	pthread_testcancel();
	if (!list_ok(list, nent, false))
		return fail(EFAULT);
	if (suspend_at_once(list, nent)) {
		errno = saved;
		return 0;
	}
	if (timeout) {
		if (fsaio__copy_user(&t, timeout, sizeof(t)))
			return fail(EFAULT);
		if (t.tv_nsec < 0 || t.tv_nsec >= 1000000000L || t.tv_sec < 0)
			return fail(EINVAL);
		deadline_after(&t, &dl);
	}
	ret = px__wait_until(suspend_done, &(struct suspend_list){ list, nent },
			     timeout ? &dl : NULL);
	if (ret == -ETIMEDOUT)
		ret = -EAGAIN;
	if (ret)
		return fail(-ret);
	errno = saved;
	return 0;
}

PX_EXPORT(aio_suspend, int, (const struct aiocb *const list[], int nent, const struct timespec *timeout))
{
	return suspend(list, nent, timeout);
}

PX_EXPORT(aio_suspend64, int, (const struct aiocb64 *const list[], int nent,
			       const struct timespec *timeout))
{
	return suspend((const struct aiocb *const *)list, nent, timeout);
}

/*
 * lio_listio: every element that is not NULL or LIO_NOP is submitted as
 * aio_read/aio_write would be; sig fires once all of them are complete
 * (LIO_NOWAIT), or the caller waits for that (LIO_WAIT). The elements'
 * own notifications are sent too, by every version of it (glibc 2.36's
 * GLIBC_2.2.5 form sends them as well).
 */
static bool list_done(void *arg)
{
	struct px_group *g = arg;

	return atomic_load_explicit(&g->pending, memory_order_acquire) == 0;
}

static void group_cleanup(void *arg)
{
	px__group_put(arg);
}

/* LIO_WAIT: 0 once every element is complete, or -EINTR. The caller's
 * reference to the list is dropped however the wait ends (returning or
 * cancelled): the list's requests go on without it. */
static int lio_wait(struct px_group *g)
{
	int w;

	pthread_cleanup_push(group_cleanup, g);
	w = px__wait_until(list_done, g, NULL);
	pthread_cleanup_pop(1);
	return w;
}

/* From list[i], a read: the run of reads up to the next other element
 * (NULLs and LIO_NOPs passed over), PX_NOW_MAX at most, those the page
 * cache has done now (px__reads_now); bit k of *done set when the run's
 * k-th read is. The index after the run. */
static int reads_now(struct aiocb *const list[], int nent, int i, uint64_t *done)
{
	struct aiocb *run[PX_NOW_MAX];
	unsigned n = 0;
	int j;

	for (j = i; j < nent && n < PX_NOW_MAX; j++) {
		struct aiocb *cb = list[j];

		if (!cb || cb->aio_lio_opcode == LIO_NOP)
			continue;
		if (cb->aio_lio_opcode != LIO_READ || !prio_ok(cb))
			break;
		run[n++] = cb;
	}
	*done = px__reads_now(run, n);
	return j;
}

static int lio(int mode, struct aiocb *const list[], int nent, struct sigevent *sig)
{
	struct px_group *g;
	int saved = errno, cs, err = 0;
	uint64_t done = 0;      /* reads_now's answer for the current run */
	unsigned k = 0;         /* the next read's place in that run */
	bool last;

	struct sigevent sev = { .sigev_notify = SIGEV_NONE };

	if (mode != LIO_WAIT && mode != LIO_NOWAIT)
		return fail(EINVAL);
	if (nent > 0 && !list_ok((const struct aiocb *const *)list, nent, true))
		return fail(EFAULT);
	if (mode == LIO_NOWAIT && sig && fsaio__copy_user(&sev, sig, sizeof(sev)))
		return fail(EFAULT);
	g = calloc(1, sizeof(*g));
	if (!g)
		return fail(EAGAIN);
	atomic_init(&g->pending, 1);
	atomic_init(&g->refs, mode == LIO_WAIT ? 2 : 1);
	g->sev = sev;
	if (px__sev_signals(&g->sev))
		g->pid = getpid();

	cs = fsaio__nocancel_begin();
	px__batch_begin(nent == 1);
	for (int i = 0, run_end = 0; i < nent; i++) {
		struct aiocb *cb = list[i];
		int kind, r;

		if (!cb || cb->aio_lio_opcode == LIO_NOP)
			continue;
		kind = cb->aio_lio_opcode == LIO_READ ? PX_READ :
		       cb->aio_lio_opcode == LIO_WRITE ? PX_WRITE : PX_BAD;
		/* A read done now is no longer the list's to wait for. */
		if (is_read(cb, kind)) {
			if (i >= run_end) {
				run_end = reads_now(list, nent, i, &done);
				k = 0;
			}
			if (done >> k++ & 1)
				continue;
		}
		r = submit_one(cb, kind, g, true);
		if (r)
			err = -r;
	}
	px__batch_end();
	fsaio__nocancel_end(cs);
	/* The submitter's own share: the list may be complete already. */
	last = atomic_fetch_sub_explicit(&g->pending, 1, memory_order_acq_rel) == 1;
	if (last) {
		px__notify(&g->sev, g->pid);
		px__group_put(g);
	}
	if (mode == LIO_WAIT) {
		int w = lio_wait(g);

		if (w == -EINTR)
			return fail(EINTR);
		if (!err)
			for (int i = 0; i < nent && !err; i++)
				if (list[i] && list[i]->aio_lio_opcode != LIO_NOP &&
				    error_of(list[i]) != 0)
					err = EIO;
		if (err)
			return fail(EIO);
		errno = saved;
		return 0;
	}
	if (err)
		return fail(err);
	errno = saved;
	return 0;
}

FSAIO__SYMVER(px_lio_listio, "lio_listio@@GLIBC_2.34");
FSAIO__SYMVER(px_lio_listio, "lio_listio@GLIBC_2.4");
FSAIO__VERSIONED
int px_lio_listio(int mode, struct aiocb *const list[], int nent, struct sigevent *sig)
{
	return lio(mode, list, nent, sig);
}

FSAIO__SYMVER(px_lio_listio64, "lio_listio64@@GLIBC_2.34");
FSAIO__SYMVER(px_lio_listio64, "lio_listio64@GLIBC_2.4");
FSAIO__VERSIONED
int px_lio_listio64(int mode, struct aiocb64 *const list[], int nent, struct sigevent *sig)
{
	return lio(mode, (struct aiocb *const *)list, nent, sig);
}

FSAIO__SYMVER(px_lio_listio_old, "lio_listio@GLIBC_2.2.5");
FSAIO__VERSIONED
int px_lio_listio_old(int mode, struct aiocb *const list[], int nent, struct sigevent *sig)
{
	return lio(mode, list, nent, sig);
}

FSAIO__SYMVER(px_lio_listio64_old, "lio_listio64@GLIBC_2.2.5");
FSAIO__VERSIONED
int px_lio_listio64_old(int mode, struct aiocb64 *const list[], int nent, struct sigevent *sig)
{
	return lio(mode, (struct aiocb *const *)list, nent, sig);
}

/* glibc's tuning: aio_threads bounds its helper threads; here it bounds the
 * engine's workers, if given before the first request. */
static void init(const struct aioinit *uin)
{
	struct aioinit in;

	/* It returns nothing: an init that cannot be read is ignored. */
	if (!uin || fsaio__copy_user(&in, uin, sizeof(in)))
		return;
	if (in.aio_threads > 0) {
		px__init();
		px__set_workers((unsigned)in.aio_threads);
	}
}

PX_EXPORT(aio_init, void, (const struct aioinit *in)) { init(in); }
