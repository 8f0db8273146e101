/* SPDX-License-Identifier: MIT */
/*
 * fsaio-cat: concatenate files to stdout, reading ahead asynchronously.
 *
 * Keeps up to DEPTH chunk reads in flight across all the files named and
 * writes the chunks out strictly in order. Cached chunks complete inside
 * fsaio_submit(); the others are read by the worker pool while earlier
 * chunks are being written.
 *
 *   fsaio-cat FILE...
 */
#include <errno.h>
#include <fcntl.h>
#include <fsaio.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define DEPTH 16
#define CHUNK (128 * 1024)

struct slot {
	struct fsaio_req req;
	char *buf;
	int64_t res;
	int done;
};

struct cursor {
	char **files;
	int nfiles, cur, fd;
	int64_t off;
};

/* Open the next file if needed and prepare a read of its next chunk.
 * Returns 0 when there is nothing left to read, 1 when s is prepared. */
static int next_chunk(struct cursor *c, struct slot *s)
{
	while (c->fd < 0) {
		if (c->cur == c->nfiles)
			return 0;
		c->fd = open(c->files[c->cur], O_RDONLY | O_CLOEXEC);
		if (c->fd < 0) {
			fprintf(stderr, "fsaio-cat: %s: %s\n", c->files[c->cur], strerror(errno));
			exit(1);
		}
		c->off = 0;
	}
	fsaio_prep_pread(&s->req, c->fd, s->buf, CHUNK, c->off);
	s->req.user_data = s;
	s->done = 0;
	c->off += CHUNK;
	return 1;
}

static void write_all(const char *p, size_t n)
{
	while (n) {
		ssize_t w = write(STDOUT_FILENO, p, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0) {
			perror("fsaio-cat: write");
			exit(1);
		}
		p += w;
		n -= (size_t)w;
	}
}

static void reap(fsaio_ctx_t *ctx, struct fsaio_event *ev)
{
	int n = fsaio_getevents(ctx, 1, DEPTH, ev, NULL);

	if (n < 0 && n != -EINTR) {
		fprintf(stderr, "fsaio-cat: getevents: %s\n", strerror(-n));
		exit(1);
	}
	for (int i = 0; i < n; i++) {
		struct slot *s = ev[i].user_data;

		s->res = ev[i].res;
		s->done = 1;
	}
}

int main(int argc, char **argv)
{
	struct cursor c = { .files = argv + 1, .nfiles = argc - 1, .fd = -1 };
	struct slot slots[DEPTH];
	struct fsaio_event ev[DEPTH];
	fsaio_ctx_t *ctx;
	unsigned head = 0, inflight = 0;
	int ret;

	if (argc < 2) {
		fprintf(stderr, "usage: fsaio-cat FILE...\n");
		return 2;
	}
	ret = fsaio_ctx_create(&(struct fsaio_params){ .queue_depth = DEPTH, .workers = 8 }, &ctx);
	if (ret < 0) {
		fprintf(stderr, "fsaio-cat: fsaio_ctx_create: %s\n", strerror(-ret));
		return 1;
	}
	for (unsigned i = 0; i < DEPTH; i++)
		slots[i].buf = malloc(CHUNK);

	/* Fill the window; every slot in [head, head+inflight) is in flight or
	 * done and not yet written. Chunks of one file are in file order. */
	for (;;) {
		while (inflight < DEPTH) {
			struct slot *s = &slots[(head + inflight) % DEPTH];
			struct fsaio_req *r = &s->req;

			if (!next_chunk(&c, s))
				break;
			ret = fsaio_submit(ctx, &r, 1);
			if (ret != 1) {
				fprintf(stderr, "fsaio-cat: submit: %s\n", strerror(-ret));
				return 1;
			}
			inflight++;
		}
		if (!inflight)
			break;
		while (!slots[head].done)
			reap(ctx, ev);
		/* Every chunk in flight belongs to the current file, in order; a
		 * short one is its end, so the reads queued beyond it are past
		 * EOF: wait for them, then move on to the next file. */
		while (inflight && slots[head].done) {
			struct slot *s = &slots[head];
			bool eof = s->res < CHUNK;

			if (s->res < 0) {
				fprintf(stderr, "fsaio-cat: read: %s\n", strerror((int)-s->res));
				return 1;
			}
			write_all(s->buf, (size_t)s->res);
			head = (head + 1) % DEPTH;
			inflight--;
			if (!eof)
				continue;
			for (; inflight; inflight--, head = (head + 1) % DEPTH)
				while (!slots[head].done)
					reap(ctx, ev);
			close(c.fd);
			c.fd = -1;
			c.cur++;
		}
	}
	fsaio_ctx_destroy(ctx);
	for (unsigned i = 0; i < DEPTH; i++)
		free(slots[i].buf);
	return 0;
}
