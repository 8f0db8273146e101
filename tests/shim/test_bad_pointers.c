/* SPDX-License-Identifier: MIT */
/*
 * Pointers outside the user address range: -EFAULT as the kernel's
 * copy_from_user/copy_to_user give it, never a crash. (An unmapped address
 * inside the range is not tested: the kernel says -EFAULT, the drop-in
 * would fault; dropin/libaio/README.md lists it.)
 */
#include <fcntl.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "t_aio.h"

static char buf[4096];

static void *const bad[] = {
	(void *)-1,
	(void *)(uintptr_t)0xffffffff81000000ull,       /* kernel text */
	(void *)(uintptr_t)0xffff888000000000ull,       /* the direct map */
	(void *)(uintptr_t)0x00fffffffffff000ull,       /* past any user space */
};
#define NBAD (sizeof(bad) / sizeof(bad[0]))

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
