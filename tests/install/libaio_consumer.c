/* SPDX-License-Identifier: MIT */
/*
 * A program linked against the system's libaio (-laio: needs libaio.so.1),
 * run with LD_LIBRARY_PATH set to an installed $libdir/fsaio: reads a file
 * it wrote with io_submit/io_getevents, checks the bytes, and checks that
 * io_submit came from the directory given as argv[1] (the drop-in), not
 * from the system's libaio. Exit 0 on success, 1 with a message otherwise.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <libaio.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define SIZE (64 * 1024)

static unsigned char want[SIZE], got[SIZE];

static int fail(const char *what, long v)
{
	fprintf(stderr, "libaio_consumer: %s (%ld)\n", what, v);
	return 1;
}

int main(int argc, char **argv)
{
	io_context_t ctx = 0;
	struct iocb cb, *cbp = &cb;
	struct io_event ev;
	Dl_info info;
	int fd, rc;

	if (argc < 3)
		return fail("usage: libaio_consumer DROPIN_DIR FILE", argc);
	if (!dladdr((void *)io_submit, &info) || !info.dli_fname)
		return fail("dladdr(io_submit) failed", 0);
	if (strncmp(info.dli_fname, argv[1], strlen(argv[1])) != 0) {
		fprintf(stderr, "libaio_consumer: io_submit comes from %s, not %s\n",
			info.dli_fname, argv[1]);
		return 1;
	}
	for (size_t i = 0; i < SIZE; i++)
		want[i] = (unsigned char)(i * 13 + 1);
	fd = open(argv[2], O_RDWR | O_CREAT | O_TRUNC, 0600);
	if (fd < 0 || write(fd, want, SIZE) != SIZE)
		return fail("cannot write the file", fd);
	rc = io_setup(8, &ctx);
	if (rc < 0)
		return fail("io_setup", rc);
	io_prep_pread(&cb, fd, got, SIZE, 0);
	rc = io_submit(ctx, 1, &cbp);
	if (rc != 1)
		return fail("io_submit", rc);
	rc = io_getevents(ctx, 1, 1, &ev, NULL);
	if (rc != 1)
		return fail("io_getevents", rc);
	if (ev.obj != &cb || ev.res != SIZE || memcmp(want, got, SIZE) != 0)
		return fail("wrong event or data", (long)ev.res);
	io_destroy(ctx);
	close(fd);
	unlink(argv[2]);
	printf("libaio_consumer: served by %s\n", info.dli_fname);
	return 0;
}
