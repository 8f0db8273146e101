/* SPDX-License-Identifier: MIT */
/*
 * The short-read rule through POSIX AIO: aio_read gives what one blocking
 * read(2) of the same request gives, on glibc and on the drop-in.
 * /dev/zero and /dev/urandom are read at 1 MiB and 16 MiB while hog
 * threads spin in this process, so the kernel stops the drop-in's
 * RWF_NOWAIT attempts early; a pipe or socket with less data ready than
 * asked answers with what is there.
 */
#include <sys/socket.h>

#include "../t_short.h"
#include "t_px.h"

TestSuite(short, .init = t_setup, .fini = t_teardown, .timeout = 120);

/* t_read_fn: aio_read of len into buf (offset 0), its aio_return. */
static int64_t aio_read_of(void *arg, int fd, char *buf, size_t len, int parts)
{
	struct aiocb cb;

	(void)arg;
	(void)parts;
	t_read_start(&cb, fd, buf, len, 0);
	cr_assert_eq(t_wait(&cb), 0);
	return aio_return(&cb);
}

Test(short, dev_zero_under_cpu_pressure)
{
	t_short_memory_device("/dev/zero", true, 8, 1, aio_read_of, NULL);
}

Test(short, dev_urandom_under_cpu_pressure)
{
	t_short_memory_device("/dev/urandom", false, 2, 1, aio_read_of, NULL);
}

Test(short, pipe_returns_what_is_ready)
{
	t_short_twin_streams(-1, 1, aio_read_of, NULL);
	t_short_twin_streams(AF_UNIX, 1, aio_read_of, NULL);
}
