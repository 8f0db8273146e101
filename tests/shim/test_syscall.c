/* SPDX-License-Identifier: MIT */
/*
 * What only the raw system calls say, through syscall(2), on the kernel
 * (kernel-sys-syscall) and on the drop-in (shim-sys-syscall): io_setup's
 * unsigned count, io_pgetevents' struct __aio_sigset read in the kernel's
 * order and its mask applied for the wait alone, and one context used both
 * ways, made by syscall() and driven by libaio's functions or the other way
 * round. FSAIO_SYSCALL=kernel gives the raw calls back to the kernel.
 *
 * Built with T_AIO_SYSCALL: t_sys_* are syscall(__NR_io_*); the io_* macros
 * are undone here so that libaio's own functions can be called too.
 */
#include "t_aio.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#undef io_setup
#undef io_destroy
#undef io_submit
#undef io_getevents
#undef io_pgetevents
#undef io_cancel

TestSuite(syscall, .init = t_setup, .fini = t_teardown);

/* The kernel's struct __aio_sigset. */
struct aio_sigset {
	const sigset_t *sigmask;
	size_t sigsetsize;
};

/* io_pgetevents with the __aio_sigset as given: -errno, errno untouched.
 * The same wrapper as the drop-in's shim__kernel (dropin/libaio/kernel.c),
 * written again on purpose: the test reaches the kernel itself, never
 * through a copy that belongs to the library under test. */
static long pget_raw(io_context_t ctx, long min_nr, long nr, struct io_event *ev,
		     struct timespec *ts, const struct aio_sigset *usig)
{
	int saved = errno;
	long r = syscall(SYS_io_pgetevents, ctx, min_nr, nr, ev, ts, usig);

	if (r == -1)
		r = -errno;
	errno = saved;
	return r;
}

static long raw_setup(long nr_events, io_context_t *ctxp)
{
	int saved = errno;
	long r = syscall(SYS_io_setup, nr_events, ctxp);

	if (r == -1)
		r = -errno;
	errno = saved;
	return r;
}

/* Whether addr lies in the kernel's AIO ring mapping ("/[aio] (deleted)"). */
static bool in_kernel_ring(const void *addr)
{
	char line[512];
	FILE *f = fopen("/proc/self/maps", "re");
	bool found = false;

	cr_assert_not_null(f);
	while (!found && fgets(line, sizeof(line), f)) {
		unsigned long lo, hi;

		if (sscanf(line, "%lx-%lx", &lo, &hi) == 2 && (uintptr_t)addr >= lo &&
		    (uintptr_t)addr < hi)
			found = strstr(line, "[aio]") != NULL;
	}
	fclose(f);
	return found;
}

/* The kernel takes nr_events as an unsigned int: the upper half of the
 * register is not looked at; 0 and a count too large are refused. */
Test(syscall, setup_count_is_32_bits)
{
	io_context_t ctx = 0;

	T_EXPECT(raw_setup(0x100000008L, &ctx), 0);
	cr_assert_not_null(ctx);
	T_EXPECT(t_sys_destroy(ctx), 0);
	ctx = 0;
	T_EXPECT(raw_setup(0x100000000L, &ctx), -EINVAL);
	T_EXPECT(raw_setup(1L << 30, &ctx), -EINVAL);
	T_EXPECT(raw_setup(8, NULL), -EFAULT);
	T_EXPECT(raw_setup(8, (io_context_t *)-1L), -EFAULT);
	cr_assert_null(ctx);
	T_EXPECT(t_sys_destroy(NULL), -EINVAL);
	T_EXPECT(t_sys_destroy((io_context_t)4096), -EINVAL);
}

/* The timeout is read first, then the __aio_sigset, then its size is
 * checked (only when it names a mask), then the mask is read: all before
 * the context is looked up. */
Test(syscall, pgetevents_sigset_rules)
{
	io_context_t ctx = t_ctx(8);
	sigset_t mask;
	struct io_event ev;
	struct timespec zero = { 0, 0 }, *bad_ts = (struct timespec *)-1L;
	struct aio_sigset ok = { &mask, _NSIG / 8 }, small = { &mask, 4 };
	struct aio_sigset no_mask = { NULL, 4 }, bad_mask = { (sigset_t *)-1L, _NSIG / 8 };

	sigemptyset(&mask);
	T_EXPECT(pget_raw(ctx, 0, 1, &ev, &zero, NULL), 0);
	T_EXPECT(pget_raw(ctx, 0, 1, &ev, &zero, &ok), 0);
	T_EXPECT(pget_raw(ctx, 0, 1, &ev, &zero, &no_mask), 0);
	T_EXPECT(pget_raw(ctx, 0, 1, &ev, &zero, &small), -EINVAL);
	T_EXPECT(pget_raw(ctx, 0, 1, &ev, &zero, &bad_mask), -EFAULT);
	T_EXPECT(pget_raw(ctx, 0, 1, &ev, &zero, (struct aio_sigset *)-1L), -EFAULT);
	T_EXPECT(pget_raw(ctx, 0, 1, &ev, bad_ts, &small), -EFAULT);
	/* Before the context: a bad size on a context that is not one. */
	T_EXPECT(pget_raw((io_context_t)4096, 0, 1, &ev, &zero, &small), -EINVAL);
	T_EXPECT(pget_raw((io_context_t)4096, 0, 1, &ev, &zero, &ok), -EINVAL);
	/* Arguments after the sigset. */
	T_EXPECT(pget_raw(ctx, 2, 1, &ev, &zero, &ok), -EINVAL);
	T_EXPECT(pget_raw(ctx, -1, 1, &ev, &zero, &ok), -EINVAL);
	T_EXPECT(t_sys_destroy(ctx), 0);
}

static int64_t now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

/* A signal the wait's mask blocks does not end the wait, though the
 * caller's own mask lets it in: the call times out with 0 and the signal
 * is handled once the caller's mask is back. */
Test(syscall, pgetevents_mask_blocks_a_signal)
{
	io_context_t ctx = t_ctx(8);
	sigset_t during;
	struct aio_sigset ss = { &during, _NSIG / 8 };
	struct io_event ev;
	struct timespec ts = { 0, 300000000 };
	int64_t t0;
	struct t_poker pk;

	t_count_signal(SIGUSR1, 0);
	sigemptyset(&during);
	sigaddset(&during, SIGUSR1);
	t_poker_start(&pk, SIGUSR1);
	/* Wait until the poker's signals arrive, so that later ones land in
	 * the wait as well as around it. */
	while (!t_signals_handled())
		usleep(1000);
	t0 = now_ns();
	T_EXPECT(pget_raw(ctx, 1, 1, &ev, &ts, &ss), 0);
	cr_assert_geq(now_ns() - t0, 300000000, "the wait ended before its timeout");
	t_poker_stop(&pk);
	T_EXPECT(t_sys_destroy(ctx), 0);
}

/* A signal the caller blocks and the wait's mask lets in ends the wait with
 * EINTR, whether it was pending before the call (the mask is applied
 * atomically with the sleep) or comes during it. */
Test(syscall, pgetevents_mask_lets_a_signal_in)
{
	io_context_t ctx = t_ctx(8);
	sigset_t block, during, now;
	struct aio_sigset ss = { &during, _NSIG / 8 };
	struct io_event ev;
	struct timespec ts = { T_WAIT_SEC, 0 };
	struct t_poker pk;

	t_count_signal(SIGUSR2, 0);
	sigemptyset(&block);
	sigaddset(&block, SIGUSR2);
	cr_assert_eq(pthread_sigmask(SIG_BLOCK, &block, NULL), 0);
	pthread_sigmask(SIG_SETMASK, NULL, &during);
	sigdelset(&during, SIGUSR2);

	cr_assert_eq(pthread_kill(pthread_self(), SIGUSR2), 0);
	T_EXPECT(pget_raw(ctx, 1, 1, &ev, &ts, &ss), -EINTR);
	cr_assert_eq(t_signals_handled(), 1);

	t_poker_start(&pk, SIGUSR2);
	T_EXPECT(pget_raw(ctx, 1, 1, &ev, &ts, &ss), -EINTR);
	t_poker_stop(&pk);
	cr_assert_geq(t_signals_handled(), 2);
	pthread_sigmask(SIG_SETMASK, NULL, &now);
	cr_assert(sigismember(&now, SIGUSR2), "the caller's mask is back after the wait");
	T_EXPECT(t_sys_destroy(ctx), 0);
}

/* Reads of one file through ctx, submitted with submit and reaped with
 * reap, both either raw or libaio's. */
static void read_through(io_context_t ctx, bool raw_submit, bool raw_reap)
{
	char buf[2][4096];
	struct iocb cb[2], *list[2] = { &cb[0], &cb[1] };
	struct io_event ev[2];
	struct timespec ts = { T_WAIT_SEC, 0 };
	int fd = t_file(65536, 31);
	long got = 0;

	io_prep_pread(&cb[0], fd, buf[0], 4096, 0);
	io_prep_pread(&cb[1], fd, buf[1], 4096, 8192);
	if (raw_submit)
		T_EXPECT(t_sys_submit(ctx, 2, list), 2);
	else
		T_EXPECT(io_submit(ctx, 2, list), 2);
	while (got < 2) {
		long r = raw_reap ? T_CALL(t_sys_getevents(ctx, 1, 2 - got, ev + got, &ts))
				  : T_CALL(io_getevents(ctx, 1, 2 - got, ev + got, &ts));

		cr_assert_gt(r, 0, "getevents: %ld", r);
		got += r;
	}
	for (int i = 0; i < 2; i++) {
		int k = (struct iocb *)(uintptr_t)ev[i].obj == &cb[0] ? 0 : 1;

		cr_assert_eq(ev[i].res, 4096);
		t_check(buf[k], 4096, k ? 8192 : 0, 31);
	}
	close(fd);
}

/* A context made by raw io_setup works with libaio's functions, and one
 * made by libaio's io_setup with the raw calls; either way destroys it. */
Test(syscall, one_context_both_ways)
{
	io_context_t a = 0, b = 0;
	struct iocb cb;
	int fd = t_file(4096, 32);
	char buf[4096];

	T_EXPECT(t_sys_setup(8, &a), 0);
	read_through(a, false, true);
	read_through(a, true, false);
	read_through(a, false, false);
	/* Cancel through libaio on a raw context: nothing queued to take back. */
	io_prep_pread(&cb, fd, buf, sizeof(buf), 0);
	T_EXPECT(io_cancel(a, &cb, NULL), -EINVAL);
	T_EXPECT(io_destroy(a), 0);
	T_EXPECT(t_sys_destroy(a), -EINVAL);

	T_EXPECT(io_setup(8, &b), 0);
	read_through(b, true, true);
	read_through(b, true, false);
	T_EXPECT(t_sys_cancel(b, &cb, NULL), -EINVAL);
	T_EXPECT(t_sys_destroy(b), 0);
	T_EXPECT(io_destroy(b), -EINVAL);
	close(fd);
}

/* With the drop-in, a raw io_setup makes its context: the ring is not the
 * kernel's. */
Test(syscall, raw_setup_makes_a_drop_in_context)
{
	io_context_t ctx = 0;

	T_SHIM_ONLY("the drop-in's contexts");
	T_EXPECT(t_sys_setup(8, &ctx), 0);
	cr_assert_not(in_kernel_ring(ctx), "a raw io_setup made a kernel context");
	T_EXPECT(t_sys_destroy(ctx), 0);
}

/* FSAIO_SYSCALL=kernel (read at the first io_* number): the raw calls reach
 * the kernel, whose context still works with libaio's functions (the
 * drop-in passes a context it did not make to the kernel). */
Test(syscall, opt_out_leaves_the_calls_to_the_kernel)
{
	io_context_t ctx = 0;

	cr_assert_eq(setenv("FSAIO_SYSCALL", "kernel", 1), 0);
	T_EXPECT(t_sys_setup(8, &ctx), 0);
	cr_assert(in_kernel_ring(ctx), "FSAIO_SYSCALL=kernel, but the context is not the kernel's");
	read_through(ctx, false, true);
	read_through(ctx, true, false);
	T_EXPECT(io_destroy(ctx), 0);
}
