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
	unsigned nfiles;
	unsigned ndone;
	struct bench_slot **done;
	int fds[];
};

static int p_probe(const struct bench_job *job, char *why, size_t n)
{
	(void)job; (void)why; (void)n;
	return 0;
}

static int p_setup(const struct bench_job *job, void **out)
{
	struct st *s = calloc(1, sizeof(*s) + job->nfiles * sizeof(int));
	if (!s)
		return -ENOMEM;
	s->nfiles = job->nfiles;
	s->done = calloc(job->depth, sizeof(*s->done));
	int e = s->done ? bench_open_files(job, false, s->fds) : -ENOMEM;
	if (e) {
		free(s->done);
		free(s);
		return e;
	}
	*out = s;
	return 0;
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
		bench_slot_pio(s->fds[v[i]->file], v[i]);
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

static void p_teardown(void *state)
{
	struct st *s = state;
	bench_close_files(&(struct bench_job){ .nfiles = s->nfiles }, s->fds);
	free(s->done);
	free(s);
}

const struct bench_method bench_m_pread = {
	.name = "pread",
	.what = "one thread, synchronous pread/pwrite on the buffered file (depth 1)",
	.sync = true,
	.probe = p_probe,
	.setup = p_setup,
	.submit = p_submit,
	.reap = p_reap,
	.teardown = p_teardown,
};
