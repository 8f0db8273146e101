/* SPDX-License-Identifier: MIT */
/*
 * Method "posix-aio": glibc's POSIX AIO, plain use: lio_listio(LIO_NOWAIT)
 * for a batch, aio_suspend + aio_error/aio_return to reap, glibc's default
 * thread settings. glibc runs the requests of one fd one at a time on one of
 * its helper threads, which is the behaviour being measured: a cached
 * request waits behind the cold ones queued before it. The driver is shared
 * (bench_pa_*): "fsaio-posix" runs it on the drop-in's functions.
 */
#include "bench.h"

#include <aio.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct st {
	const struct bench_pa_api *api;
	unsigned depth, ninflight;
	struct aiocb *cbs;              /* by slot idx */
	struct bench_slot **slot;       /* by slot idx */
	bool *busy;                     /* by slot idx: handed to glibc, not reaped */
	struct aiocb **list;            /* a submit batch */
	const struct aiocb **inflight;  /* compact, for aio_suspend */
	struct bench_fds files;
};

static const struct bench_pa_api glibc_api = {
	.lio_listio = lio_listio,
	.error = aio_error,
	.ret = aio_return,
	.suspend = aio_suspend,
};

int bench_pa_setup(const struct bench_job *job, const struct bench_pa_api *api, void **out)
{
	struct st *s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->api = api;
	s->depth = job->depth;
	s->cbs = calloc(job->depth, sizeof(*s->cbs));
	s->slot = calloc(job->depth, sizeof(*s->slot));
	s->busy = calloc(job->depth, sizeof(*s->busy));
	s->list = calloc(job->depth, sizeof(*s->list));
	s->inflight = calloc(job->depth, sizeof(*s->inflight));
	int e = s->cbs && s->slot && s->busy && s->list && s->inflight ?
		bench_fds_open(&s->files, job) : -ENOMEM;
	return bench_setup_end(e, s, bench_pa_teardown, out);
}

static int pa_setup(const struct bench_job *job, void **out)
{
	return bench_pa_setup(job, &glibc_api, out);
}

/* Slot sl's control block, filled in for its request and marked busy. */
static struct aiocb *prep_aiocb(struct st *s, struct bench_slot *sl)
{
	struct aiocb *cb = &s->cbs[sl->idx];
	memset(cb, 0, sizeof(*cb));
	cb->aio_fildes = s->files.fd[sl->file];
	cb->aio_buf = sl->buf;
	cb->aio_nbytes = sl->len;
	cb->aio_offset = (off_t)sl->off;
	cb->aio_lio_opcode = sl->op == BOP_READ ? LIO_READ : LIO_WRITE;
	cb->aio_sigevent.sigev_notify = SIGEV_NONE;
	s->slot[sl->idx] = sl;
	s->busy[sl->idx] = true;
	return cb;
}

int bench_pa_submit(void *state, struct bench_slot **v, unsigned n)
{
	struct st *s = state;
	for (unsigned i = 0; i < n; i++)
		s->list[i] = prep_aiocb(s, v[i]);
	if (s->api->lio_listio(LIO_NOWAIT, s->list, (int)n, NULL) != 0) {
		/* Which ones glibc took is not reported reliably: fail the run;
		 * teardown waits for whatever it did take. */
		return -errno;
	}
	for (unsigned i = 0; i < n; i++)
		s->inflight[s->ninflight++] = s->list[i];
	return (int)n;
}

int bench_pa_reap(void *state, unsigned min, unsigned max, struct bench_slot **done)
{
	struct st *s = state;
	unsigned got = 0;
	for (;;) {
		for (unsigned i = 0; i < s->ninflight && got < max;) {
			struct aiocb *cb = (struct aiocb *)s->inflight[i];
			int e = s->api->error(cb);
			if (e == EINPROGRESS) {
				i++;
				continue;
			}
			unsigned idx = (unsigned)(cb - s->cbs);
			ssize_t r = s->api->ret(cb);
			struct bench_slot *sl = s->slot[idx];
			sl->res = e ? -(int64_t)e : r;
			s->busy[idx] = false;
			done[got++] = sl;
			s->inflight[i] = s->inflight[--s->ninflight];
		}
		if (got >= min || !s->ninflight)
			return (int)got;
		if (s->api->suspend(s->inflight, (int)s->ninflight, NULL) != 0 && errno != EINTR &&
		    errno != EAGAIN)
			return -errno;
	}
}

void bench_pa_teardown(void *state)
{
	struct st *s = state;
	/* Never close an fd or free a control block glibc still works on. */
	for (unsigned i = 0; s->busy && i < s->depth; i++) {
		if (!s->busy[i])
			continue;
		const struct aiocb *one[1] = { &s->cbs[i] };
		while (s->api->error(&s->cbs[i]) == EINPROGRESS)
			s->api->suspend(one, 1, NULL);
		s->api->ret(&s->cbs[i]);
	}
	bench_fds_close(&s->files);
	free(s->cbs); free(s->slot); free(s->busy); free(s->list); free(s->inflight);
	free(s);
}

const struct bench_path bench_path_posix_aio = {
	.setup = pa_setup,
	.submit = bench_pa_submit, .reap = bench_pa_reap, .teardown = bench_pa_teardown,
};
