/* SPDX-License-Identifier: MIT */
/*
 * Methods "kaio-buffered" and "kaio-direct": the kernel's native AIO
 * (io_submit/io_getevents) on the file opened without and with O_DIRECT.
 * Raw syscalls rather than libaio, so the binary never links libaio and the
 * libaio names stay free for the shim. On a buffered file io_submit does the
 * I/O synchronously inside the call: that is the behaviour libfsaio exists
 * to fix, and this is how it is measured. Also holds the iocb loop shared
 * with the shim (kaio.h).
 */
#include "kaio.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

struct st {
	const struct kaio_abi *abi;
	unsigned long ctx;
	unsigned nfiles, depth;
	struct iocb *iocbs;
	struct iocb **ptrs;
	struct io_event *ev;
	int fds[];
};

int bench_kaio_setup(const struct kaio_abi *abi, const struct bench_job *job, bool direct, void **out)
{
	struct st *s = calloc(1, sizeof(*s) + job->nfiles * sizeof(int));
	int e;
	if (!s)
		return -ENOMEM;
	s->abi = abi;
	s->nfiles = job->nfiles;
	s->depth = job->depth;
	s->iocbs = calloc(job->depth, sizeof(*s->iocbs));
	s->ptrs = calloc(job->depth, sizeof(*s->ptrs));
	s->ev = calloc(job->depth, sizeof(*s->ev));
	if (!s->iocbs || !s->ptrs || !s->ev) {
		e = -ENOMEM;
		goto fail;
	}
	e = bench_open_files(job, direct, s->fds);
	if (e)
		goto fail;
	e = abi->setup(job->depth, &s->ctx);
	if (e) {
		bench_close_files(&(struct bench_job){ .nfiles = s->nfiles }, s->fds);
		goto fail;
	}
	*out = s;
	return 0;
fail:
	free(s->iocbs);
	free(s->ptrs);
	free(s->ev);
	free(s);
	return e;
}

int bench_kaio_submit(void *state, struct bench_slot **v, unsigned n)
{
	struct st *s = state;
	for (unsigned i = 0; i < n; i++) {
		struct bench_slot *sl = v[i];
		struct iocb *cb = &s->iocbs[sl->idx];
		memset(cb, 0, sizeof(*cb));
		cb->aio_data = (uint64_t)(uintptr_t)sl;
		cb->aio_lio_opcode = sl->op == BOP_READ ? IOCB_CMD_PREAD : IOCB_CMD_PWRITE;
		cb->aio_fildes = (uint32_t)s->fds[sl->file];
		cb->aio_buf = (uint64_t)(uintptr_t)sl->buf;
		cb->aio_nbytes = sl->len;
		cb->aio_offset = (int64_t)sl->off;
		s->ptrs[i] = cb;
	}
	return s->abi->submit(s->ctx, (long)n, s->ptrs);
}

int bench_kaio_reap(void *state, unsigned min, unsigned max, struct bench_slot **done)
{
	struct st *s = state;
	struct timespec poll = { 0, 0 };
	int r;
	do
		r = s->abi->getevents(s->ctx, (long)min, (long)max, s->ev, min ? NULL : &poll);
	while (r == -EINTR);
	for (int i = 0; i < r; i++) {
		struct bench_slot *sl = (struct bench_slot *)(uintptr_t)s->ev[i].data;
		sl->res = s->ev[i].res;
		done[i] = sl;
	}
	return r;
}

void bench_kaio_teardown(void *state)
{
	struct st *s = state;
	s->abi->destroy(s->ctx);
	bench_close_files(&(struct bench_job){ .nfiles = s->nfiles }, s->fds);
	free(s->iocbs);
	free(s->ptrs);
	free(s->ev);
	free(s);
}

/* ---- the kernel's syscalls, as -errno ---- */

static int k_setup(unsigned nr, unsigned long *ctx)
{
	aio_context_t c = 0;
	if (syscall(SYS_io_setup, nr, &c) < 0)
		return -errno;
	*ctx = c;
	return 0;
}

static int k_submit(unsigned long ctx, long nr, struct iocb **iocbs)
{
	long r = syscall(SYS_io_submit, (aio_context_t)ctx, nr, iocbs);
	return r < 0 ? -errno : (int)r;
}

static int k_getevents(unsigned long ctx, long min, long nr, struct io_event *ev, struct timespec *ts)
{
	long r = syscall(SYS_io_getevents, (aio_context_t)ctx, min, nr, ev, ts);
	return r < 0 ? -errno : (int)r;
}

static int k_destroy(unsigned long ctx)
{
	return syscall(SYS_io_destroy, (aio_context_t)ctx) < 0 ? -errno : 0;
}

static const struct kaio_abi kernel_abi = { k_setup, k_submit, k_getevents, k_destroy };

static int kb_probe(const struct bench_job *job, char *why, size_t n)
{
	unsigned long ctx = 0;
	int e = k_setup(1, &ctx);
	(void)job;
	if (e) {
		snprintf(why, n, "io_setup: %s", strerror(-e));
		return -1;
	}
	k_destroy(ctx);
	return 0;
}

static int kd_probe(const struct bench_job *job, char *why, size_t n)
{
	return kb_probe(job, why, n) ? -1 : bench_probe_direct(job, why, n);
}

static int kb_setup(const struct bench_job *job, void **st)
{
	return bench_kaio_setup(&kernel_abi, job, false, st);
}

static int kd_setup(const struct bench_job *job, void **st)
{
	return bench_kaio_setup(&kernel_abi, job, true, st);
}

const struct bench_method bench_m_kaio_buffered = {
	.name = "kaio-buffered",
	.what = "kernel AIO (io_submit) on the buffered file: blocks inside io_submit",
	.probe = kb_probe,
	.setup = kb_setup,
	.submit = bench_kaio_submit,
	.reap = bench_kaio_reap,
	.teardown = bench_kaio_teardown,
};

const struct bench_method bench_m_kaio_direct = {
	.name = "kaio-direct",
	.what = "kernel AIO (io_submit) with O_DIRECT: the page cache bypassed",
	.direct = true,
	.probe = kd_probe,
	.setup = kd_setup,
	.submit = bench_kaio_submit,
	.reap = bench_kaio_reap,
	.teardown = bench_kaio_teardown,
};
