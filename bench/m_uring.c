/* SPDX-License-Identifier: MIT */
/*
 * Methods "uring-buffered" and "uring-direct": io_uring through liburing,
 * plain use (no registered files or buffers, no SQPOLL), on the file opened
 * without and with O_DIRECT. Buffered reads that miss the cache are carried
 * by the kernel's async buffered path or its io-wq threads.
 */
#include "bench.h"

#include <errno.h>
#include <fcntl.h>
#include <liburing.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct st {
	struct io_uring ring;
	bool ring_up;                   /* ring initialised: exit it in teardown */
	struct bench_fds files;
	struct io_uring_cqe *cqes[];    /* one reap's batch, up to depth */
};

static void u_teardown(void *state)
{
	struct st *s = state;
	if (s->ring_up)
		io_uring_queue_exit(&s->ring);
	bench_fds_close(&s->files);
	free(s);
}

/* Both methods: job->direct tells them apart. */
static int u_setup(const struct bench_job *job, void **out)
{
	struct st *s = calloc(1, sizeof(*s) + job->depth * sizeof(s->cqes[0]));
	if (!s)
		return -ENOMEM;
	int e = bench_fds_open(&s->files, job);
	if (!e)
		e = io_uring_queue_init(job->depth, &s->ring, 0);
	s->ring_up = !e;
	return bench_setup_end(e, s, u_teardown, out);
}

static int u_submit(void *state, struct bench_slot **v, unsigned n)
{
	struct st *s = state;
	unsigned k;
	for (k = 0; k < n; k++) {
		struct io_uring_sqe *sqe = io_uring_get_sqe(&s->ring);
		struct bench_slot *sl = v[k];
		if (!sqe)
			break;
		if (sl->op == BOP_READ)
			io_uring_prep_read(sqe, s->files.fd[sl->file], sl->buf, sl->len, sl->off);
		else
			io_uring_prep_write(sqe, s->files.fd[sl->file], sl->buf, sl->len, sl->off);
		io_uring_sqe_set_data(sqe, sl);
	}
	if (!k)
		return -EAGAIN;
	int r = io_uring_submit(&s->ring);
	/* The kernel consumes every prepared entry unless the whole call fails:
	 * a bad entry comes back as a failed completion, not as a short count. */
	return r < 0 ? r : (int)k;
}

static int u_reap(void *state, unsigned min, unsigned max, struct bench_slot **done)
{
	struct st *s = state;
	struct io_uring_cqe *cqe;
	int r;
	if (min) {
		do
			r = io_uring_wait_cqe_nr(&s->ring, &cqe, min);
		while (r == -EINTR);
		if (r < 0)
			return r;
	}
	unsigned got = io_uring_peek_batch_cqe(&s->ring, s->cqes, max);
	for (unsigned i = 0; i < got; i++) {
		struct bench_slot *sl = io_uring_cqe_get_data(s->cqes[i]);
		sl->res = s->cqes[i]->res;
		done[i] = sl;
	}
	io_uring_cq_advance(&s->ring, got);
	return (int)got;
}

static int u_probe(const struct bench_job *job, char *why, size_t n)
{
	struct io_uring ring;
	int e = io_uring_queue_init(2, &ring, 0);
	(void)job;
	if (e) {
		snprintf(why, n, "io_uring_setup: %s", strerror(-e));
		return -1;
	}
	io_uring_queue_exit(&ring);
	return 0;
}

const struct bench_path bench_path_uring = {
	.probe = u_probe, .setup = u_setup,
	.submit = u_submit, .reap = u_reap, .teardown = u_teardown,
};
