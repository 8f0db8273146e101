/* SPDX-License-Identifier: MIT */
/*
 * fsaio-libuv: count the bytes and lines of files, as `wc -c -l` does,
 * with the reads driven by a libuv event loop.
 *
 *   fsaio-libuv FILE...
 *
 * fsaio_event_fd() gives an eventfd that is readable exactly while the
 * context has events waiting to be reaped. A uv_poll_t watching it for
 * UV_READABLE lets a libuv program take file I/O completions in the same
 * loop as its sockets, timers and child processes: the poll callback reaps
 * what is there with a zero timeout, then submits the next reads. libuv's
 * own file operations would run each read on its thread pool; here a
 * cached chunk is read inside fsaio_submit and only misses wait.
 *
 * Chunk reads of all the files are kept in flight at once (up to DEPTH);
 * their completions arrive in any order, which is fine for counting. When
 * none is left in flight the poll handle is closed, and uv_run returns
 * once the loop has nothing more to do.
 */
#include <errno.h>
#include <fcntl.h>
#include <fsaio.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <uv.h>

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

/* Everything the loop's callback works on, reached from the poll handle. */
struct counter {
	uv_poll_t poll;         /* watches the context's eventfd */
	fsaio_ctx_t *ctx;
	struct file *files;
	int nfiles, cur;        /* cur: the first file that may have chunks left */
	struct slot *slots;
	struct slot *free_slots[DEPTH];
	unsigned nfree, inflight;
	int failed;             /* a call on the context failed: exit 1 */
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

/* Find the next file with a chunk left to read, from c->cur on. */
static struct file *next_file(struct counter *c)
{
	for (; c->cur < c->nfiles; c->cur++)
		if (c->files[c->cur].fd >= 0 && c->files[c->cur].next < c->files[c->cur].size)
			return &c->files[c->cur];
	return NULL;
}

/* Submit a read for every free slot while chunks are left. A cached chunk
 * completes inside fsaio_submit: its event is queued at once, the eventfd
 * is readable, and the poll callback runs in the loop's next turn. */
static void fill(struct counter *c)
{
	struct file *f;

	while (c->nfree && (f = next_file(c))) {
		struct slot *s = c->free_slots[--c->nfree];
		struct fsaio_req *r = &s->req;
		int64_t len = f->size - f->next < CHUNK ? f->size - f->next : CHUNK;
		int ret;

		fsaio_prep_pread(r, f->fd, s->buf, (size_t)len, f->next);
		r->user_data = s;
		s->file = f;
		ret = fsaio_submit(c->ctx, &r, 1);
		if (ret < 0) {
			f->err = -ret;
			f->next = f->size;      /* read no more of it */
			c->free_slots[c->nfree++] = s;
			continue;
		}
		f->next += len;
		c->inflight++;
	}
}

/* The eventfd is readable: reap without waiting ({0,0}), count, refill. */
static void on_events(uv_poll_t *poll, int status, int events)
{
	struct counter *c = poll->data;
	struct fsaio_event ev[DEPTH];
	int n;

	(void)events;
	if (status < 0) {
		fprintf(stderr, "fsaio-libuv: poll: %s\n", uv_strerror(status));
		c->failed = 1;
		uv_close((uv_handle_t *)poll, NULL);
		return;
	}
	n = fsaio_getevents(c->ctx, 0, DEPTH, ev, &(struct timespec){ 0, 0 });
	if (n < 0 && n != -EINTR) {
		fprintf(stderr, "fsaio-libuv: fsaio_getevents: %s\n", strerror(-n));
		c->failed = 1;
		uv_close((uv_handle_t *)poll, NULL);
		return;
	}
	for (int i = 0; i < n; i++) {
		struct slot *s = ev[i].user_data;

		account(s, &ev[i]);
		c->free_slots[c->nfree++] = s;
		c->inflight--;
	}
	fill(c);
	if (!c->inflight)
		uv_close((uv_handle_t *)poll, NULL);   /* nothing more to wait for */
}

int main(int argc, char **argv)
{
	struct counter c = { .nfiles = argc - 1, .nfree = DEPTH };
	uv_loop_t *loop = uv_default_loop();
	int ret, efd;

	if (argc < 2) {
		fprintf(stderr, "usage: fsaio-libuv FILE...\n");
		return 2;
	}
	c.files = calloc((size_t)c.nfiles, sizeof(*c.files));
	c.slots = calloc(DEPTH, sizeof(*c.slots));
	if (!c.files || !c.slots) {
		fprintf(stderr, "fsaio-libuv: %s\n", strerror(ENOMEM));
		return 1;
	}
	for (unsigned i = 0; i < DEPTH; i++)
		c.free_slots[i] = &c.slots[i];

	for (int i = 0; i < c.nfiles; i++) {
		struct file *f = &c.files[i];
		struct stat st;

		f->name = argv[i + 1];
		f->fd = open(f->name, O_RDONLY | O_CLOEXEC);
		if (f->fd < 0 || fstat(f->fd, &st) < 0)
			f->err = errno;
		else
			f->size = st.st_size;
	}

	ret = fsaio_ctx_create(&(struct fsaio_params){ .queue_depth = DEPTH }, &c.ctx);
	if (ret < 0) {
		fprintf(stderr, "fsaio-libuv: fsaio_ctx_create: %s\n", strerror(-ret));
		return 1;
	}

	/* The context's eventfd, watched by the loop like any other fd. */
	efd = fsaio_event_fd(c.ctx);
	if (efd < 0 || uv_poll_init(loop, &c.poll, efd) < 0) {
		fprintf(stderr, "fsaio-libuv: cannot watch the event fd\n");
		return 1;
	}
	c.poll.data = &c;
	fill(&c);
	if (c.inflight)
		uv_poll_start(&c.poll, UV_READABLE, on_events);
	else
		uv_close((uv_handle_t *)&c.poll, NULL);
	uv_run(loop, UV_RUN_DEFAULT);

	for (int i = 0; i < c.nfiles; i++) {
		struct file *f = &c.files[i];

		if (f->err) {
			fprintf(stderr, "fsaio-libuv: %s: %s\n", f->name, strerror(f->err));
			c.failed = 1;
		} else {
			printf("%s: %llu bytes, %llu lines\n", f->name,
			       (unsigned long long)f->bytes, (unsigned long long)f->lines);
		}
		if (f->fd >= 0)
			close(f->fd);
	}
	uv_loop_close(loop);
	fsaio_ctx_destroy(c.ctx);   /* also closes the event fd, no longer polled */
	free(c.files);
	free(c.slots);
	return c.failed;
}
