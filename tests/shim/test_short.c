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
#include <sys/socket.h>
#include <unistd.h>

#include "../t_short.h"
#include "t_aio.h"

#define MiB (1024u * 1024u)

TestSuite(short, .init = t_setup, .fini = t_teardown, .timeout = 120);

/* t_read_fn: io_submit a read of len into buf (offset 0), its res. */
static int64_t aio_read_of(void *ctx, int fd, char *buf, size_t len, int parts)
{
	struct iocb cb;

	(void)parts;
	io_prep_pread(&cb, fd, buf, len, 0);
	return t_do(*(io_context_t *)ctx, &cb);
}

static void memory_device(const char *path, bool same_bytes, int rounds)
{
	io_context_t ctx = t_ctx(8);

	t_short_memory_device(path, same_bytes, rounds, 1, aio_read_of, &ctx);
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

	t_short_twin_streams(-1, 1, aio_read_of, &ctx);
	t_short_twin_streams(AF_UNIX, 1, aio_read_of, &ctx);
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
	cr_assert_eq(aio_read_of(&ctx, fd, a, len, 1), pread(fd, k, len, 0));
	t_check(a, size, 0, 9);
	free(a);
	free(k);
	close(fd);
	io_destroy(ctx);
}
