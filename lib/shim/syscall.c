/* SPDX-License-Identifier: MIT */
/*
 * DESIGN: glibc's syscall(), exported under glibc's own symbol version, so
 * that a program reaching the AIO system calls through syscall(2) reaches
 * the drop-in.
 *
 * io_setup, io_destroy, io_submit, io_cancel, io_getevents and
 * io_pgetevents are served by the bodies of the libaio entry points
 * (libaio.c): a context is one kind whichever way it was made, and one the
 * drop-in did not make still goes to the kernel. The answer follows
 * syscall(2)'s convention: the result, or -1 with errno.
 *
 * Every other number, and every number with FSAIO_SYSCALL=kernel, goes to
 * the kernel as glibc sends it: six arguments read whatever the caller
 * passed (as glibc's assembly reads six registers), the result returned,
 * or -1 and errno for a result in [-4095, -1]. That path allocates nothing,
 * takes no lock and reads no shared state but a constant.
 *
 * The exported symbol exists where the raw instruction and glibc's version
 * node are known (x86_64: syscall@@GLIBC_2.2.5, given by glibc-x86_64.map);
 * elsewhere only shim__kernel() is built, on glibc's syscall().
 *
 * shim__kernel() is the drop-in's own way to the kernel: never through the
 * exported syscall(), which would hand an io_* number back to the drop-in.
 */
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "shim.h"

#if defined(__x86_64__) && !defined(__ILP32__)
#define SHIM_EXPORTS_SYSCALL 1

/* The syscall instruction with six arguments: the kernel's -errno. */
static inline long raw6(long nr, long a, long b, long c, long d, long e, long f)
{
	register long r10 __asm__("r10") = d;
	register long r8 __asm__("r8") = e;
	register long r9 __asm__("r9") = f;
	long ret;

	__asm__ volatile("syscall"
			 : "=a"(ret)
			 : "a"(nr), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8), "r"(r9)
			 : "rcx", "r11", "memory");
	return ret;
}

long shim__kernel(long nr, long a, long b, long c, long d, long e, long f)
{
	return raw6(nr, a, b, c, d, e, f);
}

#else

long shim__kernel(long nr, long a, long b, long c, long d, long e, long f)
{
	int saved = errno;
	long r = syscall(nr, a, b, c, d, e, f);

	if (r == -1)
		r = -errno;
	errno = saved;
	return r;
}

#endif

#ifdef SHIM_EXPORTS_SYSCALL

/* FSAIO_SYSCALL=kernel: 1 serve the io_* numbers, 0 leave them to the
 * kernel, -1 not read yet. Relaxed: every thread reads the same value. */
static _Atomic int serve_aio = -1;

static bool served(void)
{
	int s = atomic_load_explicit(&serve_aio, memory_order_relaxed);

	if (s < 0) {
		const char *v = getenv("FSAIO_SYSCALL");

		s = !(v && strcmp(v, "kernel") == 0);
		atomic_store_explicit(&serve_aio, s, memory_order_relaxed);
	}
	return s;
}

/* The kernel's struct __aio_sigset. */
struct aio_sigset {
	const sigset_t *sigmask;
	size_t sigsetsize;
};

/* io_pgetevents as the kernel reads its arguments: the timeout, then the
 * __aio_sigset, its size, then the mask itself (by the entry point). */
static long pgetevents(io_context_t ctx, long min_nr, long nr, struct io_event *events,
		       struct timespec *timeout, const struct aio_sigset *usig)
{
	struct aio_sigset ss = { NULL, 0 };

	if (timeout && !shim__user_ptr_ok(timeout, sizeof(*timeout)))
		return -EFAULT;
	if (usig && shim__user_copy(&ss, usig, sizeof(ss), false))
		return -EFAULT;
	if (ss.sigmask && ss.sigsetsize != _NSIG / 8)
		return -EINVAL;
	return shim__libaio_pgetevents(ctx, min_nr, nr, events, timeout, ss.sigmask);
}

/* An io_* number: the drop-in's answer, as -errno. */
static long serve(long nr, long a, long b, long c, long d, long e, long f)
{
	io_context_t ctx = (io_context_t)a;

	switch (nr) {
	case SYS_io_setup:
		/* The kernel takes nr_events as an unsigned int. */
		return shim__libaio_setup((int)(unsigned)a, (io_context_t *)b);
	case SYS_io_destroy:
		return shim__libaio_destroy(ctx);
	case SYS_io_submit:
		return shim__libaio_submit(ctx, b, (struct iocb **)c);
	case SYS_io_cancel:
		return shim__io_cancel(ctx, (struct iocb *)b, (struct io_event *)c);
	case SYS_io_getevents:
		return shim__io_getevents(ctx, b, c, (struct io_event *)d, (struct timespec *)e);
	case SYS_io_pgetevents:
		return pgetevents(ctx, b, c, (struct io_event *)d, (struct timespec *)e,
				  (const struct aio_sigset *)f);
	}
	return raw6(nr, a, b, c, d, e, f);
}

static inline bool aio_number(long nr)
{
	return (unsigned long)(nr - SYS_io_setup) <= SYS_io_cancel - SYS_io_setup ||
	       nr == SYS_io_pgetevents;
}

_Static_assert(SYS_io_destroy == SYS_io_setup + 1 && SYS_io_getevents == SYS_io_setup + 2 &&
	       SYS_io_submit == SYS_io_setup + 3 && SYS_io_cancel == SYS_io_setup + 4,
	       "io_setup..io_cancel are consecutive numbers");

SHIM_API long syscall(long nr, ...)
{
	va_list ap;
	long a, b, c, d, e, f, r;

	va_start(ap, nr);
	a = va_arg(ap, long);
	b = va_arg(ap, long);
	c = va_arg(ap, long);
	d = va_arg(ap, long);
	e = va_arg(ap, long);
	f = va_arg(ap, long);
	va_end(ap);

	if (__builtin_expect(aio_number(nr), 0) && served())
		r = serve(nr, a, b, c, d, e, f);
	else
		r = raw6(nr, a, b, c, d, e, f);
	if ((unsigned long)r > -4096UL) {
		errno = (int)-r;
		return -1;
	}
	return r;
}

#endif /* SHIM_EXPORTS_SYSCALL */
