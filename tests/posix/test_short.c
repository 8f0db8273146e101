/* SPDX-License-Identifier: MIT */
/*
 * The short-read rule through POSIX AIO: aio_read gives what one blocking
 * read(2) of the same request gives, on glibc and on the drop-in.
 * /dev/zero and /dev/urandom are read at 1 MiB and 16 MiB while hog
 * threads spin in this process, so the kernel stops the drop-in's
 * RWF_NOWAIT attempts early; a pipe with less data ready than asked
 * answers with what is there.
 */
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include "../t_hog.h"
#include "t_px.h"

#define MiB (1024u * 1024u)
#define HOGS 3
#define FILL 0xa5

TestSuite(short, .init = t_setup, .fini = t_teardown, .timeout = 120);

/* aio_read of len at off into buf (memset to FILL first): aio_return. */
static ssize_t aio_read_of(int fd, char *buf, size_t len, off_t off)
{
	struct aiocb cb;

	memset(buf, FILL, len);
	t_cb(&cb, fd, buf, len, off, LIO_READ);
	cr_assert_eq(aio_read(&cb), 0);
	cr_assert_eq(t_wait(&cb), 0);
	return aio_return(&cb);
}

static void memory_device(const char *path, bool same_bytes, int rounds)
{
	const struct { size_t len; int rounds; } sizes[] = { { MiB, rounds * 6 }, { 16 * MiB, rounds } };
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	cr_assert_geq(fd, 0, "%s: %s", path, strerror(errno));
	cr_assert_eq(t_hog_start(HOGS), 0);
	for (unsigned s = 0; s < 2; s++) {
		size_t len = sizes[s].len;
		char *a = malloc(len), *k = malloc(len);

		cr_assert(a && k);
		for (int i = 0; i < sizes[s].rounds; i++) {
			ssize_t got = aio_read_of(fd, a, len, 0), want;

			memset(k, FILL, len);
			want = read(fd, k, len);
			cr_assert_eq(want, (ssize_t)len);
			cr_assert_eq(got, want, "%s (%s): %zu bytes, round %d: aio_read %zd, "
				     "read(2) %zd", path, t_mode(), len, i, got, want);
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
}

Test(short, dev_zero_under_cpu_pressure)
{
	memory_device("/dev/zero", true, 8);
}

Test(short, dev_urandom_under_cpu_pressure)
{
	memory_device("/dev/urandom", false, 2);
}

Test(short, pipe_returns_what_is_ready)
{
	char data[3000], a[65536], k[65536];
	int p[2], q[2];

	t_fill(data, sizeof(data), 0, 5);
	cr_assert_eq(pipe2(p, O_CLOEXEC), 0);
	cr_assert_eq(pipe2(q, O_CLOEXEC), 0);
	cr_assert_eq(write(p[1], data, sizeof(data)), (ssize_t)sizeof(data));
	cr_assert_eq(write(q[1], data, sizeof(data)), (ssize_t)sizeof(data));
	cr_assert_eq(aio_read_of(p[0], a, sizeof(a), 0), read(q[0], k, sizeof(k)));
	cr_assert_eq(memcmp(a, k, sizeof(data)), 0);
	for (int i = 0; i < 2; i++) {
		close(p[i]);
		close(q[i]);
	}
}
