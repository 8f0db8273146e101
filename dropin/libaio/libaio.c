/* SPDX-License-Identifier: MIT */
/*
 * DESIGN: libaio's exported entry points, with its symbol versions.
 *
 * libaio 0.3.113 exports io_setup, io_destroy, io_submit, io_getevents,
 * io_cancel, io_pgetevents and the io_queue_* helpers under the version
 * nodes LIBAIO_0.1, LIBAIO_0.4 and LIBAIO_0.5 (libaio.map). Binaries linked
 * before 0.4 call io_getevents(ctx, nr, events, timeout), io_cancel(ctx,
 * iocb) and io_queue_wait(ctx, timeout) at LIBAIO_0.1; those forms are kept
 * beside the current ones with .symver, as libaio keeps them.
 *
 * Every entry point returns a count, 0 or -errno directly (libaio's
 * convention, the raw syscall's) and leaves errno as the caller had it.
 * None is a cancellation point, as none of the syscalls is (nocancel.h):
 * cancellation is disabled for the whole call, or, on the paths of
 * io_submit and io_getevents, only around the steps that may be one.
 * The compat forms call the static implementations, not the exported
 * names, so a program's own io_* cannot be interposed between them.
 *
 * A context the shim does not know is handed to the kernel: a program (or a
 * library inside it) that made its context with the raw io_setup syscall
 * keeps working when it goes through libaio's functions, and for anything
 * else (a destroyed context, a parent's context after fork, garbage) the
 * kernel answers -EINVAL itself without trusting the pointer. The bodies
 * (shim__libaio_*) also serve the io_* numbers of syscall() (syscall.c).
 */
#include <errno.h>
#include <signal.h>
#include <stddef.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "context.h"
#include "kernel.h"
#include "libaio.h"
#include "ring.h"
#include "submit.h"
#include "symver.h"
#include "usercopy.h"
#include "usermem.h"


/* libaio's io_callback_t */
typedef void (*shim_callback_t)(io_context_t ctx, struct iocb *iocb, long res, long res2);

/* The raw system call (kernel.c), as -errno, errno untouched. */
#define KERNEL(nr, a, b, c, d, e, f) \
	shim__kernel(nr, (long)(a), (long)(b), (long)(c), (long)(d), (long)(e), (long)(f))

int shim__libaio_setup(int nr_events, io_context_t *ctxp)
{
	int saved = errno, cs = fsaio__nocancel_begin();
	int ret = shim__io_setup(nr_events, ctxp);

	fsaio__nocancel_end(cs);
	errno = saved;
	return ret;
}

SHIM_API int io_setup(int nr_events, io_context_t *ctxp)
{
	return shim__libaio_setup(nr_events, ctxp);
}

int shim__libaio_destroy(io_context_t ctx)
{
	int saved = errno, cs = fsaio__nocancel_begin();
	int ret = shim__io_destroy(ctx);

	fsaio__nocancel_end(cs);
	errno = saved;
	if (ret == -EINVAL && ctx)
		ret = (int)KERNEL(SYS_io_destroy, ctx, 0, 0, 0, 0, 0);
	return ret;
}

SHIM_API int io_destroy(io_context_t ctx)
{
	return shim__libaio_destroy(ctx);
}

/* The end of a call on one of ours: drop the hold shim__get took, give the
 * caller back its errno (saved), and answer ret. */
static int put_answer(struct shim_ctx *c, struct shim_hazard *held, int saved, long ret)
{
	shim__put(c, held);
	errno = saved;
	return (int)ret;
}

/* io_submit disables cancellation only around its steps that may be
 * cancellation points (submit.c). */
int shim__libaio_submit(io_context_t ctx, long nr, struct iocb *ios[])
{
	struct shim_hazard *held;
	int saved = errno;
	struct shim_ctx *c = shim__get(ctx, &held);

	if (!c)
		return (int)KERNEL(SYS_io_submit, ctx, nr, ios, 0, 0, 0);
	return put_answer(c, held, saved, shim__submit(c, nr, ios));
}

SHIM_API int io_submit(io_context_t ctx, long nr, struct iocb *ios[])
{
	return shim__libaio_submit(ctx, nr, ios);
}

/* Without a signal mask, getevents sleeps on a futex (syscall(2), no
 * cancellation point) and makes no other call that is one. */
int shim__io_getevents(io_context_t ctx, long min_nr, long nr, struct io_event *events,
		       struct timespec *timeout)
{
	struct shim_hazard *held;
	int saved = errno;
	struct shim_ctx *c = shim__get(ctx, &held);

	if (!c)
		return (int)KERNEL(SYS_io_getevents, ctx, min_nr, nr, events, timeout, 0);
	return put_answer(c, held, saved, shim__getevents(c, min_nr, nr, events, timeout, NULL));
}

FSAIO__SYMVER(shim_io_getevents_0_4, "io_getevents@@LIBAIO_0.4");
FSAIO__VERSIONED
int shim_io_getevents_0_4(io_context_t ctx, long min_nr, long nr, struct io_event *events,
			  struct timespec *timeout)
{
	return shim__io_getevents(ctx, min_nr, nr, events, timeout);
}

/* The 0.1 forms' timeout, copied as libaio copies it (a pointer outside
 * user space is -EFAULT, as the kernel answers): 0, or -EFAULT. */
static int copy_timeout(const struct timespec *in, struct timespec *t, struct timespec **out)
{
	*out = NULL;
	if (!in)
		return 0;
	if (shim__user_copy(t, in, sizeof(*t), false))
		return -EFAULT;
	*out = t;
	return 0;
}

/* The 0.1 form waited for at least one event. */
FSAIO__SYMVER(shim_io_getevents_0_1, "io_getevents@LIBAIO_0.1");
FSAIO__VERSIONED
int shim_io_getevents_0_1(io_context_t ctx, long nr, struct io_event *events,
			  const struct timespec *const timeout)
{
	struct timespec t, *tp;

	if (copy_timeout(timeout, &t, &tp))
		return -EFAULT;
	return shim__io_getevents(ctx, 1, nr, events, tp);
}

int shim__libaio_pgetevents(io_context_t ctx, long min_nr, long nr, struct io_event *events,
			    struct timespec *timeout, const sigset_t *sigmask)
{
	struct shim_ctx *c;
	struct shim_hazard *held;
	int saved = errno, cs = PTHREAD_CANCEL_DISABLE;
	long ret;

	c = shim__get(ctx, &held);
	if (!c) {
		/* The kernel's struct __aio_sigset. */
		struct { const sigset_t *sigmask; size_t sigsetsize; } ss = { sigmask, _NSIG / 8 };

		return (int)KERNEL(SYS_io_pgetevents, ctx, min_nr, nr, events, timeout, &ss);
	}
	/* With a mask it may sleep in ppoll and read an eventfd. */
	if (sigmask)
		cs = fsaio__nocancel_begin();
	ret = shim__getevents(c, min_nr, nr, events, timeout, sigmask);
	shim__put(c, held);
	if (sigmask)
		fsaio__nocancel_end(cs);
	errno = saved;
	return (int)ret;
}

SHIM_API int io_pgetevents(io_context_t ctx, long min_nr, long nr, struct io_event *events,
			   struct timespec *timeout, sigset_t *sigmask)
{
	return shim__libaio_pgetevents(ctx, min_nr, nr, events, timeout, sigmask);
}

int shim__io_cancel(io_context_t ctx, struct iocb *iocb, struct io_event *evt)
{
	struct shim_ctx *c;
	struct shim_hazard *held;
	int saved = errno, ret, cs;
	uint32_t key;

	/* The kernel no longer fills evt: the event always comes through
	 * the ring. It first reads aio_key, which submit set to 0. */
	(void)evt;
	if (shim__user_copy(&key, FSAIO__USER_AT(iocb, offsetof(struct iocb, aio_key)), sizeof(key), false))
		return -EFAULT;
	if (key != 0)
		return -EINVAL;
	c = shim__get(ctx, &held);
	if (!c)
		return (int)KERNEL(SYS_io_cancel, ctx, iocb, evt, 0, 0, 0);
	cs = fsaio__nocancel_begin();
	ret = shim__cancel(c, iocb);
	shim__put(c, held);
	fsaio__nocancel_end(cs);
	errno = saved;
	return ret;
}

FSAIO__SYMVER(shim_io_cancel_0_4, "io_cancel@@LIBAIO_0.4");
FSAIO__VERSIONED
int shim_io_cancel_0_4(io_context_t ctx, struct iocb *iocb, struct io_event *evt)
{
	return shim__io_cancel(ctx, iocb, evt);
}

FSAIO__SYMVER(shim_io_cancel_0_1, "io_cancel@LIBAIO_0.1");
FSAIO__VERSIONED
int shim_io_cancel_0_1(io_context_t ctx, struct iocb *iocb)
{
	struct io_event ev;

	return shim__io_cancel(ctx, iocb, &ev);
}

SHIM_API int io_queue_init(int maxevents, io_context_t *ctxp)
{
	int saved = errno, ret = -EINVAL;

	/* libaio clears *ctxp first, so a stale handle is not an error here. */
	if (maxevents > 0 && ctxp) {
		int cs = fsaio__nocancel_begin();
		io_context_t none = NULL;

		ret = shim__user_copy(ctxp, &none, sizeof(none), true);
		if (!ret)
			ret = shim__io_setup(maxevents, ctxp);
		fsaio__nocancel_end(cs);
	} else if (maxevents > 0) {
		ret = -EFAULT;
	}
	errno = saved;
	return ret;
}

SHIM_API int io_queue_release(io_context_t ctx)
{
	return shim__libaio_destroy(ctx);
}

/* Run the callbacks stored in iocb->data of every event ready now. */
SHIM_API int io_queue_run(io_context_t ctx)
{
	struct timespec zero = { 0, 0 };
	struct io_event ev;
	int ret;

	while ((ret = shim__io_getevents(ctx, 0, 1, &ev, &zero)) == 1) {
		shim_callback_t cb = (shim_callback_t)(uintptr_t)ev.data;

		cb(ctx, (struct iocb *)(uintptr_t)ev.obj, (long)ev.res, (long)ev.res2);
	}
	return ret;
}

/* Wait for completions without reaping any (min_nr = nr = 0 returns at once,
 * as the kernel's read_events does). */
FSAIO__SYMVER(shim_io_queue_wait_0_4, "io_queue_wait@@LIBAIO_0.4");
FSAIO__VERSIONED
int shim_io_queue_wait_0_4(io_context_t ctx, struct timespec *timeout)
{
	return shim__io_getevents(ctx, 0, 0, NULL, timeout);
}

FSAIO__SYMVER(shim_io_queue_wait_0_1, "io_queue_wait@LIBAIO_0.1");
FSAIO__VERSIONED
int shim_io_queue_wait_0_1(io_context_t ctx, struct timespec *timeout)
{
	struct timespec t, *tp;

	if (copy_timeout(timeout, &t, &tp))
		return -EFAULT;
	return shim__io_getevents(ctx, 0, 0, NULL, tp);
}
