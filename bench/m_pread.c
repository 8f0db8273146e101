/* SPDX-License-Identifier: MIT */
/*
 * Method "pread": one thread, synchronous pread(2)/pwrite(2) on the buffered
 * file. The request runs inside submit, so the driver runs it at depth 1:
 * the reference for what a cache hit costs with no machinery at all.
 */
#include "bench.h"

#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

struct st {
	struct bench_fds files;
	unsigned ndone;
	struct bench_slot *done[];      /* complete, not reaped: everything submitted */
};

static void p_teardown(void *state)
{
	struct st *s = state;
	bench_fds_close(&s->files);
	free(s);
}

static int p_setup(const struct bench_job *job, void **out)
{
	struct st *s = calloc(1, sizeof(*s) + job->depth * sizeof(s->done[0]));
	if (!s)
		return -ENOMEM;
	return bench_setup_end(bench_fds_open(&s->files, job), s, p_teardown, out);
}

void bench_slot_pio(int fd, struct bench_slot *sl)
{
	ssize_t r;
	do {
		r = sl->op == BOP_READ ? pread(fd, sl->buf, sl->len, (off_t)sl->off)
				       : pwrite(fd, sl->buf, sl->len, (off_t)sl->off);
	} while (r < 0 && errno == EINTR);
	sl->res = r < 0 ? -(int64_t)errno : r;
}

static int p_submit(void *state, struct bench_slot **v, unsigned n)
{
	struct st *s = state;
	for (unsigned i = 0; i < n; i++) {
		bench_slot_pio(s->files.fd[v[i]->file], v[i]);
		s->done[s->ndone++] = v[i];
	}
	return (int)n;
}

static int p_reap(void *state, unsigned min, unsigned max, struct bench_slot **done)
{
	struct st *s = state;
	unsigned k = s->ndone < max ? s->ndone : max;
	(void)min;   /* everything submitted is already complete */
	for (unsigned i = 0; i < k; i++)
		done[i] = s->done[i];
	for (unsigned i = k; i < s->ndone; i++)
		s->done[i - k] = s->done[i];
	s->ndone -= k;
	return (int)k;
}

const struct bench_path bench_path_pread = {
	.setup = p_setup,
	.submit = p_submit, .reap = p_reap, .teardown = p_teardown,
};
