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
 * passed, the result returned, or -1 and errno for a result in [-4095, -1].
 * For those numbers the entry is glibc's own instruction sequence behind a
 * two-compare test of the number (written in assembly: a C variadic
 * function would spill every argument register first): nothing allocated,
 * no lock, no memory read but the sixth argument.
 *
 * The exported symbol exists where the raw instruction and glibc's version
 * node are known (x86_64: syscall@@GLIBC_2.2.5, given by glibc-x86_64.map);
 * elsewhere this file is empty. The drop-in's own way to the kernel is
 * kernel.c's, never this syscall(), which would hand an io_* number back
 * to the drop-in.
 */
#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "kernel.h"
#include "libaio.h"
#include "usermem.h"

#ifdef SHIM_RAW_SYSCALL

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
	struct timespec t;

	if (timeout && shim__user_copy(&t, timeout, sizeof(t), false))
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
	return shim__raw6(nr, a, b, c, d, e, f);
}

/* syscall() for an io_* number (the entry below jumps here with the
 * caller's arguments): the drop-in's answer, or the kernel's when
 * FSAIO_SYSCALL=kernel; the result, or -1 and errno. */
__attribute__((used)) long shim__syscall_aio(long nr, long a, long b, long c, long d, long e,
					    long f)
{
	long r = served() ? serve(nr, a, b, c, d, e, f) : shim__raw6(nr, a, b, c, d, e, f);

	if ((unsigned long)r > -4096UL) {
		errno = (int)-r;
		return -1;
	}
	return r;
}

/* The kernel's -errno for any other number, as glibc's syscall() sets it. */
__attribute__((used)) long shim__syscall_fail(long r)
{
	errno = (int)-r;
	return -1;
}

_Static_assert(SYS_io_destroy == SYS_io_setup + 1 && SYS_io_getevents == SYS_io_setup + 2 &&
	       SYS_io_submit == SYS_io_setup + 3 && SYS_io_cancel == SYS_io_setup + 4,
	       "io_setup..io_cancel are consecutive numbers");
_Static_assert(SYS_io_setup == 206 && SYS_io_pgetevents == 333, "x86_64's numbers, as below");

/*
 * long syscall(long nr, ...): the number in %rdi, five arguments in %rsi,
 * %rdx, %rcx, %r8, %r9 and the sixth on the stack, read whatever the caller
 * passed, as glibc's own entry reads them. An io_* number calls
 * shim__syscall_aio() with a copy of the sixth argument as its seventh
 * (the caller's stack slot may not be an argument at all, so it is not
 * handed to C code that may write it); any other is glibc's sequence.
 */
/* A branch target when the build marks the library for CET's IBT. */
#if defined(__CET__) && (__CET__ & 1)
#define SHIM_ENDBR "	endbr64\n"
#else
#define SHIM_ENDBR ""
#endif

__asm__(
	"	.text\n"
	"	.globl syscall\n"
	"	.type syscall, @function\n"
	"	.p2align 4\n"
	"syscall:\n"
	"	.cfi_startproc\n"
	SHIM_ENDBR
	"	leaq -206(%rdi), %rax\n"
	"	cmpq $4, %rax\n"
	"	jbe 2f\n"
	"	cmpq $333, %rdi\n"
	"	je 2f\n"
	"	movq %rdi, %rax\n"
	"	movq %rsi, %rdi\n"
	"	movq %rdx, %rsi\n"
	"	movq %rcx, %rdx\n"
	"	movq %r8, %r10\n"
	"	movq %r9, %r8\n"
	"	movq 8(%rsp), %r9\n"
	"	syscall\n"
	"	cmpq $-4095, %rax\n"
	"	jae 1f\n"
	"	ret\n"
	"1:	movq %rax, %rdi\n"
	"	jmp shim__syscall_fail\n"
	"2:	pushq 8(%rsp)\n"
	"	.cfi_adjust_cfa_offset 8\n"
	"	call shim__syscall_aio\n"
	"	addq $8, %rsp\n"
	"	.cfi_adjust_cfa_offset -8\n"
	"	ret\n"
	"	.cfi_endproc\n"
	"	.size syscall, .-syscall\n");

#endif /* SHIM_RAW_SYSCALL */
