/* SPDX-License-Identifier: MIT */
/*
 * aio_fsync covers every request on its fd queued before it (O_SYNC and
 * O_DSYNC), and writes on an O_APPEND fd land in submission order.
 */
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "t_px.h"

TestSuite(fsync, .init = t_setup, .fini = t_teardown);

/* Cold reads and writes, then an fsync: once the fsync is complete, every
 * request queued before it is complete too. */
static void fsync_after(int op)
{
	enum { N = 48 };
	static char bufs[N][8192];
	static struct aiocb cbs[N];
	struct aiocb sync;
	int fd = t_file(N * 16384, 10);

	t_cold(fd);
	for (int i = 0; i < N; i++) {
		off_t off = (off_t)((i * 37) % N) * 16384;

		if (i % 3 == 2) {
			t_fill(bufs[i], sizeof(bufs[i]), (uint64_t)off + 8192, 10);
			t_write_start(&cbs[i], fd, bufs[i], sizeof(bufs[i]), off + 8192);
		} else {
			t_read_start(&cbs[i], fd, bufs[i], sizeof(bufs[i]), off);
		}
	}
	t_cb(&sync, fd, NULL, 0, 0, 0);
	cr_assert_eq(aio_fsync(op, &sync), 0);
	T_RETURNS(&sync, 0);
	for (int i = 0; i < N; i++)
		cr_assert_neq(aio_error(&cbs[i]), EINPROGRESS,
			      "request %d still in progress after the fsync completed", i);
	for (int i = 0; i < N; i++) {
		off_t off = (off_t)((i * 37) % N) * 16384;

		cr_assert_eq(aio_error(&cbs[i]), 0);
		cr_assert_eq(aio_return(&cbs[i]), 8192);
		t_check(bufs[i], 8192, (uint64_t)off + (i % 3 == 2 ? 8192 : 0), 10);
	}
	close(fd);
}

Test(fsync, o_sync_covers_earlier_requests)
{
	fsync_after(O_SYNC);
}

Test(fsync, o_dsync_covers_earlier_requests)
{
	fsync_after(O_DSYNC);
}

/* Many fsyncs and writes interleaved: each fsync completes after the
 * writes before it. */
Test(fsync, interleaved_fsyncs)
{
	enum { N = 32 };
	static char bufs[N][4096];
	static struct aiocb w[N], s[N];
	int fd = t_file(N * 4096, 11);

	for (int i = 0; i < N; i++) {
		t_fill(bufs[i], 4096, (uint64_t)i * 4096, 12);
		t_write_start(&w[i], fd, bufs[i], 4096, (off_t)i * 4096);
		t_cb(&s[i], fd, NULL, 0, 0, 0);
		cr_assert_eq(aio_fsync(i % 2 ? O_SYNC : O_DSYNC, &s[i]), 0);
	}
	for (int i = N - 1; i >= 0; i--) {
		cr_assert_eq(t_wait(&s[i]), 0);
		for (int j = 0; j <= i; j++)
			cr_assert_neq(aio_error(&w[j]), EINPROGRESS);
	}
	for (int i = 0; i < N; i++) {
		cr_assert_eq(aio_return(&w[i]), 4096);
		cr_assert_eq(aio_return(&s[i]), 0);
	}
	close(fd);
}

/* O_APPEND: records appended by queued writes come out in submission
 * order; large records (which the drop-in may not finish in the caller)
 * alternate with small ones (which it can). */
Test(fsync, append_writes_keep_their_order)
{
	enum { N = 64, BIG = 1 << 20, SMALL = 100 };
	static struct aiocb cbs[N];
	char path[PATH_MAX];
	size_t total = 0, at = 0;
	char *recs[N], *back;
	int fd = t_file_path(0, 13, path, sizeof(path)), afd;

	afd = open(path, O_WRONLY | O_APPEND);
	cr_assert_geq(afd, 0);
	for (int i = 0; i < N; i++) {
		size_t len = i % 2 ? SMALL : BIG;

		recs[i] = malloc(len);
		cr_assert_not_null(recs[i]);
		memset(recs[i], 'a' + i % 26, len);
		snprintf(recs[i], 16, "%08d", i);
		total += len;
		/* The offset is ignored on an O_APPEND fd. */
		t_write_start(&cbs[i], afd, recs[i], len, 0);
	}
	for (int i = 0; i < N; i++)
		T_RETURNS(&cbs[i], (ssize_t)cbs[i].aio_nbytes);
	back = malloc(total);
	cr_assert_not_null(back);
	cr_assert_eq(pread(fd, back, total, 0), (ssize_t)total);
	for (int i = 0; i < N; i++) {
		cr_assert_eq(memcmp(back + at, recs[i], cbs[i].aio_nbytes), 0,
			     "record %d is not in its place: %.8s", i, back + at);
		at += cbs[i].aio_nbytes;
		free(recs[i]);
	}
	free(back);
	close(afd);
	close(fd);
}

/* An fsync waits for a read queued before it on its fd, however long that
 * takes: here a read from an empty pipe, which completes only once the
 * test writes. fsync(2) on a pipe then fails with EINVAL, the request's
 * error. */
Test(fsync, fsync_waits_for_a_blocked_read)
{
	static char buf[16];
	struct aiocb rd, sync;
	int p[2];

	cr_assert_eq(pipe(p), 0);
	t_read_start(&rd, p[0], buf, sizeof(buf), 0);
	t_cb(&sync, p[0], NULL, 0, 0, 0);
	cr_assert_eq(aio_fsync(O_SYNC, &sync), 0);
	t_still_waits(&sync, "the fsync completed before the read");
	cr_assert_eq(write(p[1], "x", 1), 1);
	cr_assert_eq(t_wait(&sync), EINVAL);
	cr_assert_eq(aio_return(&sync), -1);
	T_RETURNS(&rd, 1);
	t_close_pair(p);
}

/* An fsync on another file's fd does not wait for this one's requests;
 * on a pipe fsync(2) fails with EINVAL, the request's error. */
Test(fsync, fsync_on_a_pipe_is_the_requests_einval)
{
	struct aiocb cb;
	int p[2];

	cr_assert_eq(pipe(p), 0);
	t_cb(&cb, p[1], NULL, 0, 0, 0);
	cr_assert_eq(aio_fsync(O_SYNC, &cb), 0);
	cr_assert_eq(t_wait(&cb), EINVAL);
	cr_assert_eq(aio_return(&cb), -1);
	t_close_pair(p);
}

/*
 * A request held behind earlier ones on its fd is bound to its file at
 * submit. The fd is a pipe's write end (O_APPEND) that is full, so a first
 * write waits; an O_APPEND write and an fsync wait behind it. Then the fd
 * number is made to name a regular file (dup2 over it, or close and open
 * again) before the pipe is drained. On the drop-in the held write lands
 * in the pipe after the first and the fsync is the pipe's (EINVAL). glibc
 * binds requests to the number when its thread runs them: its append
 * never reaches the pipe (it goes into the file, or fails if the number
 * was closed just then): dropin/posix/README.md.
 */

/* Read the pipe (non-blocking) until it gave want bytes in all, or, with
 * stop given, stop is complete and the pipe empty. The bytes read so far. */
static int drain(int rfd, char *buf, int got, int want, const struct aiocb *stop)
{
	for (int tries = 0; got < want; tries++) {
		ssize_t n = read(rfd, buf + got, (size_t)(want - got));

		if (n > 0) {
			got += (int)n;
			continue;
		}
		cr_assert(n < 0 && errno == EAGAIN, "read: %zd %s", n, strerror(errno));
		if (stop && aio_error(stop) != EINPROGRESS)
			break;
		cr_assert_lt(tries, T_WAIT_SEC * 1000, "the pipe got %d bytes of %d", got, want);
		usleep(1000);
	}
	return got;
}

static void held_requests_stay_on_their_file(bool reuse)
{
	static char fill[1 << 16], drained[(1 << 17)];
	struct aiocb first, append, sync;
	char path[PATH_MAX];
	int p[2], file, wfd, keep, fl, got;
	const struct aiocb *list[1] = { &append };
	struct timespec brief = { 0, 20 * 1000 * 1000 };
	struct stat st;

	cr_assert_eq(pipe(p), 0);
	wfd = p[1];
	/* Another write end, so that closing wfd is no end of file. */
	keep = dup(wfd);
	cr_assert_geq(keep, 0);
	cr_assert_eq(fcntl(p[0], F_SETFL, fcntl(p[0], F_GETFL) | O_NONBLOCK), 0);
	fl = fcntl(wfd, F_GETFL);
	cr_assert_eq(fcntl(wfd, F_SETFL, fl | O_APPEND | O_NONBLOCK), 0);
	memset(fill, 'f', sizeof(fill));
	while (write(wfd, fill, sizeof(fill)) > 0)
		;
	cr_assert_eq(errno, EAGAIN);
	cr_assert_eq(fcntl(wfd, F_SETFL, fl | O_APPEND), 0);

	t_write_start(&first, wfd, "A", 1, 0);
	t_write_start(&append, wfd, "B", 1, 0);
	t_cb(&sync, wfd, NULL, 0, 0, 0);
	cr_assert_eq(aio_fsync(O_SYNC, &sync), 0);
	cr_assert_eq(aio_suspend(list, 1, &brief), -1, "the append did not wait");

	file = t_file_path(0, 0, path, sizeof(path));
	close(file);
	if (reuse) {
		cr_assert_eq(close(wfd), 0);
		file = open(path, O_WRONLY | O_APPEND);
		cr_assert_geq(file, 0);
		if (file != wfd) {
			/* Some thread took the number first: put it there. */
			cr_assert_eq(dup2(file, wfd), wfd);
			close(file);
		}
	} else {
		file = open(path, O_WRONLY | O_APPEND);
		cr_assert_geq(file, 0);
		cr_assert_eq(dup2(file, wfd), wfd);
		close(file);
	}

	if (t_dropin()) {
		/* The first write, then the append, in the pipe. */
		got = drain(p[0], drained, 0, (int)sizeof(fill) + 2, NULL);
		cr_assert_eq(drained[sizeof(fill)], 'A');
		cr_assert_eq(drained[sizeof(fill) + 1], 'B');
		cr_assert_eq(t_wait(&first), 0);
		T_RETURNS(&append, 1);
		cr_assert_eq(t_wait(&sync), EINVAL, "the fsync was not the pipe's");
		cr_assert_eq(stat(path, &st), 0);
		cr_assert_eq(st.st_size, 0, "the held append went into the other file");
	} else {
		got = drain(p[0], drained, 0, (int)sizeof(fill) + 2, &first);
		(void)t_wait(&first);
		(void)t_wait(&append);
		(void)t_wait(&sync);
		got = drain(p[0], drained, got, (int)sizeof(drained), &sync);
		cr_assert_leq(got, (int)sizeof(fill) + 1, "glibc's append reached the pipe");
	}
	close(keep);
	close(wfd);
	close(p[0]);
}

Test(fsync, held_append_and_fsync_stay_on_their_file_across_dup2)
{
	held_requests_stay_on_their_file(false);
}

Test(fsync, held_append_and_fsync_stay_on_their_file_across_close_and_reuse)
{
	held_requests_stay_on_their_file(true);
}
