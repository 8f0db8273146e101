/* SPDX-License-Identifier: MIT */
/*
 * libaio-read: write a file to standard output, read with libaio.
 *
 *   libaio-read FILE
 *
 * A plain libaio program: it includes <libaio.h>, links with -laio and
 * knows nothing of libfsaio. On the kernel's AIO, io_submit() on a buffered
 * file does each read before it returns; run with libfsaio's drop-in
 *
 *   fsaio-run libaio-read FILE
 *
 * the same calls are served by the libfsaio engine: cached chunks complete
 * inside io_submit, the rest are read by its workers. The output is the
 * same either way.
 *
 * It works in rounds: one io_submit() of up to DEPTH chunk reads, an
 * io_getevents() that waits for all of them (they complete in any order),
 * then the chunks are written out in file order.
 */
#include <errno.h>
#include <fcntl.h>
#include <libaio.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define DEPTH 16
#define CHUNK (64 * 1024)

/* Write n bytes to standard output through stdio; exit 1 on an error. */
static void put(const char *p, size_t n)
{
	if (fwrite(p, 1, n, stdout) != n || fflush(stdout) != 0) {
		fprintf(stderr, "libaio-read: write error: %s\n", strerror(errno));
		exit(1);
	}
}

int main(int argc, char **argv)
{
	static char bufs[DEPTH][CHUNK];
	struct iocb iocbs[DEPTH], *list[DEPTH];
	struct io_event events[DEPTH];
	io_context_t ctx = 0;   /* io_setup wants it zeroed */
	struct stat st;
	int fd, ret;

	if (argc != 2) {
		fprintf(stderr, "usage: libaio-read FILE\n");
		return 2;
	}
	fd = open(argv[1], O_RDONLY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st) < 0) {
		fprintf(stderr, "libaio-read: %s: %s\n", argv[1], strerror(errno));
		return 1;
	}
	/* libaio returns -errno rather than setting errno. */
	ret = io_setup(DEPTH, &ctx);
	if (ret < 0) {
		fprintf(stderr, "libaio-read: io_setup: %s\n", strerror(-ret));
		return 1;
	}

	for (off_t off = 0; off < st.st_size;) {
		int n = 0, got = 0;

		/* Prepare a round: chunk i reads into bufs[i]. */
		for (; n < DEPTH && off + (off_t)n * CHUNK < st.st_size; n++) {
			io_prep_pread(&iocbs[n], fd, bufs[n], CHUNK, off + (off_t)n * CHUNK);
			list[n] = &iocbs[n];
		}
		ret = io_submit(ctx, n, list);
		if (ret != n) {
			fprintf(stderr, "libaio-read: io_submit: %s\n",
				ret < 0 ? strerror(-ret) : "not all requests accepted");
			return 1;
		}
		/* Reap all n; events name their iocb, in completion order. */
		while (got < n) {
			ret = io_getevents(ctx, n - got, n - got, events, NULL);
			if (ret == -EINTR)
				continue;
			if (ret < 0) {
				fprintf(stderr, "libaio-read: io_getevents: %s\n", strerror(-ret));
				return 1;
			}
			for (int i = 0; i < ret; i++) {
				struct iocb *cb = events[i].obj;
				long res = (long)events[i].res;
				off_t want = st.st_size - cb->u.c.offset < CHUNK ?
					     st.st_size - cb->u.c.offset : CHUNK;

				if (res < 0) {
					fprintf(stderr, "libaio-read: %s: %s\n", argv[1], strerror((int)-res));
					return 1;
				}
				if (res != want) {
					fprintf(stderr, "libaio-read: %s: changed while read\n", argv[1]);
					return 1;
				}
			}
			got += ret;
		}
		/* All of the round is read: write it out in file order. */
		for (int i = 0; i < n; i++) {
			off_t len = st.st_size - iocbs[i].u.c.offset < CHUNK ?
				    st.st_size - iocbs[i].u.c.offset : CHUNK;

			put(bufs[i], (size_t)len);
		}
		off += (off_t)n * CHUNK;
	}
	io_destroy(ctx);
	close(fd);
	return 0;
}
