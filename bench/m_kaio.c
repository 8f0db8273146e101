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
	unsigned long ctx;              /* 0 until abi->setup gives one */
	struct iocb *iocbs;             /* by slot idx */
	struct iocb **ptrs;
	struct io_event *ev;
	struct bench_fds files;
};

int bench_kaio_setup(const struct kaio_abi *abi, const struct bench_job *job, void **out)
{
	struct st *s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->abi = abi;
	s->iocbs = calloc(job->depth, sizeof(*s->iocbs));
	s->ptrs = calloc(job->depth, sizeof(*s->ptrs));
	s->ev = calloc(job->depth, sizeof(*s->ev));
	int e = s->iocbs && s->ptrs && s->ev ? bench_fds_open(&s->files, job) : -ENOMEM;
	if (!e)
		e = abi->setup(job->depth, &s->ctx);
	return bench_setup_end(e, s, bench_kaio_teardown, out);
}

/* Slot sl's iocb, filled in for its request. */
static struct iocb *prep_iocb(struct st *s, struct bench_slot *sl)
{
	struct iocb *cb = &s->iocbs[sl->idx];
	memset(cb, 0, sizeof(*cb));
	cb->aio_data = (uint64_t)(uintptr_t)sl;
	cb->aio_lio_opcode = sl->op == BOP_READ ? IOCB_CMD_PREAD : IOCB_CMD_PWRITE;
	cb->aio_fildes = (uint32_t)s->files.fd[sl->file];
	cb->aio_buf = (uint64_t)(uintptr_t)sl->buf;
	cb->aio_nbytes = sl->len;
	cb->aio_offset = (int64_t)sl->off;
	return cb;
}

int bench_kaio_submit(void *state, struct bench_slot **v, unsigned n)
{
	struct st *s = state;
	for (unsigned i = 0; i < n; i++)
		s->ptrs[i] = prep_iocb(s, v[i]);
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
	if (s->ctx)
		s->abi->destroy(s->ctx);
	bench_fds_close(&s->files);
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

static int k_probe(const struct bench_job *job, char *why, size_t n)
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

static int kernel_setup(const struct bench_job *job, void **st)
{
	return bench_kaio_setup(&kernel_abi, job, st);
}

const struct bench_path bench_path_kaio = {
	.probe = k_probe, .setup = kernel_setup,
	.submit = bench_kaio_submit, .reap = bench_kaio_reap, .teardown = bench_kaio_teardown,
};
