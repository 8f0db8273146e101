/* SPDX-License-Identifier: MIT */
/*
 * DESIGN: the caller's memory, read and written as the kernel's
 * copy_from_user() and copy_to_user() do it: a bad address is -EFAULT, not
 * a crash, and a good one costs a plain copy.
 *
 * The kernel's way is an exception table: the copy is one routine, and a
 * fault at one of its instructions that touch the caller's memory resumes
 * at a fix-up that returns -EFAULT. Here the routine is copy_fixup below,
 * and the fix-up is done by a SIGSEGV/SIGBUS handler that recognises only
 * a fault inside it and passes every other fault to the handler it
 * found (the program's, a sanitizer's, or the default action). Nothing is
 * paid unless a fault happens. The handler is installed by the first copy,
 * so a program that never hands the library a pointer never has it.
 *
 * What a program with its own handler must know (libfsaio(7)): one it
 * installs after ours should pass on the faults it does not own, as
 * sanitizers, JVMs (with libjsig) and Go do; one that replaces ours without
 * chaining gets the library's faults as crashes again. FSAIO_FAULT_HANDLER=0
 * keeps the handler out: each copy is then a process_vm_readv(2) of the
 * process itself, the same answers at a system call's cost. Where neither
 * exists (other architectures have no copy routine here yet; a sandbox may
 * refuse process_vm_readv) the copy is a plain memcpy.
 *
 * `armed` is written once, under `once`, after `prev` is filled; the
 * handler and the copies read it (acquire) after.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <ucontext.h>
#include <unistd.h>

#include "usercopy.h"

enum { UNARMED, ARMED, REFUSED };

static atomic_int armed = UNARMED;
static pthread_once_t once = PTHREAD_ONCE_INIT;
/* The dispositions found when ours went in: [0] SIGSEGV, [1] SIGBUS. */
static struct sigaction prev[2];

#if defined(__x86_64__) && !defined(__ILP32__)
#define HAVE_FIXUP 1
/*
 * copy_fixup(dst, src, n): 0, or -EFAULT (-14) when one of its loads or
 * stores faults. Every instruction from copy_begin to copy_end that
 * touches memory touches only dst or src, so a fault there is a bad
 * address of the caller's: the handler resumes at copy_fail. Small copies
 * (the requests, pointers and events of a call) move 8 bytes at a time,
 * since rep movsb costs tens of nanoseconds to start on some processors;
 * from 512 bytes on it is rep movsb.
 */
__asm__("	.text\n"
	"	.p2align 4\n"
	"	.globl fsaio__copy_fixup\n"
	"	.hidden fsaio__copy_fixup\n"
	"	.type fsaio__copy_fixup, @function\n"
	"fsaio__copy_fixup:\n"
	"	.cfi_startproc\n"
#ifdef __CET__
	"	endbr64\n"
#endif
	"	xorl %eax, %eax\n"
	"	.globl fsaio__copy_begin\n"
	"	.hidden fsaio__copy_begin\n"
	"fsaio__copy_begin:\n"
	"	cmpq $512, %rdx\n"
	"	jae 4f\n"
	"	cmpq $8, %rdx\n"
	"	jb 2f\n"
	"1:	movq (%rsi), %rcx\n"
	"	movq %rcx, (%rdi)\n"
	"	addq $8, %rsi\n"
	"	addq $8, %rdi\n"
	"	subq $8, %rdx\n"
	"	cmpq $8, %rdx\n"
	"	jae 1b\n"
	"2:	testq %rdx, %rdx\n"
	"	jz 3f\n"
	"5:	movb (%rsi), %cl\n"
	"	movb %cl, (%rdi)\n"
	"	incq %rsi\n"
	"	incq %rdi\n"
	"	decq %rdx\n"
	"	jnz 5b\n"
	"3:	ret\n"
	"4:	movq %rdx, %rcx\n"
	"	rep movsb\n"
	"	ret\n"
	"	.globl fsaio__copy_end\n"
	"	.hidden fsaio__copy_end\n"
	"fsaio__copy_end:\n"
	"	.globl fsaio__copy_fail\n"
	"	.hidden fsaio__copy_fail\n"
	"fsaio__copy_fail:\n"
	"	movl $-14, %eax\n"
	"	ret\n"
	"	.cfi_endproc\n"
	"	.size fsaio__copy_fixup, .-fsaio__copy_fixup\n");

int fsaio__copy_fixup(void *dst, const void *src, size_t n);
extern const char fsaio__copy_begin[], fsaio__copy_end[], fsaio__copy_fail[];

/* The fault was caused (not sent) by an instruction of the copy. */
static bool ours(const siginfo_t *si, const ucontext_t *uc)
{
	uintptr_t ip = (uintptr_t)uc->uc_mcontext.gregs[REG_RIP];

	return si->si_code > 0 && ip >= (uintptr_t)fsaio__copy_begin &&
	       ip < (uintptr_t)fsaio__copy_end;
}

static void resume_at_fail(ucontext_t *uc)
{
	uc->uc_mcontext.gregs[REG_RIP] = (greg_t)(uintptr_t)fsaio__copy_fail;
}
#else
#define HAVE_FIXUP 0
static int fsaio__copy_fixup(void *dst, const void *src, size_t n)
{
	memcpy(dst, src, n);
	return 0;
}
static bool ours(const siginfo_t *si, const ucontext_t *uc)
{
	(void)si, (void)uc;
	return false;
}
static void resume_at_fail(ucontext_t *uc)
{
	(void)uc;
}
#endif

/* Someone else's fault: to the disposition found at install. A default
 * or ignored one is put back, so that the faulting instruction, run again
 * on return, gets it: the program dies (or dumps core) at the right place. */
static void pass_on(int sig, siginfo_t *si, void *uc)
{
	const struct sigaction *p = &prev[sig == SIGBUS];

	if (p->sa_flags & SA_SIGINFO) {
		p->sa_sigaction(sig, si, uc);
		return;
	}
	if (p->sa_handler != SIG_DFL && p->sa_handler != SIG_IGN) {
		p->sa_handler(sig);
		return;
	}
	/* Sent by kill() or the like to a program that ignores it. */
	if (si->si_code <= 0 && p->sa_handler == SIG_IGN)
		return;
	sigaction(sig, p, NULL);
	if (si->si_code <= 0)
		raise(sig);
}

static void on_fault(int sig, siginfo_t *si, void *uc)
{
	int saved = errno;

	if (ours(si, uc))
		resume_at_fail(uc);
	else
		pass_on(sig, si, uc);
	errno = saved;
}

static void arm(void)
{
	const char *e = getenv("FSAIO_FAULT_HANDLER");
	struct sigaction sa;

	if (!HAVE_FIXUP || (e && !strcmp(e, "0")) ||
	    sigaction(SIGSEGV, NULL, &prev[0]) || sigaction(SIGBUS, NULL, &prev[1])) {
		atomic_store_explicit(&armed, REFUSED, memory_order_release);
		return;
	}
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_fault;
	sigemptyset(&sa.sa_mask);
	/* On the program's alternate stack if it has one: a stack overflow
	 * still reaches its handler. */
	sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESTART;
	if (sigaction(SIGSEGV, &sa, NULL) || sigaction(SIGBUS, &sa, NULL)) {
		sigaction(SIGSEGV, &prev[0], NULL);
		atomic_store_explicit(&armed, REFUSED, memory_order_release);
		return;
	}
	atomic_store_explicit(&armed, ARMED, memory_order_release);
}

bool fsaio__user_faults_armed(void)
{
	int a = atomic_load_explicit(&armed, memory_order_acquire);

	if (a == UNARMED) {
		int saved = errno;

		pthread_once(&once, arm);
		errno = saved;
		a = atomic_load_explicit(&armed, memory_order_acquire);
	}
	return a == ARMED;
}

/* Without the handler: the kernel copies, and says EFAULT for either side. */
static int copy_by_syscall(void *dst, const void *src, size_t n)
{
	struct iovec local = { dst, n };
	struct iovec remote = { (void *)src, n };
	int saved = errno;
	ssize_t r = process_vm_readv(getpid(), &local, 1, &remote, 1, 0);
	int err = errno;

	errno = saved;
	if (r == (ssize_t)n)
		return 0;
	if (r < 0 && (err == ENOSYS || err == EPERM)) {
		memcpy(dst, src, n);
		return 0;
	}
	return -EFAULT;
}

int fsaio__copy_user(void *dst, const void *src, size_t n)
{
	if (!n)
		return 0;
	if (__builtin_expect(atomic_load_explicit(&armed, memory_order_acquire) == ARMED, 1) ||
	    fsaio__user_faults_armed())
		return fsaio__copy_fixup(dst, src, n);
	return copy_by_syscall(dst, src, n);
}

int fsaio__user_rw_ok(void *p, size_t n)
{
	uintptr_t a = (uintptr_t)p, end = a + n, page = 4096;

	if (!n)
		return 0;
	if (end < a)
		return -EFAULT;
	/* One byte in each page: protection is per page. */
	for (;;) {
		char b;

		if (fsaio__copy_user(&b, (void *)a, 1) || fsaio__copy_user((void *)a, &b, 1))
			return -EFAULT;
		if (end - (a & ~(page - 1)) <= page)
			return 0;
		a = (a & ~(page - 1)) + page;
	}
}
