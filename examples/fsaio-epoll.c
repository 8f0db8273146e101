/* SPDX-License-Identifier: MIT */
/*
 * fsaio-epoll: count the bytes and lines of files, as `wc -c -l` does,
 * with the reads driven by an epoll event loop.
 *
 *   fsaio-epoll FILE...
 *
 * fsaio_event_fd() gives an eventfd that is readable exactly while the
 * context has events waiting to be reaped. Put in an epoll set, it lets one
 * loop wait for file I/O completions together with sockets, timers or
 * anything else epoll watches; here it is the only fd in the set, to keep
 * the example short.
 *
 * Chunk reads of all the files are kept in flight at once (up to DEPTH);
 * their completions arrive in any order, which is fine for counting.
 */
#include <errno.h>
#include <fcntl.h>
#include <fsaio.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/stat.h>
#include <unistd.h>

#define DEPTH 8
#define CHUNK (64 * 1024)

struct file {
	const char *name;
	int fd;
	int64_t size, next;     /* size at open; offset of the next chunk to read */
	uint64_t bytes, lines;  /* counted so far */
	int err;                /* first error, as a positive errno */
};

/* A read in flight: its request, buffer, and the file it reads. */
struct slot {
	struct fsaio_req req;
	struct file *file;
	char buf[CHUNK];
};

/* Count what a completed read returned into its file's totals. */
static void account(struct slot *s, const struct fsaio_event *ev)
{
	struct file *f = s->file;

	if (ev->res < 0) {
		if (!f->err)
			f->err = (int)-ev->res;
		return;
	}
	if ((uint64_t)ev->res != s->req.len && !f->err)
		f->err = EIO;   /* the file shrank while it was read */
	f->bytes += (uint64_t)ev->res;
	for (const char *p = s->buf; (p = memchr(p, '\n', (size_t)(s->buf + ev->res - p))); p++)
		f->lines++;
}

/* Find the next file with a chunk left to read, from *cur on. */
static struct file *next_file(struct file *files, int nfiles, int *cur)
{
	for (; *cur < nfiles; ++*cur)
		if (files[*cur].fd >= 0 && files[*cur].next < files[*cur].size)
			return &files[*cur];
	return NULL;
}

int main(int argc, char **argv)
{
	int nfiles = argc - 1, cur = 0, failed = 0, ret, ep, efd;
	struct file *files;
	struct slot *slots;
	struct slot *free_slots[DEPTH];
	unsigned nfree = DEPTH, inflight = 0;
	fsaio_ctx_t *ctx;

	if (argc < 2) {
		fprintf(stderr, "usage: fsaio-epoll FILE...\n");
		return 2;
	}
	files = calloc((size_t)nfiles, sizeof(*files));
	slots = calloc(DEPTH, sizeof(*slots));
	if (!files || !slots) {
		fprintf(stderr, "fsaio-epoll: %s\n", strerror(ENOMEM));
		return 1;
	}
	for (unsigned i = 0; i < DEPTH; i++)
		free_slots[i] = &slots[i];

	for (int i = 0; i < nfiles; i++) {
		struct stat st;

		files[i].name = argv[i + 1];
		files[i].fd = open(files[i].name, O_RDONLY | O_CLOEXEC);
		if (files[i].fd < 0 || fstat(files[i].fd, &st) < 0)
			files[i].err = errno;
		else
			files[i].size = st.st_size;
	}

	ret = fsaio_ctx_create(&(struct fsaio_params){ .queue_depth = DEPTH }, &ctx);
	if (ret < 0) {
		fprintf(stderr, "fsaio-epoll: fsaio_ctx_create: %s\n", strerror(-ret));
		return 1;
	}

	/* The context's eventfd goes into the epoll set like any other fd. */
	efd = fsaio_event_fd(ctx);
	ep = epoll_create1(EPOLL_CLOEXEC);
	if (efd < 0 || ep < 0 ||
	    epoll_ctl(ep, EPOLL_CTL_ADD, efd, &(struct epoll_event){ .events = EPOLLIN }) < 0) {
		fprintf(stderr, "fsaio-epoll: cannot watch the event fd\n");
		return 1;
	}

	for (;;) {
		struct fsaio_event ev[DEPTH];
		struct epoll_event ready;
		struct file *f;
		int n;

		/* Submit a read for every free slot while chunks are left. */
		while (nfree && (f = next_file(files, nfiles, &cur))) {
			struct slot *s = free_slots[--nfree];
			struct fsaio_req *r = &s->req;
			int64_t len = f->size - f->next < CHUNK ? f->size - f->next : CHUNK;

			fsaio_prep_pread(r, f->fd, s->buf, (size_t)len, f->next);
			r->user_data = s;
			s->file = f;
			ret = fsaio_submit(ctx, &r, 1);
			if (ret < 0) {
				f->err = -ret;
				f->next = f->size;      /* read no more of it */
				free_slots[nfree++] = s;
				continue;
			}
			f->next += len;
			inflight++;
		}
		if (!inflight)
			break;

		/* Sleep until the event fd is readable: completions are waiting.
		 * (A cache hit may have completed inside fsaio_submit already;
		 * then the fd is readable at once.) */
		n = epoll_wait(ep, &ready, 1, -1);
		if (n < 0 && errno != EINTR) {
			perror("fsaio-epoll: epoll_wait");
			return 1;
		}
		if (n <= 0)
			continue;

		/* Reap without waiting ({0,0}): the fd said events are there. */
		n = fsaio_getevents(ctx, 0, DEPTH, ev, &(struct timespec){ 0, 0 });
		if (n < 0 && n != -EINTR) {
			fprintf(stderr, "fsaio-epoll: fsaio_getevents: %s\n", strerror(-n));
			return 1;
		}
		for (int i = 0; i < n; i++) {
			struct slot *s = ev[i].user_data;

			account(s, &ev[i]);
			free_slots[nfree++] = s;
			inflight--;
		}
	}

	for (int i = 0; i < nfiles; i++) {
		struct file *f = &files[i];

		if (f->err) {
			fprintf(stderr, "fsaio-epoll: %s: %s\n", f->name, strerror(f->err));
			failed = 1;
		} else {
			printf("%s: %llu bytes, %llu lines\n", f->name,
			       (unsigned long long)f->bytes, (unsigned long long)f->lines);
		}
		if (f->fd >= 0)
			close(f->fd);
	}
	close(ep);
	fsaio_ctx_destroy(ctx);   /* also closes the event fd */
	free(files);
	free(slots);
	return failed;
}
