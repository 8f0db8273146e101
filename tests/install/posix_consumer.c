/* SPDX-License-Identifier: MIT */
/*
 * A POSIX AIO program (glibc's aio_read), run under `fsaio-run -P` from an
 * installed package: reads a file it wrote, checks the bytes, and checks
 * that aio_read came from the library named by argv[1] (the POSIX AIO
 * drop-in), not from glibc. Exit 0 on success, 1 with a message otherwise.
 */
#define _GNU_SOURCE
#include <aio.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define PROG "posix_consumer"
#include "consumer.h"

#define SIZE (64 * 1024)

static unsigned char want[SIZE], got[SIZE];

int main(int argc, char **argv)
{
	const struct aiocb *list[1];
	struct aiocb cb;
	int err, fd = dropin_start(argc, argv, (void *)aio_read, "aio_read", false, want, SIZE);

	if (fd < 0)
		return 1;
	memset(&cb, 0, sizeof(cb));
	cb.aio_fildes = fd;
	cb.aio_buf = got;
	cb.aio_nbytes = SIZE;
	if (aio_read(&cb) != 0)
		return fail("aio_read", errno);
	list[0] = &cb;
	while ((err = aio_error(&cb)) == EINPROGRESS)
		aio_suspend(list, 1, NULL);
	if (err != 0 || aio_return(&cb) != SIZE || memcmp(want, got, SIZE) != 0)
		return fail("wrong result or data", err);
	return dropin_end(fd, argv[2]);
}
