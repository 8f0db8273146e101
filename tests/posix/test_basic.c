/* SPDX-License-Identifier: MIT */
/*
 * aio_read / aio_write / aio_error / aio_return: status while in flight
 * and after, data in the right place, the *64 forms, the same aiocb
 * resubmitted, where cache hits complete.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include "t_px.h"

TestSuite(basic, .init = t_setup, .fini = t_teardown);

Test(basic, read_then_error_then_return)
{
	static char buf[8192];
	struct aiocb cb;
	int fd = t_file(65536, 1);

	t_cold(fd);
	t_read_start(&cb, fd, buf, sizeof(buf), 4096);
	/* EINPROGRESS or already done: never anything else. */
	int e = aio_error(&cb);
	cr_assert(e == EINPROGRESS || e == 0, "aio_error %d", e);
	T_RETURNS(&cb, (ssize_t)sizeof(buf));
	t_check(buf, sizeof(buf), 4096, 1);
	close(fd);
}

Test(basic, write_then_read_back)
{
	static char out[12288], in[12288];
	struct aiocb cb;
	int fd = t_file(4096, 2);

	t_fill(out, sizeof(out), 100, 3);
	t_write_start(&cb, fd, out, sizeof(out), 100);
	T_RETURNS(&cb, (ssize_t)sizeof(out));
	cr_assert_eq(pread(fd, in, sizeof(in), 100), (ssize_t)sizeof(in));
	t_check(in, sizeof(in), 100, 3);
	close(fd);
}

Test(basic, short_read_at_eof_and_zero_past_it)
{
	static char buf[8192];
	struct aiocb cb;
	int fd = t_file(5000, 4);

	t_read_start(&cb, fd, buf, sizeof(buf), 4096);
	T_RETURNS(&cb, 5000 - 4096);
	t_check(buf, 5000 - 4096, 4096, 4);
	t_read_start(&cb, fd, buf, sizeof(buf), 1 << 20);
	T_RETURNS(&cb, 0);
	close(fd);
}

Test(basic, the_64_forms)
{
	static char buf[4096];
	struct aiocb64 cb;
	const struct aiocb64 *list[1] = { &cb };
	int fd = t_file(65536, 5);

	memset(&cb, 0, sizeof(cb));
	cb.aio_fildes = fd;
	cb.aio_buf = buf;
	cb.aio_nbytes = sizeof(buf);
	cb.aio_offset = 8192;
	cr_assert_eq(aio_read64(&cb), 0);
	while (aio_error64(&cb) == EINPROGRESS)
		cr_assert_eq(aio_suspend64(list, 1, NULL), 0);
	cr_assert_eq(aio_error64(&cb), 0);
	cr_assert_eq(aio_return64(&cb), 4096);
	t_check(buf, sizeof(buf), 8192, 5);
	cb.aio_offset = 0;
	cr_assert_eq(aio_write64(&cb), 0);
	while (aio_error64(&cb) == EINPROGRESS)
		cr_assert_eq(aio_suspend64(list, 1, NULL), 0);
	cr_assert_eq(aio_return64(&cb), 4096);
	cr_assert_eq(aio_fsync64(O_SYNC, &cb), 0);
	while (aio_error64(&cb) == EINPROGRESS)
		cr_assert_eq(aio_suspend64(list, 1, NULL), 0);
	cr_assert_eq(aio_return64(&cb), 0);
	cr_assert_eq(aio_cancel64(fd, &cb), AIO_ALLDONE);
	close(fd);
}

/* The same aiocb, submitted again once complete, many times over. */
Test(basic, resubmit_the_same_aiocb)
{
	static char buf[4096];
	struct aiocb cb;
	int fd = t_file(1 << 20, 6);

	t_cold(fd);
	for (int i = 0; i < 200; i++) {
		off_t off = (off_t)((i * 7919) % 256) * 4096;

		t_read_start(&cb, fd, buf, sizeof(buf), off);
		T_RETURNS(&cb, 4096);
		t_check(buf, sizeof(buf), (uint64_t)off, 6);
	}
	close(fd);
}

/* Many requests on one fd at once, all landing in the right buffers. */
Test(basic, many_on_one_fd)
{
	enum { N = 64 };
	static char bufs[N][4096];
	static struct aiocb cbs[N];
	int fd = t_file(N * 4096 * 2, 7);

	t_cold(fd);
	for (int i = 0; i < N; i++)
		t_read_start(&cbs[i], fd, bufs[i], 4096, (off_t)((N - 1 - i) * 2 + 1) * 4096);
	for (int i = 0; i < N; i++) {
		T_RETURNS(&cbs[i], 4096);
		t_check(bufs[i], 4096, (uint64_t)((N - 1 - i) * 2 + 1) * 4096, 7);
	}
	close(fd);
}

/* The drop-in completes a read of cached pages inside aio_read; glibc hands
 * every request to a thread (there it is in progress or done: either). */
Test(basic, cache_hit_completes_in_the_caller)
{
	static char buf[4096];
	struct aiocb cb;
	int fd = t_file(65536, 8);

	cr_assert_eq(pread(fd, buf, sizeof(buf), 0), 4096);
	t_read_start(&cb, fd, buf, sizeof(buf), 0);
	if (t_dropin())
		cr_assert_eq(aio_error(&cb), 0, "a cached read is still in progress after aio_read");
	T_RETURNS(&cb, 4096);
	close(fd);
}

/* The same for the reads after the first, which the drop-in does before it
 * makes anything for them, and for one that misses after them: each
 * returns its bytes, errno untouched. A page evicted between the warming
 * pread and aio_read (a loaded machine) makes that read a miss: warmed
 * and read again. */
Test(basic, later_cache_hits_complete_in_the_caller)
{
	static char buf[4096];
	struct aiocb cb;
	int fd = t_file(65536, 10);

	for (int i = 0; i < 8; i++) {
		off_t off = (off_t)(i % 4) * 4096 + (i / 4) * 100;
		bool inline_done = false;

		for (int tries = 0; tries < 20 && !inline_done; tries++) {
			cr_assert_eq(pread(fd, buf, sizeof(buf), off), (ssize_t)sizeof(buf));
			memset(buf, 0, sizeof(buf));
			t_cb(&cb, fd, buf, sizeof(buf), off, LIO_READ);
			errno = 4242;
			cr_assert_eq(aio_read(&cb), 0);
			cr_assert_eq(errno, 4242);
			inline_done = !t_dropin() || aio_error(&cb) == 0;
			T_RETURNS(&cb, (ssize_t)sizeof(buf));
			t_check(buf, sizeof(buf), (uint64_t)off, 10);
		}
		cr_assert(inline_done, "read %d: a cached read was still in progress after aio_read", i);
	}
	/* A miss after the hits: the drop-in tries it in the caller first. */
	t_cold(fd);
	t_read_start(&cb, fd, buf, sizeof(buf), 32768);
	T_RETURNS(&cb, (ssize_t)sizeof(buf));
	t_check(buf, sizeof(buf), 32768, 10);
	/* A hit with a bad buffer: its error in the aiocb, as glibc's pread. */
	cr_assert_eq(pread(fd, buf, sizeof(buf), 0), (ssize_t)sizeof(buf));
	t_cb(&cb, fd, (void *)16, sizeof(buf), 0, LIO_READ);
	cr_assert_eq(aio_read(&cb), 0);
	cr_assert_eq(t_wait(&cb), EFAULT);
	cr_assert_eq(aio_return(&cb), -1);
	close(fd);
}

/* errno is left alone on success. */
Test(basic, errno_untouched_on_success)
{
	static char buf[512];
	struct aiocb cb;
	int fd = t_file(4096, 9);

	t_cb(&cb, fd, buf, sizeof(buf), 0, LIO_READ);
	errno = 4242;
	cr_assert_eq(aio_read(&cb), 0);
	cr_assert_eq(errno, 4242);
	cr_assert_eq(t_wait(&cb), 0);
	errno = 4242;
	cr_assert_eq(aio_return(&cb), 512);
	cr_assert_eq(errno, 4242);
	close(fd);
}

/* Requests on one fd run concurrently through the drop-in: a write on a
 * socket completes while a read on the same socket still waits for data.
 * glibc runs one request per fd at a time: its write waits behind the
 * read (dropin/posix/README.md). */
Test(basic, requests_on_one_fd_run_concurrently)
{
	static char in[16];
	struct aiocb rd, wr;
	char got[4];
	int s[2];

	cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, s), 0);
	t_read_start(&rd, s[0], in, sizeof(in), 0);
	t_write_start(&wr, s[0], "ping", 4, 0);
	if (t_dropin()) {
		T_RETURNS(&wr, 4);
		cr_assert_eq(read(s[1], got, 4), 4);
		cr_assert_eq(memcmp(got, "ping", 4), 0);
		cr_assert_eq(aio_error(&rd), EINPROGRESS);
	} else {
		t_still_waits(&wr, "the write behind the read");
	}
	cr_assert_eq(write(s[1], "pong", 4), 4);
	T_RETURNS(&rd, 4);
	cr_assert_eq(memcmp(in, "pong", 4), 0);
	T_RETURNS(&wr, 4);
	t_close_pair(s);
}
