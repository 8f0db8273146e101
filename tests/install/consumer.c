/* SPDX-License-Identifier: MIT */
/*
 * A program built outside the tree against an installed libfsaio (found by
 * pkg-config or as a Meson subproject): reads a file it wrote through the
 * engine and checks every byte, and that the library it runs on is the one
 * it was compiled for. Exit 0 on success, 1 with a message otherwise.
 */
#include <fsaio.h>

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define PROG "consumer"
#include "consumer.h"

#define SIZE (256 * 1024)

static unsigned char want[SIZE], got[SIZE];

int main(int argc, char **argv)
{
	const char *path = argc > 1 ? argv[1] : "consumer.dat";
	struct fsaio_req req, *rp = &req;
	struct fsaio_event ev;
	fsaio_ctx_t *ctx;
	ssize_t n;
	int fd, rc;

	if (strcmp(fsaio_version(), FSAIO_VERSION_STRING) != 0)
		return fail("fsaio_version() differs from the header's", 0);
	if (fsaio_version_check(FSAIO_VERSION_MAJOR, FSAIO_VERSION_MINOR) != 1)
		return fail("fsaio_version_check refuses the header's version", 0);
	if (fsaio_version_check(FSAIO_VERSION_MAJOR + 1, 0) != 0)
		return fail("fsaio_version_check accepts the next major version", 0);

	for (size_t i = 0; i < SIZE; i++)
		want[i] = (unsigned char)(i * 7 + i / 4096);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	if (fd < 0)
		return fail("open", fd);
	n = write(fd, want, SIZE);
	if (n != SIZE)
		return fail("write", (long)n);

	rc = fsaio_ctx_create(NULL, &ctx);
	if (rc < 0)
		return fail("fsaio_ctx_create", rc);
	fsaio_prep_pread(&req, fd, got, SIZE, 0);
	req.user_data = &req;
	rc = fsaio_submit(ctx, &rp, 1);
	if (rc != 1)
		return fail("fsaio_submit", rc);
	rc = fsaio_getevents(ctx, 1, 1, &ev, NULL);
	if (rc != 1)
		return fail("fsaio_getevents", rc);
	if (ev.req != &req || ev.user_data != &req) {
		fprintf(stderr, "consumer: event for another request: req %p, event req %p user_data %p res %lld res2 %lld\n",
			(void *)&req, (void *)ev.req, ev.user_data, (long long)ev.res, (long long)ev.res2);
		return 1;
	}
	if (ev.res != SIZE)
		return fail("short or failed read", (long)ev.res);
	if (memcmp(want, got, SIZE) != 0)
		return fail("data differs", 0);
	rc = fsaio_ctx_destroy(ctx);
	if (rc != 0)
		return fail("fsaio_ctx_destroy", rc);
	close(fd);
	unlink(path);
	printf("consumer: libfsaio %s ok\n", fsaio_version());
	return 0;
}
