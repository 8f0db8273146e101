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

#define SIZE (64 * 1024)

static unsigned char want[SIZE], got[SIZE];

static int fail(const char *what, long v)
{
	fprintf(stderr, "posix_consumer: %s (%ld)\n", what, v);
	return 1;
}

int main(int argc, char **argv)
{
	const struct aiocb *list[1];
	struct aiocb cb;
	Dl_info info;
	int fd, err;

	if (argc < 3)
		return fail("usage: posix_consumer DROPIN FILE", argc);
	if (!dladdr((void *)aio_read, &info) || !info.dli_fname)
		return fail("dladdr(aio_read) failed", 0);
	if (strstr(info.dli_fname, argv[1]) == NULL) {
		fprintf(stderr, "posix_consumer: aio_read comes from %s, not %s\n",
			info.dli_fname, argv[1]);
		return 1;
	}
	for (size_t i = 0; i < SIZE; i++)
		want[i] = (unsigned char)(i * 7 + 3);
	fd = open(argv[2], O_RDWR | O_CREAT | O_TRUNC, 0600);
	if (fd < 0 || write(fd, want, SIZE) != SIZE)
		return fail("cannot write the file", fd);
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
	close(fd);
	unlink(argv[2]);
	printf("posix_consumer: served by %s\n", info.dli_fname);
	return 0;
}
