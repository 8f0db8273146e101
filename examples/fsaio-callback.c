/* SPDX-License-Identifier: MIT */
/*
 * fsaio-callback: count the bytes of files with completion callbacks
 * instead of fsaio_getevents().
 *
 *   fsaio-callback FILE...
 *
 * With fsaio_params.complete set, every event is handed to the callback
 * the moment its request completes, and nothing is queued for
 * fsaio_getevents(). The callback runs on whichever thread completed the
 * request: the submitting thread itself for a cache hit (inside
 * fsaio_submit), or one of the engine's threads. So it must be quick, must
 * not block, must not call into the context, and must treat what it shares
 * with the main thread as shared between threads: here, C11 atomics and a
 * semaphore.
 *
 * The main thread only submits: a semaphore counts the free slots, the
 * callback gives its slot back and posts it.
 */
#include <errno.h>
#include <fcntl.h>
#include <fsaio.h>
#include <sched.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define DEPTH 8
#define CHUNK (64 * 1024)

/* Per-file totals, added to by callbacks on any thread (atomics). */
struct file {
	const char *name;
	atomic_uint_least64_t bytes, reads;
	atomic_int err;         /* first error, as a positive errno */
};

/* A read: its request and buffer. busy is 1 from submit until its callback
 * gives it back (release), and read by the main thread (acquire) before
 * the slot is used again. */
struct slot {
	struct fsaio_req req;
	struct file *file;
	atomic_int busy;
	char buf[CHUNK];
};

/* Shared by the callback and main: counts slots not busy. */
static sem_t free_slots;

/* The completion callback: account the result, give the slot back. */
static void on_complete(void *arg, const struct fsaio_event *ev)
{
	struct slot *s = ev->user_data;
	struct file *f = s->file;

	(void)arg;
	if (ev->res < 0) {
		int none = 0;

		atomic_compare_exchange_strong(&f->err, &none, (int)-ev->res);
	} else {
		atomic_fetch_add_explicit(&f->bytes, (uint64_t)ev->res, memory_order_relaxed);
	}
	atomic_fetch_add_explicit(&f->reads, 1, memory_order_relaxed);
	/* From here the request and buffer are main's again. */
	atomic_store_explicit(&s->busy, 0, memory_order_release);
	sem_post(&free_slots);
}

/* Wait for a slot no read is using. */
static struct slot *get_slot(struct slot *slots)
{
	while (sem_wait(&free_slots) < 0 && errno == EINTR)
		;
	for (int i = 0; i < DEPTH; i++)
		if (!atomic_load_explicit(&slots[i].busy, memory_order_acquire)) {
			atomic_store_explicit(&slots[i].busy, 1, memory_order_relaxed);
			return &slots[i];
		}
	abort();        /* the semaphore counts free slots: one is there */
}

int main(int argc, char **argv)
{
	struct fsaio_params params = {
		.queue_depth = 2 * DEPTH,  /* room for callbacks still returning */
		.complete = on_complete,   /* events go here, not to getevents */
	};
	uint64_t total = 0;
	struct file *files;
	struct slot *slots;
	fsaio_ctx_t *ctx;
	int ret, failed = 0;

	if (argc < 2) {
		fprintf(stderr, "usage: fsaio-callback FILE...\n");
		return 2;
	}
	files = calloc((size_t)argc - 1, sizeof(*files));
	slots = calloc(DEPTH, sizeof(*slots));
	if (!files || !slots || sem_init(&free_slots, 0, DEPTH) < 0) {
		fprintf(stderr, "fsaio-callback: %s\n", strerror(ENOMEM));
		return 1;
	}
	ret = fsaio_ctx_create(&params, &ctx);
	if (ret < 0) {
		fprintf(stderr, "fsaio-callback: fsaio_ctx_create: %s\n", strerror(-ret));
		return 1;
	}

	for (int i = 0; i < argc - 1; i++) {
		struct file *f = &files[i];
		int fd = open(argv[i + 1], O_RDONLY | O_CLOEXEC);
		struct stat st;

		f->name = argv[i + 1];
		if (fd < 0 || fstat(fd, &st) < 0) {
			atomic_store(&f->err, errno);
			if (fd >= 0)
				close(fd);
			continue;
		}
		/* One read per chunk; the fd must stay open while they are in
		 * flight, so it is closed once every slot is back (below). */
		for (int64_t off = 0; off < st.st_size; off += CHUNK) {
			struct slot *s = get_slot(slots);
			struct fsaio_req *r = &s->req;

			fsaio_prep_pread(r, fd, s->buf, CHUNK, off);
			r->user_data = s;
			s->file = f;
			/* A request counts against queue_depth until its
			 * callback has returned, a moment after the slot came
			 * back: -EAGAIN then only means "try again". */
			while ((ret = fsaio_submit(ctx, &r, 1)) == -EAGAIN)
				sched_yield();
			if (ret < 0) {
				/* Refused: no callback will come for it. */
				atomic_store(&f->err, -ret);
				atomic_store_explicit(&s->busy, 0, memory_order_release);
				sem_post(&free_slots);
				break;
			}
		}
		/* Wait for this file's reads (all slots free), then close it. */
		for (int n = 0; n < DEPTH; n++)
			while (sem_wait(&free_slots) < 0 && errno == EINTR)
				;
		for (int n = 0; n < DEPTH; n++)
			sem_post(&free_slots);
		close(fd);
	}

	/* Every callback has run: the totals are final. */
	for (int i = 0; i < argc - 1; i++) {
		struct file *f = &files[i];
		int err = atomic_load(&f->err);

		if (err) {
			fprintf(stderr, "fsaio-callback: %s: %s\n", f->name, strerror(err));
			failed = 1;
			continue;
		}
		printf("%s: %llu bytes in %llu reads\n", f->name,
		       (unsigned long long)atomic_load(&f->bytes),
		       (unsigned long long)atomic_load(&f->reads));
		total += atomic_load(&f->bytes);
	}
	printf("total: %llu bytes\n", (unsigned long long)total);
	fsaio_ctx_destroy(ctx);
	sem_destroy(&free_slots);
	free(files);
	free(slots);
	return failed;
}
