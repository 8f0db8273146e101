/* SPDX-License-Identifier: MIT */
/*
 * Method "fsaio": libfsaio's native API on the buffered file. One context
 * per run, queue depth = the run's depth, pool size from --workers (0 keeps
 * the engine's default). The engine's counters are reported with the run.
 * The --fadvise advice goes to the engine as well as to the kernel.
 *
 * Two variants, run only when named (the streams preset runs both):
 * "fsaio-direct" on O_DIRECT fds (the engine's io_uring path), and
 * "fsaio-nora" with FSAIO_CTX_NO_READAHEAD (no stream detector). And
 * "fsaio-pool", part of "all": the engine with FSAIO_BACKEND_THREADS, its
 * worker pool carrying every miss (where io_uring is refused), so its
 * figures sit beside threads, posix-aio and the io_uring methods.
 */
#include "bench.h"

#include <errno.h>
#include <fsaio.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

struct st {
	fsaio_ctx_t *ctx;
	struct fsaio_req *reqs;         /* by slot idx */
	struct fsaio_req **ptrs;
	struct fsaio_event *ev;
	struct bench_fds files;
};

static void f_teardown(void *state)
{
	struct st *s = state;
	if (s->ctx)
		fsaio_ctx_destroy(s->ctx);
	bench_fds_close(&s->files);
	free(s->reqs);
	free(s->ptrs);
	free(s->ev);
	free(s);
}

/* job->arg: the variant's struct fsaio_params (flags, miss_backend), or NULL. */
static int f_setup(const struct bench_job *job, void **out)
{
	struct st *s = calloc(1, sizeof(*s));
	struct fsaio_params p = { 0 };
	if (!s)
		return -ENOMEM;
	if (job->arg)
		p = *(const struct fsaio_params *)job->arg;
	p.queue_depth = job->depth;
	p.workers = job->workers;
	s->reqs = calloc(job->depth, sizeof(*s->reqs));
	s->ptrs = calloc(job->depth, sizeof(*s->ptrs));
	s->ev = calloc(job->depth, sizeof(*s->ev));
	int e = s->reqs && s->ptrs && s->ev ? bench_fds_open(&s->files, job) : -ENOMEM;
	if (!e)
		e = fsaio_ctx_create(&p, &s->ctx);
	/* The advice every buffered method's fds get (bench_fds_open gave it
	 * to the kernel already), told to the engine too so its own readahead
	 * follows the same rule. */
	for (unsigned i = 0; !e && !job->direct && job->fadvise >= 0 && i < s->files.n; i++)
		e = fsaio_fadvise(s->ctx, s->files.fd[i], job->fadvise);
	return bench_setup_end(e, s, f_teardown, out);
}

static int f_submit(void *state, struct bench_slot **v, unsigned n)
{
	struct st *s = state;
	for (unsigned i = 0; i < n; i++) {
		struct bench_slot *sl = v[i];
		struct fsaio_req *r = &s->reqs[sl->idx];
		if (sl->op == BOP_READ)
			fsaio_prep_pread(r, s->files.fd[sl->file], sl->buf, sl->len, (int64_t)sl->off);
		else
			fsaio_prep_pwrite(r, s->files.fd[sl->file], sl->buf, sl->len, (int64_t)sl->off);
		r->user_data = sl;
		s->ptrs[i] = r;
	}
	return fsaio_submit(s->ctx, s->ptrs, n);
}

static int f_reap(void *state, unsigned min, unsigned max, struct bench_slot **done)
{
	struct st *s = state;
	const struct timespec poll = { 0, 0 };
	int r;
	do
		r = fsaio_getevents(s->ctx, min, max, s->ev, min ? NULL : &poll);
	while (r == -EINTR);
	for (int i = 0; i < r; i++) {
		struct bench_slot *sl = s->ev[i].user_data;
		sl->res = s->ev[i].res;
		done[i] = sl;
	}
	return r;
}

static void f_stats(void *state, struct bench_engine_stats *out)
{
	struct st *s = state;
	struct fsaio_stats st;
	if (fsaio_get_stats(s->ctx, &st) != 0) {
		out->valid = false;
		return;
	}
	*out = (struct bench_engine_stats){
		.valid = true,
		.requests = st.requests,
		.completed_inline = st.completed_inline,
		.partial_inline = st.partial_inline,
		.queued = st.queued,
		.retries = st.retries,
		.probe_calls = st.probe_calls,
		.probe_cold = st.probe_cold,
		.bytes_inline = st.bytes_inline,
		.bytes_worker = st.bytes_worker,
		.readahead_calls = st.readahead_calls,
		.prefetched_bytes = st.prefetched_bytes,
		.stream_hits = st.stream_hits,
		.uring_submissions = st.uring_submissions,
		.bytes_uring = st.bytes_uring,
	};
}

/* The engine's context; the variants' flags and miss_backend come in job->arg. */
const struct bench_path bench_path_fsaio = {
	.setup = f_setup,
	.submit = f_submit, .reap = f_reap, .engine_stats = f_stats, .teardown = f_teardown,
};
