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

#define PROG "libaio_consumer"
#include "consumer.h"

#define SIZE (64 * 1024)

static unsigned char want[SIZE], got[SIZE];

int main(int argc, char **argv)
{
	io_context_t ctx = 0;
	struct iocb cb, *cbp = &cb;
	struct io_event ev;
	int rc, fd = dropin_start(argc, argv, (void *)io_submit, "io_submit", true, want, SIZE);

	if (fd < 0)
		return 1;
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
	return dropin_end(fd, argv[2]);
}
