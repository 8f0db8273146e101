/* SPDX-License-Identifier: MIT */
/*
 * Context lifetime: io_setup's errors, io_destroy, calls on unknown and
 * destroyed contexts, and errno left alone throughout.
 */
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <sys/mman.h>
#include <unistd.h>

#include "t_aio.h"

TestSuite(setup, .init = t_setup, .fini = t_teardown);

Test(setup, bad_nr_events)
{
	io_context_t ctx = 0;

	T_EXPECT(io_setup(0, &ctx), -EINVAL);
	T_EXPECT(io_setup(-1, &ctx), -EINVAL);
	/* Doubled past the kernel's ring limit (0x10000000 bytes of events). */
	T_EXPECT(io_setup(10 * 1000 * 1000, &ctx), -EINVAL);
	cr_assert_null(ctx);
}

Test(setup, more_than_aio_max_nr_is_eagain)
{
	io_context_t ctx = 0;
	char buf[32] = { 0 };
	long max;
	int fd = open("/proc/sys/fs/aio-max-nr", O_RDONLY);

	cr_assert_geq(fd, 0);
	cr_assert_gt(read(fd, buf, sizeof(buf) - 1), 0);
	close(fd);
	max = atol(buf);
	if (max <= 0 || max >= 4 * 1000 * 1000)
		cr_skip_test("aio-max-nr is %ld", max);
	T_EXPECT(io_setup((int)max + 1, &ctx), -EAGAIN);
	cr_assert_null(ctx);
}

Test(setup, ctxp_must_be_zero)
{
	io_context_t ctx = (io_context_t)0x1234;

	T_EXPECT(io_setup(8, &ctx), -EINVAL);
	cr_assert_eq((void *)ctx, (void *)0x1234);
}

Test(setup, bad_ctxp_is_efault)
{
	void *ro = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	void *gone = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	cr_assert_neq(ro, MAP_FAILED);
	cr_assert_neq(gone, MAP_FAILED);
	T_EXPECT(io_setup(8, NULL), -EFAULT);
	T_EXPECT(io_setup(8, gone), -EFAULT);
	/* Readable (and 0) but not writable: the kernel fails at put_user. */
	T_EXPECT(io_setup(8, ro), -EFAULT);
}

Test(setup, destroy_twice)
{
	io_context_t ctx = t_ctx(4);

	T_EXPECT(io_destroy(ctx), 0);
	T_EXPECT(io_destroy(ctx), -EINVAL);
	T_EXPECT(io_destroy(NULL), -EINVAL);
}

Test(setup, unknown_context)
{
	/* Readable memory that is no context: looked up, never trusted. */
	static unsigned fake[64] = { 7, 128, 0, 0, 0xa10a10a1, 1, 0, 32 };
	io_context_t ctx = (io_context_t)fake;
	struct iocb cb, *list[1] = { &cb };
	struct io_event ev;
	struct timespec ts = { 0, 1000000 };
	char buf[16];
	int fd = t_file(4096, 3);

	io_prep_pread(&cb, fd, buf, sizeof(buf), 0);
	T_EXPECT(io_submit(ctx, 1, list), -EINVAL);
	T_EXPECT(io_getevents(ctx, 1, 1, &ev, &ts), -EINVAL);
	T_EXPECT(io_cancel(ctx, &cb, &ev), -EINVAL);
	T_EXPECT(io_destroy(ctx), -EINVAL);
	T_EXPECT(io_submit(NULL, 1, list), -EINVAL);
	T_EXPECT(io_getevents(NULL, 1, 1, &ev, &ts), -EINVAL);
	close(fd);
}

Test(setup, destroyed_context)
{
	io_context_t ctx = t_ctx(4);
	struct iocb cb, *list[1] = { &cb };
	struct io_event ev;
	struct timespec ts = { 0, 1000000 };
	char buf[16];
	int fd = t_file(4096, 4);

	T_EXPECT(io_destroy(ctx), 0);
	io_prep_pread(&cb, fd, buf, sizeof(buf), 0);
	T_EXPECT(io_submit(ctx, 1, list), -EINVAL);
	T_EXPECT(t_getevents_any(ctx, 1, 1, &ev, &ts), -EINVAL);
	T_EXPECT(io_cancel(ctx, &cb, &ev), -EINVAL);
	close(fd);
}

Test(setup, many_contexts)
{
	io_context_t ctx[64];

	for (int i = 0; i < 64; i++)
		ctx[i] = t_ctx(1 + i);
	for (int i = 0; i < 64; i += 2)
		T_EXPECT(io_destroy(ctx[i]), 0);
	for (int i = 1; i < 64; i += 2) {
		struct io_event ev;
		struct timespec zero = { 0, 0 };

		T_EXPECT(io_getevents(ctx[i], 0, 1, &ev, &zero), 0);
		T_EXPECT(io_destroy(ctx[i]), 0);
	}
}

/* A context made with the raw system call still works through libaio's
 * functions: the shim hands contexts it does not own to the kernel. */
Test(setup, raw_kernel_context)
{
	io_context_t ctx = 0;
	int fd = t_file(8192, 5);
	char buf[4096];
	struct iocb cb;
	struct io_event ev;

	cr_assert_eq(syscall(SYS_io_setup, 8, &ctx), 0, "io_setup: %s", strerror(errno));
	io_prep_pread(&cb, fd, buf, sizeof(buf), 4096);
	cr_assert_eq(t_do(ctx, &cb), 4096);
	t_check(buf, sizeof(buf), 4096, 5);
	T_EXPECT(io_cancel(ctx, &cb, &ev), -EINVAL);
	T_EXPECT(io_destroy(ctx), 0);
	T_EXPECT(io_destroy(ctx), -EINVAL);
	close(fd);
}

/*
 * Contexts made, used and destroyed by many threads at once (libaio's
 * harness has such a case): each of THREADS threads sets up a context,
 * submits two reads in one call (on a file whose pages were dropped
 * first: some are cold), reaps them, checks the data and destroys the
 * context, ROUNDS times. Every call answers 0 or the count asked, every
 * read its bytes, and no context is left behind. Threads count their
 * failures; the test thread asserts (an assertion must not leave a
 * thread).
 */
#define THREADS 100
#define ROUNDS 20
#define BLOCK 4096

struct churn {
	int fd;
	unsigned seed;
	unsigned id;
	_Atomic unsigned *failed;
};

static void *churn_thread(void *arg)
{
	struct churn *a = arg;
	char *buf = malloc(2 * BLOCK);

	for (unsigned i = 0; buf && i < ROUNDS; i++) {
		uint64_t off[2] = { (uint64_t)((a->id * ROUNDS + i) % 256) * 2 * BLOCK, 0 };
		io_context_t ctx = 0;
		struct iocb cb[2], *list[2] = { &cb[0], &cb[1] };
		struct io_event ev[2];
		struct timespec ts = { T_WAIT_SEC, 0 };
		bool ok;

		off[1] = off[0] + BLOCK;
		if (io_setup(8, &ctx)) {
			atomic_fetch_add(a->failed, 1);
			continue;
		}
		memset(buf, 0, 2 * BLOCK);
		io_prep_pread(&cb[0], a->fd, buf, BLOCK, (long long)off[0]);
		io_prep_pread(&cb[1], a->fd, buf + BLOCK, BLOCK, (long long)off[1]);
		ok = io_submit(ctx, 2, list) == 2 && io_getevents(ctx, 2, 2, ev, &ts) == 2 &&
		     ev[0].res == BLOCK && ev[1].res == BLOCK;
		for (size_t j = 0; ok && j < 2 * BLOCK; j++)
			ok = (uint8_t)buf[j] == t_byte(off[0] + j, a->seed);
		if (io_destroy(ctx) || !ok)
			atomic_fetch_add(a->failed, 1);
	}
	if (!buf)
		atomic_fetch_add(a->failed, 1);
	free(buf);
	return NULL;
}

Test(setup, threads_setup_submit_destroy, .timeout = 120)
{
	pthread_t th[THREADS];
	struct churn a[THREADS];
	_Atomic unsigned failed = 0;
	int fd = t_file(512 * BLOCK, 6);

	/* Cold or not (the kernel may read some back in), the data is right.
	 * Not under ThreadSanitizer: liburing maps and unmaps its rings with
	 * raw system calls, which TSan does not see, so a ring mapped where a
	 * destroyed context's was looks to it like a race with the old ring's
	 * thread. There the reads hit the cache and the contexts never make a
	 * ring: the setup, submit and destroy paths still run in 100 threads. */
#ifndef T_TSAN
	fdatasync(fd);
	posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
#endif
	for (unsigned i = 0; i < THREADS; i++) {
		a[i] = (struct churn){ .fd = fd, .seed = 6, .id = i, .failed = &failed };
		cr_assert_eq(pthread_create(&th[i], NULL, churn_thread, &a[i]), 0);
	}
	for (unsigned i = 0; i < THREADS; i++)
		pthread_join(th[i], NULL);
	cr_assert_eq(atomic_load(&failed), 0, "%u of %u rounds failed", atomic_load(&failed),
		     THREADS * ROUNDS);
	close(fd);
}
