/* SPDX-License-Identifier: MIT */
/*
 * A plain C program (no Criterion, so that it runs in every build, TSan's
 * too), linked with -lfsaio-posixaio: threads at once on one file submit
 * reads of cached and uncached pages with aio_read and lio_listio, wait
 * with aio_suspend, resubmit the same aiocbs, write and fsync, append to an
 * O_APPEND fd, and cancel everything on the fd from another thread. Every
 * request must end exactly once: its data, or ECANCELED. Exit 0, or 1 with
 * the reason on stderr.
 *
 *   px_stress DIR
 */
#include <aio.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { THREADS = 3, ROUNDS = 150, DEPTH = 8, PAGES = 256, APPENDS = 200, REC = 64 };

static int fd, afd;
static atomic_int failures, stop;
static atomic_uint cancelled;

static uint8_t byte_at(uint64_t off)
{
	return (uint8_t)(off * 131 + (off >> 12) * 7);
}

static void fail(const char *what, int a, int b)
{
	fprintf(stderr, "px_stress: %s (%d, %d)\n", what, a, b);
	atomic_fetch_add(&failures, 1);
}

static void wait_all(struct aiocb *cbs, int n)
{
	const struct aiocb *list[DEPTH];

	for (int i = 0; i < n; i++)
		list[i] = &cbs[i];
	for (int i = 0; i < n; i++)
		while (aio_error(&cbs[i]) == EINPROGRESS)
			if (aio_suspend(list, n, NULL) != 0 && errno != EINTR)
				fail("aio_suspend", errno, i);
}

static void *reader(void *arg)
{
	unsigned x = (unsigned)(uintptr_t)arg * 7919u + 1;
	struct aiocb cbs[DEPTH];
	struct aiocb *lio[DEPTH];
	char (*bufs)[4096] = malloc(DEPTH * 4096);

	for (int r = 0; r < ROUNDS; r++) {
		memset(cbs, 0, sizeof(cbs));
		for (int i = 0; i < DEPTH; i++) {
			x = x * 1103515245u + 12345u;
			cbs[i].aio_fildes = fd;
			cbs[i].aio_buf = bufs[i];
			cbs[i].aio_nbytes = 4096;
			cbs[i].aio_offset = (off_t)(x % PAGES) * 4096;
			cbs[i].aio_lio_opcode = LIO_READ;
			lio[i] = &cbs[i];
		}
		if (r % 2) {
			int ret = lio_listio(LIO_NOWAIT, lio, DEPTH, NULL);

			if (ret != 0)
				fail("lio_listio", ret, errno);
		} else {
			for (int i = 0; i < DEPTH; i++)
				if (aio_read(&cbs[i]) != 0)
					fail("aio_read", errno, i);
		}
		wait_all(cbs, DEPTH);
		for (int i = 0; i < DEPTH; i++) {
			int e = aio_error(&cbs[i]);
			ssize_t n = aio_return(&cbs[i]);

			if (e == ECANCELED) {
				atomic_fetch_add(&cancelled, 1);
				if (n != -1)
					fail("cancelled but aio_return", (int)n, i);
				continue;
			}
			if (e != 0 || n != 4096) {
				fail("read result", e, (int)n);
				continue;
			}
			for (int b = 0; b < 4096; b++)
				if ((uint8_t)bufs[i][b] != byte_at((uint64_t)cbs[i].aio_offset + (uint64_t)b)) {
					fail("wrong data at page", (int)(cbs[i].aio_offset / 4096), b);
					break;
				}
		}
		if (r % 16 == 0)
			posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
	}
	free(bufs);
	return NULL;
}

/* Rewrites pages with what they hold, fsyncs after each batch: the fsync
 * must not complete before the writes queued before it. */
static void *writer(void *arg)
{
	static char buf[4096];
	struct aiocb w[4], s;

	(void)arg;
	for (int r = 0; r < ROUNDS / 2; r++) {
		int page = (r * 37) % PAGES;

		for (int b = 0; b < 4096; b++)
			buf[b] = (char)byte_at((uint64_t)page * 4096 + (uint64_t)b);
		for (int i = 0; i < 4; i++) {
			memset(&w[i], 0, sizeof(w[i]));
			w[i].aio_fildes = fd;
			w[i].aio_buf = buf;
			w[i].aio_nbytes = 4096;
			w[i].aio_offset = (off_t)page * 4096;
			if (aio_write(&w[i]) != 0)
				fail("aio_write", errno, i);
		}
		memset(&s, 0, sizeof(s));
		s.aio_fildes = fd;
		if (aio_fsync(r % 2 ? O_SYNC : O_DSYNC, &s) != 0)
			fail("aio_fsync", errno, r);
		wait_all(&s, 1);
		if (aio_error(&s) == 0)
			for (int i = 0; i < 4; i++)
				if (aio_error(&w[i]) == EINPROGRESS)
					fail("fsync completed before a write queued before it", r, i);
		wait_all(w, 4);
	}
	return NULL;
}

static void *appender(void *arg)
{
	static char recs[APPENDS][REC];
	static struct aiocb cbs[APPENDS];

	(void)arg;
	for (int i = 0; i < APPENDS; i++) {
		memset(recs[i], 'a' + i % 26, REC);
		snprintf(recs[i], 12, "%08d", i);
		cbs[i].aio_fildes = afd;
		cbs[i].aio_buf = recs[i];
		cbs[i].aio_nbytes = REC;
		if (aio_write(&cbs[i]) != 0)
			fail("append aio_write", errno, i);
	}
	for (int i = 0; i < APPENDS; i++) {
		wait_all(&cbs[i], 1);
		if (aio_error(&cbs[i]) != 0 || aio_return(&cbs[i]) != REC)
			fail("append result", aio_error(&cbs[i]), i);
	}
	for (int i = 0; i < APPENDS; i++) {
		char back[REC];

		if (pread(afd, back, REC, (off_t)i * REC) != REC || memcmp(back, recs[i], REC) != 0)
			fail("append out of order at record", i, 0);
	}
	return NULL;
}

static void *canceller(void *arg)
{
	(void)arg;
	while (!atomic_load(&stop)) {
		int r = aio_cancel(fd, NULL);

		if (r != AIO_CANCELED && r != AIO_NOTCANCELED && r != AIO_ALLDONE)
			fail("aio_cancel", r, errno);
		usleep(200);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	char path[4096], apath[4096];
	static char page[4096];
	pthread_t th[THREADS + 3];

	if (argc != 2) {
		fprintf(stderr, "usage: px_stress DIR\n");
		return 2;
	}
	snprintf(path, sizeof(path), "%s/px_stress.%d", argv[1], (int)getpid());
	snprintf(apath, sizeof(apath), "%s/px_stress_append.%d", argv[1], (int)getpid());
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	afd = open(apath, O_RDWR | O_CREAT | O_TRUNC | O_APPEND, 0600);
	if (fd < 0 || afd < 0) {
		perror("px_stress: open");
		return 1;
	}
	for (int p = 0; p < PAGES; p++) {
		for (int b = 0; b < 4096; b++)
			page[b] = (char)byte_at((uint64_t)p * 4096 + (uint64_t)b);
		if (pwrite(fd, page, 4096, (off_t)p * 4096) != 4096) {
			perror("px_stress: pwrite");
			return 1;
		}
	}
	for (uintptr_t i = 0; i < THREADS; i++)
		pthread_create(&th[i], NULL, reader, (void *)i);
	pthread_create(&th[THREADS], NULL, writer, NULL);
	pthread_create(&th[THREADS + 1], NULL, appender, NULL);
	pthread_create(&th[THREADS + 2], NULL, canceller, NULL);
	for (int i = 0; i < THREADS + 2; i++)
		pthread_join(th[i], NULL);
	atomic_store(&stop, 1);
	pthread_join(th[THREADS + 2], NULL);
	close(fd);
	close(afd);
	unlink(path);
	unlink(apath);
	printf("px_stress: %u reads cancelled, %d failures\n", atomic_load(&cancelled),
	       atomic_load(&failures));
	return atomic_load(&failures) ? 1 : 0;
}
