/* SPDX-License-Identifier: MIT */
/*
 * Bad pointers: -EFAULT as the kernel's copy_from_user/copy_to_user give
 * it, never a crash: addresses outside the user range, and inside it an
 * unmapped page and a PROT_NONE one. The drop-in's copies answer through
 * the engine's fault handler (lib/base/usercopy.c), which must leave a
 * program's own SIGSEGV handler working, installed before or after it.
 */
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "t_aio.h"

static char buf[4096];

/* Filled before the tests run (the pages are inherited by each test's
 * process). */
static void *bad[] = {
	(void *)-1,
	(void *)(uintptr_t)0xffffffff81000000ull,       /* kernel text */
	(void *)(uintptr_t)0xffff888000000000ull,       /* the direct map */
	(void *)(uintptr_t)0x00fffffffffff000ull,       /* past any user space */
	/* A user address never mapped: below mmap_min_addr, which keeps
	 * every mapping out (a page unmapped by the test could be reused by
	 * the next allocation). */
	(void *)(uintptr_t)0x2000,
	NULL,                                           /* a PROT_NONE page */
};
#define NBAD (sizeof(bad) / sizeof(bad[0]))

/* Before the tests run; each test's process inherits the page. */
__attribute__((constructor)) static void map_bad_page(void)
{
	void *p = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		abort();
	bad[NBAD - 1] = p;
}

T_AIO_FIXTURE(16384, 2)

TestSuite(bad_pointers, .init = setup, .fini = teardown);

/* libaio's own io_getevents and io_pgetevents read the timespec before
 * their system call (and would fault on these): on the kernel, ask the
 * system call itself. */
static long pgetevents_any(long min_nr, long nr, struct io_event *ev, struct timespec *ts,
			   sigset_t *mask)
{
	struct { sigset_t *mask; size_t size; } ss = { mask, _NSIG / 8 };
	int saved = errno;
	long r;

	if (t_shim())
		return io_pgetevents(ctx, min_nr, nr, ev, ts, mask);
	r = syscall(SYS_io_pgetevents, ctx, min_nr, nr, ev, ts, mask ? &ss : NULL);
	if (r < 0)
		r = -errno;
	errno = saved;
	return r;
}

static void nothing_pending(void)
{
	struct io_event ev;
	struct timespec zero = { 0, 0 };

	T_EXPECT(io_getevents(ctx, 0, 1, &ev, &zero), 0);
}

Test(bad_pointers, iocb)
{
	struct iocb cb, *list[2];

	for (unsigned i = 0; i < NBAD; i++) {
		list[0] = bad[i];
		T_EXPECT(io_submit(ctx, 1, list), -EFAULT);
	}
	list[0] = NULL;
	T_EXPECT(io_submit(ctx, 1, list), -EFAULT);
	/* After a good one: the count of those done. */
	io_prep_pread(&cb, fd, buf, 16, 0);
	list[0] = &cb;
	list[1] = bad[0];
	T_EXPECT(io_submit(ctx, 2, list), 1);
	struct io_event ev;

	t_reap(ctx, 1, &ev);
	cr_assert_eq(ev.res, 16);
	nothing_pending();
}

Test(bad_pointers, iocbpp)
{
	for (unsigned i = 0; i < NBAD; i++)
		T_EXPECT(io_submit(ctx, 1, bad[i]), -EFAULT);
	T_EXPECT(io_submit(ctx, 1, NULL), -EFAULT);
	/* Nothing to read: not looked at. */
	T_EXPECT(io_submit(ctx, 0, bad[0]), 0);
	nothing_pending();
}

Test(bad_pointers, events)
{
	struct timespec zero = { 0, 0 }, ts = { T_WAIT_SEC, 0 };
	struct iocb cb, *list[1] = { &cb };
	struct io_event ev;

	/* Nothing to copy: no fault. */
	for (unsigned i = 0; i < NBAD; i++)
		T_EXPECT(io_getevents(ctx, 0, 1, bad[i], &zero), 0);
	io_prep_pread(&cb, fd, buf, 16, 0);
	T_EXPECT(io_submit(ctx, 1, list), 1);
	/* Wait for it through a good array first, then submit again. */
	t_reap(ctx, 1, &ev);
	T_EXPECT(io_submit(ctx, 1, list), 1);
	for (unsigned i = 0; i < NBAD; i++)
		T_EXPECT(io_getevents(ctx, 1, 1, bad[i], &ts), -EFAULT);
	/* The event is still there. */
	T_EXPECT(io_getevents(ctx, 1, 1, &ev, &ts), 1);
	cr_assert_eq(ev.res, 16);
}

Test(bad_pointers, timespec)
{
	struct io_event ev;

	for (unsigned i = 0; i < NBAD; i++) {
		T_EXPECT(t_getevents_any(ctx, 0, 1, &ev, bad[i]), -EFAULT);
		/* Before the arguments are judged. */
		T_EXPECT(t_getevents_any(ctx, 2, 1, &ev, bad[i]), -EFAULT);
		T_EXPECT(pgetevents_any(0, 1, &ev, bad[i], NULL), -EFAULT);
	}
}

Test(bad_pointers, sigmask)
{
	struct timespec zero = { 0, 0 };
	struct io_event ev;

	for (unsigned i = 0; i < NBAD; i++)
		T_EXPECT(pgetevents_any(0, 1, &ev, &zero, bad[i]), -EFAULT);
}

Test(bad_pointers, cancel)
{
	struct io_event ev;

	for (unsigned i = 0; i < NBAD; i++)
		T_EXPECT(io_cancel(ctx, bad[i], &ev), -EFAULT);
	T_EXPECT(io_cancel(ctx, NULL, &ev), -EFAULT);
}

/*
 * A program's own SIGSEGV handler, installed by the constructor below,
 * before the library's first copy installs the library's. It takes the
 * faults it expects (a jump back) and nothing else.
 */
static sigjmp_buf jump;
static volatile sig_atomic_t own_faults, expecting;
static struct sigaction before_passing;

static void own_handler(int sig, siginfo_t *si, void *uc)
{
	(void)si, (void)uc;
	if (!expecting) {
		signal(sig, SIG_DFL);
		return;
	}
	own_faults++;
	siglongjmp(jump, 1);
}

__attribute__((constructor)) static void install_own_handler(void)
{
	struct sigaction sa = { .sa_sigaction = own_handler, .sa_flags = SA_SIGINFO | SA_NODEFER };

	sigemptyset(&sa.sa_mask);
	sigaction(SIGSEGV, &sa, NULL);
}

/* One installed later that passes on what it does not own (all of it
 * here), as sanitizers and language runtimes do. */
static void passing_handler(int sig, siginfo_t *si, void *uc)
{
	before_passing.sa_sigaction(sig, si, uc);
}

static void submit_bad_iocbs(void)
{
	struct iocb *list[1];

	for (unsigned i = 0; i < NBAD; i++) {
		list[0] = bad[i];
		T_EXPECT(io_submit(ctx, 1, list), -EFAULT);
	}
	T_EXPECT(io_submit(ctx, 1, (struct iocb **)bad[NBAD - 1]), -EFAULT);
}

/* A fault of the program's own. */
static void own_fault(void)
{
	expecting = 1;
	if (!sigsetjmp(jump, 1))
		(void)*(volatile char *)bad[NBAD - 1];
	expecting = 0;
}

Test(bad_pointers, own_handler_installed_first)
{
	submit_bad_iocbs();
	cr_assert_eq(own_faults, 0, "the call's faults are not the program's");
	own_fault();
	cr_assert_eq(own_faults, 1, "the program's own fault reaches its handler");
	submit_bad_iocbs();
	cr_assert_eq(own_faults, 1);
	nothing_pending();
}

Test(bad_pointers, own_handler_installed_after)
{
	struct sigaction sa = { .sa_sigaction = passing_handler, .sa_flags = SA_SIGINFO | SA_NODEFER };
	struct io_event ev;

	submit_bad_iocbs();
	sigemptyset(&sa.sa_mask);
	cr_assert_eq(sigaction(SIGSEGV, &sa, &before_passing), 0);
	cr_assert(before_passing.sa_flags & SA_SIGINFO);
	submit_bad_iocbs();
	T_EXPECT(io_getevents(ctx, 0, 1, bad[NBAD - 2], NULL), 0);
	T_EXPECT(t_getevents_any(ctx, 0, 1, &ev, bad[NBAD - 1]), -EFAULT);
	cr_assert_eq(own_faults, 0);
	own_fault();
	cr_assert_eq(own_faults, 1, "the program's own fault reaches its handler");
	nothing_pending();
}
