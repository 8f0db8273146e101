/* SPDX-License-Identifier: MIT */
/*
 * The short-read rule through libaio: an io_submit'ed read gives what one
 * blocking read(2) of the same request gives, on the kernel and on the
 * drop-in. /dev/zero and /dev/urandom are read at 1 MiB and 16 MiB while
 * hog threads spin in this process, so the kernel stops the drop-in's
 * RWF_NOWAIT attempts early; a pipe with less data ready than asked
 * answers with what is there; a partly cached file is read to its EOF.
 */
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include "../t_hog.h"
#include "t_aio.h"

#define MiB (1024u * 1024u)
#define HOGS 3
#define FILL 0xa5

TestSuite(short, .init = t_setup, .fini = t_teardown, .timeout = 120);

/* io_submit a read of len at off into buf (memset to FILL first): its res. */
static long aio_read_of(io_context_t ctx, int fd, char *buf, size_t len, long long off)
{
	struct iocb cb;

	memset(buf, FILL, len);
	io_prep_pread(&cb, fd, buf, len, off);
	return t_do(ctx, &cb);
}

static void memory_device(const char *path, bool same_bytes, int rounds)
{
	const struct { size_t len; int rounds; } sizes[] = { { MiB, rounds * 6 }, { 16 * MiB, rounds } };
	io_context_t ctx = t_ctx(8);
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	cr_assert_geq(fd, 0, "%s: %s", path, strerror(errno));
	cr_assert_eq(t_hog_start(HOGS), 0);
	for (unsigned s = 0; s < 2; s++) {
		size_t len = sizes[s].len;
		char *a = malloc(len), *k = malloc(len);

		cr_assert(a && k);
		for (int i = 0; i < sizes[s].rounds; i++) {
			long got = aio_read_of(ctx, fd, a, len, 0);
			ssize_t want;

			memset(k, FILL, len);
			want = read(fd, k, len);
			cr_assert_eq(want, (ssize_t)len);
			cr_assert_eq(got, (long)want, "%s (%s): %zu bytes, round %d: io_submit "
				     "read %ld, read(2) %zd", path, t_mode(), len, i, got, want);
			if (same_bytes)
				cr_assert_eq(memcmp(a, k, len), 0);
			else
				cr_assert_neq(memcmp(a + len - 64, k + len - 64, 64), 0);
		}
		free(a);
		free(k);
	}
	t_hog_stop();
	close(fd);
	io_destroy(ctx);
}

Test(short, dev_zero_under_cpu_pressure)
{
	memory_device("/dev/zero", true, 4);
}

Test(short, dev_urandom_under_cpu_pressure)
{
	memory_device("/dev/urandom", false, 2);
}

Test(short, pipe_returns_what_is_ready)
{
	io_context_t ctx = t_ctx(8);
	char data[3000], a[65536], k[65536];
	int p[2], q[2];

	t_fill(data, sizeof(data), 0, 5);
	cr_assert_eq(pipe2(p, O_CLOEXEC), 0);
	cr_assert_eq(pipe2(q, O_CLOEXEC), 0);
	cr_assert_eq(write(p[1], data, sizeof(data)), (ssize_t)sizeof(data));
	cr_assert_eq(write(q[1], data, sizeof(data)), (ssize_t)sizeof(data));
	cr_assert_eq(aio_read_of(ctx, p[0], a, sizeof(a), 0), read(q[0], k, sizeof(k)));
	cr_assert_eq(memcmp(a, k, sizeof(data)), 0);
	for (int i = 0; i < 2; i++) {
		close(p[i]);
		close(q[i]);
	}
	io_destroy(ctx);
}

/* Whatever part of it the cache holds, a read across EOF gives the rest of
 * the file, as pread(2) does. */
Test(short, partly_cached_file_to_eof)
{
	io_context_t ctx = t_ctx(8);
	size_t size = 4 * MiB + 1000, len = 8 * MiB;
	int fd = t_file(size, 9);
	char *a = malloc(len), *k = malloc(len), head[4096];

	cr_assert(a && k);
	t_cold(fd);
	for (size_t off = 0; off < MiB; off += sizeof(head))
		cr_assert_eq(pread(fd, head, sizeof(head), (off_t)off), (ssize_t)sizeof(head));
	cr_assert_eq(aio_read_of(ctx, fd, a, len, 0), pread(fd, k, len, 0));
	t_check(a, size, 0, 9);
	free(a);
	free(k);
	close(fd);
	io_destroy(ctx);
}
