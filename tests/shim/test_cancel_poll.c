/* SPDX-License-Identifier: MIT */
/*
 * IO_CMD_POLL and io_cancel.
 *
 * A poll ready at submit reports the requested events that are ready (and
 * always POLLERR/POLLHUP). One that completes later reports, on the kernel,
 * the whole mask its waker passed (a pipe write says POLLIN|POLLRDNORM, a
 * socket adds POLLPRI|POLLRDBAND), and through the shim poll(2)'s revents:
 * the tests hold both to "the requested event is in res".
 */
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include "t_aio.h"

TestSuite(cancel_poll, .init = t_setup, .fini = t_teardown);

/* Submit cb, a poll of fd for events, alone. */
static void submit_poll(io_context_t ctx, struct iocb *cb, int fd, short events)
{
	io_prep_poll(cb, fd, events);
	T_EXPECT(t_submit1(ctx, cb), 1);
}

Test(cancel_poll, poll_pipe_readiness)
{
	io_context_t ctx = t_ctx(8);
	int p[2];
	struct iocb cb;
	struct io_event ev;
	struct timespec zero = { 0, 0 }, ms = { 0, 20 * 1000000 };

	cr_assert_eq(pipe(p), 0);
	io_prep_poll(&cb, p[0], POLLIN);
	cb.data = (void *)0x77;
	T_EXPECT(t_submit1(ctx, &cb), 1);
	/* Not ready: nothing arrives. */
	T_EXPECT(io_getevents(ctx, 0, 1, &ev, &zero), 0);
	T_EXPECT(io_getevents(ctx, 1, 1, &ev, &ms), 0);
	cr_assert_eq(write(p[1], "x", 1), 1);
	t_reap(ctx, 1, &ev);
	cr_assert_eq((void *)ev.obj, (void *)&cb);
	cr_assert_eq((uintptr_t)ev.data, 0x77);
	cr_assert(ev.res & POLLIN, "res %#lx", (long)ev.res);
	/* Ready at once: the write end of an empty pipe. */
	io_prep_poll(&cb, p[1], POLLOUT | POLLIN);
	cr_assert_eq(t_do(ctx, &cb), POLLOUT);
	/* A hang-up is reported even when not asked for. */
	submit_poll(ctx, &cb, p[0], POLLPRI);
	close(p[1]);
	t_reap(ctx, 1, &ev);
	cr_assert(ev.res & POLLHUP, "res %#lx", (long)ev.res);
	T_EXPECT(io_destroy(ctx), 0);
	close(p[0]);
}

Test(cancel_poll, poll_regular_file_is_ready)
{
	io_context_t ctx = t_ctx(8);
	int fd = t_file(4096, 40);
	struct iocb cb;

	io_prep_poll(&cb, fd, POLLIN | POLLOUT | POLLPRI);
	cr_assert_eq(t_do(ctx, &cb), POLLIN | POLLOUT);
	T_DONE(ctx, fd);
}

Test(cancel_poll, poll_socket)
{
	io_context_t ctx = t_ctx(8);
	int sv[2];
	struct iocb cb;
	struct io_event ev;

	cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	submit_poll(ctx, &cb, sv[0], POLLIN);
	cr_assert_eq(send(sv[1], "hi", 2, 0), 2);
	t_reap(ctx, 1, &ev);
	cr_assert(ev.res & POLLIN, "res %#lx", (long)ev.res);
	T_DONE_PAIR(ctx, sv);
}

/* A waiting poll is cancelled: -EINPROGRESS, then its event, with the
 * events seen at that moment (none), as the kernel reports it. */
Test(cancel_poll, cancel_pending_poll)
{
	io_context_t ctx = t_ctx(8);
	int p[2];
	struct iocb cb;
	struct io_event ev, unused;
	struct timespec zero = { 0, 0 };

	cr_assert_eq(pipe(p), 0);
	submit_poll(ctx, &cb, p[0], POLLIN);
	T_EXPECT(io_cancel(ctx, &cb, &unused), -EINPROGRESS);
	t_reap(ctx, 1, &ev);
	cr_assert_eq((void *)ev.obj, (void *)&cb);
	cr_assert_eq(ev.res, 0);
	cr_assert_eq(ev.res2, 0);
	/* Once done, it is not in flight any more. */
	T_EXPECT(io_cancel(ctx, &cb, &unused), -EINVAL);
	T_EXPECT(io_getevents(ctx, 0, 1, &ev, &zero), 0);
	T_DONE_PAIR(ctx, p);
}

/* io_destroy cancels a poll that would never complete, and returns. */
Test(cancel_poll, destroy_with_pending_poll)
{
	io_context_t ctx = t_ctx(8);
	int p[2];
	struct iocb cb;

	cr_assert_eq(pipe(p), 0);
	submit_poll(ctx, &cb, p[0], POLLIN);
	T_DONE_PAIR(ctx, p);
}

Test(cancel_poll, cancel_rules)
{
	io_context_t ctx = t_ctx(8);
	int fd = t_file(8192, 41);
	char buf[4096];
	struct iocb cb, never;
	struct io_event ev;

	/* Completed: nothing to cancel. */
	io_prep_pread(&cb, fd, buf, sizeof(buf), 0);
	cr_assert_eq(t_do(ctx, &cb), 4096);
	T_EXPECT(io_cancel(ctx, &cb, &ev), -EINVAL);
	/* Never submitted, and a key that submit never set. */
	io_prep_pread(&never, fd, buf, sizeof(buf), 0);
	T_EXPECT(io_cancel(ctx, &never, &ev), -EINVAL);
	never.key = 5;
	T_EXPECT(io_cancel(ctx, &never, &ev), -EINVAL);
	T_DONE(ctx, fd);
}

/*
 * Beyond the kernel: its buffered reads are finished inside io_submit, so it
 * has nothing to cancel; through the shim a read still queued for a worker
 * can be taken back. One worker, busy with cold 1 MiB reads, keeps the last
 * request queued long enough to cancel it.
 */
Test(cancel_poll, cancel_queued_read)
{
	enum { N = 24, SZ = 1 << 20 };
	io_context_t ctx;
	int fd;
	char *buf = malloc((size_t)N * SZ);
	struct iocb cb[N], *list[N];
	struct io_event ev[N];
	int cancelled = 0;

	T_SHIM_ONLY("the kernel completes buffered reads inside io_submit");
	setenv("FSAIO_WORKERS", "1", 1);
	setenv("FSAIO_BACKEND", "threads", 1);
	ctx = t_ctx(N);
	fd = t_file((size_t)2 * N * SZ, 42);
	t_cold(fd);
	for (int i = 0; i < N; i++) {
		io_prep_pread(&cb[i], fd, buf + (size_t)i * SZ, SZ, (long long)2 * i * SZ);
		list[i] = &cb[i];
	}
	T_EXPECT(io_submit(ctx, N, list), N);
	T_EXPECT(io_cancel(ctx, &cb[N - 1], &ev[0]), -EINPROGRESS);
	t_reap(ctx, N, ev);
	for (int i = 0; i < N; i++) {
		struct iocb *o = (struct iocb *)ev[i].obj;

		if (o == &cb[N - 1]) {
			cr_assert_eq((long)ev[i].res, -ECANCELED);
			cancelled++;
		} else {
			cr_assert_eq(ev[i].res, SZ);
			t_check(buf + (size_t)(o - cb) * SZ, SZ, (uint64_t)2 * (uint64_t)(o - cb) * SZ, 42);
		}
	}
	cr_assert_eq(cancelled, 1);
	T_DONE(ctx, fd);
	free(buf);
}
