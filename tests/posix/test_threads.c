/* SPDX-License-Identifier: MIT */
/*
 * Thread safety: threads submitting, waiting, resubmitting and cancelling
 * on one fd at once; every request ends exactly once, with its data or
 * ECANCELED.
 */
#include <fcntl.h>
#include <pthread.h>
#include <unistd.h>

#include "t_px.h"

TestSuite(threads, .init = t_setup, .fini = t_teardown);

enum { T = 4, ROUNDS = 200, DEPTH = 8, FILE_PAGES = 512 };

struct worker {
	int fd;
	unsigned seed;
	int failures;
	unsigned cancelled;
};

static void *work(void *arg)
{
	struct worker *w = arg;
	static __thread char bufs[DEPTH][4096];
	struct aiocb cbs[DEPTH];
	const struct aiocb *list[DEPTH];
	unsigned x = w->seed;

	for (int r = 0; r < ROUNDS; r++) {
		for (int i = 0; i < DEPTH; i++) {
			x = x * 1103515245u + 12345u;
			t_cb(&cbs[i], w->fd, bufs[i], 4096, (off_t)(x % FILE_PAGES) * 4096, LIO_READ);
			if (aio_read(&cbs[i]) != 0)
				w->failures++;
			list[i] = &cbs[i];
		}
		for (int i = 0; i < DEPTH; i++) {
			int e;

			while ((e = aio_error(&cbs[i])) == EINPROGRESS)
				aio_suspend(list, DEPTH, NULL);
			if (e == ECANCELED) {
				w->cancelled++;
				if (aio_return(&cbs[i]) != -1)
					w->failures++;
				continue;
			}
			if (e != 0 || aio_return(&cbs[i]) != 4096) {
				w->failures++;
				continue;
			}
			for (int b = 0; b < 4096; b++)
				if ((uint8_t)bufs[i][b] != t_byte((uint64_t)cbs[i].aio_offset + (uint64_t)b, 80)) {
					w->failures++;
					break;
				}
		}
	}
	return NULL;
}

static _Atomic int stop;

static void *canceller(void *arg)
{
	int fd = *(int *)arg, calls = 0;

	while (!stop) {
		int r = aio_cancel(fd, NULL);

		if (r != AIO_CANCELED && r != AIO_NOTCANCELED && r != AIO_ALLDONE)
			return (void *)1;
		if (++calls % 64 == 0)
			posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
	}
	return NULL;
}

Test(threads, submit_wait_cancel_from_many_threads)
{
	struct worker w[T];
	pthread_t th[T], ct;
	int fd = t_file(FILE_PAGES * 4096, 80);
	void *cret;

	t_cold(fd);
	for (int i = 0; i < T; i++) {
		w[i] = (struct worker){ .fd = fd, .seed = 1000u + (unsigned)i };
		cr_assert_eq(pthread_create(&th[i], NULL, work, &w[i]), 0);
	}
	cr_assert_eq(pthread_create(&ct, NULL, canceller, &fd), 0);
	for (int i = 0; i < T; i++)
		pthread_join(th[i], NULL);
	stop = 1;
	pthread_join(ct, &cret);
	cr_assert_null(cret, "aio_cancel gave an unknown result");
	for (int i = 0; i < T; i++)
		cr_assert_eq(w[i].failures, 0, "worker %d: %d failures", i, w[i].failures);
	close(fd);
}

/* Writes from many threads to distinct ranges, with fsyncs between. */
static void *writer(void *arg)
{
	struct worker *w = arg;
	static __thread char buf[4096];
	struct aiocb cb, sync;

	for (int r = 0; r < 50; r++) {
		off_t off = (off_t)(w->seed * 50 + (unsigned)r) * 4096;

		t_fill(buf, sizeof(buf), (uint64_t)off, 81);
		t_cb(&cb, w->fd, buf, sizeof(buf), off, LIO_WRITE);
		t_cb(&sync, w->fd, NULL, 0, 0, 0);
		if (aio_write(&cb) != 0 || aio_fsync(O_DSYNC, &sync) != 0) {
			w->failures++;
			continue;
		}
		if (t_wait(&sync) != 0 || aio_error(&cb) != 0 || aio_return(&cb) != 4096)
			w->failures++;
	}
	return NULL;
}

Test(threads, writes_and_fsyncs_from_many_threads)
{
	struct worker w[T];
	pthread_t th[T];
	static char back[4096];
	int fd = t_file(0, 82);

	for (int i = 0; i < T; i++) {
		w[i] = (struct worker){ .fd = fd, .seed = (unsigned)i };
		cr_assert_eq(pthread_create(&th[i], NULL, writer, &w[i]), 0);
	}
	for (int i = 0; i < T; i++) {
		pthread_join(th[i], NULL);
		cr_assert_eq(w[i].failures, 0);
	}
	for (int p = 0; p < T * 50; p++) {
		cr_assert_eq(pread(fd, back, sizeof(back), (off_t)p * 4096), 4096);
		t_check(back, sizeof(back), (uint64_t)p * 4096, 81);
	}
	close(fd);
}
