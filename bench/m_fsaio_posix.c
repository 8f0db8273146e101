/* SPDX-License-Identifier: MIT */
/*
 * Method "fsaio-posix": libfsaio through its POSIX AIO drop-in
 * (libfsaio-posixaio.so), driven exactly as "posix-aio" drives glibc:
 * lio_listio(LIO_NOWAIT) per batch, aio_error/aio_return and aio_suspend
 * to reap. The library is loaded at run time with RTLD_LOCAL |
 * RTLD_DEEPBIND and its functions taken by version, so this program's own
 * aio_* stay glibc's. Found at $FSAIO_POSIX_SHIM, beside the libaio
 * drop-in, or beside this program's lib/; absent means unavailable.
 */
#include "bench.h"

#include <aio.h>
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int (*f_lio)(int, struct aiocb *const[], int, struct sigevent *);
static int (*f_error)(const struct aiocb *);
static ssize_t (*f_return)(struct aiocb *);
static int (*f_suspend)(const struct aiocb *const[], int, const struct timespec *);
static void *lib;

struct st {
	unsigned nfiles, depth, ninflight;
	struct aiocb *cbs;              /* by slot idx */
	struct bench_slot **slot;       /* by slot idx */
	bool *busy;                     /* by slot idx: submitted, not reaped */
	struct aiocb **list;            /* a submit batch */
	const struct aiocb **inflight;  /* compact, for aio_suspend */
	int fds[];
};

static const char *find(const struct bench_job *job, char *buf, size_t n)
{
	const char *env = getenv("FSAIO_POSIX_SHIM");
	char exe[PATH_MAX];
	ssize_t len;

	if (env && *env)
		return env;
	if (job->shim_path) {
		const char *slash = strrchr(job->shim_path, '/');
		int dir = slash ? (int)(slash - job->shim_path) : 1;

		snprintf(buf, n, "%.*s/libfsaio-posixaio.so", dir, slash ? job->shim_path : ".");
		if (access(buf, R_OK) == 0)
			return buf;
	}
	len = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (len > 0) {
		exe[len] = 0;
		char *slash = strrchr(exe, '/');
		if (slash) {
			*slash = 0;
			snprintf(buf, n, "%s/../lib/libfsaio-posixaio.so", exe);
			if (access(buf, R_OK) == 0)
				return buf;
		}
	}
	return NULL;
}

/* Loaded once and never closed: its threads outlive a run's teardown. */
static int load(const struct bench_job *job, char *why, size_t n)
{
	char buf[PATH_MAX + 32];
	const char *path;
	void *h;

	if (lib)
		return 0;
	path = find(job, buf, sizeof(buf));
	if (!path) {
		snprintf(why, n, "libfsaio-posixaio.so not found (not built yet?)");
		return -1;
	}
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
	h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
#else
	h = dlopen(path, RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND);
#endif
	if (!h) {
		snprintf(why, n, "%s", dlerror());
		return -1;
	}
	*(void **)&f_lio = dlvsym(h, "lio_listio", "GLIBC_2.34");
	*(void **)&f_error = dlvsym(h, "aio_error", "GLIBC_2.34");
	*(void **)&f_return = dlvsym(h, "aio_return", "GLIBC_2.34");
	*(void **)&f_suspend = dlvsym(h, "aio_suspend", "GLIBC_2.34");
	if (!f_lio || !f_error || !f_return || !f_suspend) {
		snprintf(why, n, "%s lacks lio_listio/aio_error/aio_return/aio_suspend", path);
		dlclose(h);
		return -1;
	}
	lib = h;
	return 0;
}

static int fp_probe(const struct bench_job *job, char *why, size_t n)
{
	return load(job, why, n);
}

static void st_free(struct st *s)
{
	free(s->cbs); free(s->slot); free(s->busy); free(s->list); free(s->inflight);
	free(s);
}

static int fp_setup(const struct bench_job *job, void **out)
{
	char why[256];
	struct st *s;
	int e;

	if (load(job, why, sizeof(why)))
		return -ENOENT;
	s = calloc(1, sizeof(*s) + job->nfiles * sizeof(int));
	if (!s)
		return -ENOMEM;
	s->nfiles = job->nfiles;
	s->depth = job->depth;
	s->cbs = calloc(job->depth, sizeof(*s->cbs));
	s->slot = calloc(job->depth, sizeof(*s->slot));
	s->busy = calloc(job->depth, sizeof(*s->busy));
	s->list = calloc(job->depth, sizeof(*s->list));
	s->inflight = calloc(job->depth, sizeof(*s->inflight));
	e = s->cbs && s->slot && s->busy && s->list && s->inflight ? 0 : -ENOMEM;
	if (!e)
		e = bench_open_files(job, false, s->fds);
	if (e) {
		st_free(s);
		return e;
	}
	*out = s;
	return 0;
}

static int fp_submit(void *state, struct bench_slot **v, unsigned n)
{
	struct st *s = state;

	for (unsigned i = 0; i < n; i++) {
		struct bench_slot *sl = v[i];
		struct aiocb *cb = &s->cbs[sl->idx];

		memset(cb, 0, sizeof(*cb));
		cb->aio_fildes = s->fds[sl->file];
		cb->aio_buf = sl->buf;
		cb->aio_nbytes = sl->len;
		cb->aio_offset = (off_t)sl->off;
		cb->aio_lio_opcode = sl->op == BOP_READ ? LIO_READ : LIO_WRITE;
		cb->aio_sigevent.sigev_notify = SIGEV_NONE;
		s->slot[sl->idx] = sl;
		s->busy[sl->idx] = true;
		s->list[i] = cb;
	}
	if (f_lio(LIO_NOWAIT, s->list, (int)n, NULL) != 0)
		return -errno;
	for (unsigned i = 0; i < n; i++)
		s->inflight[s->ninflight++] = s->list[i];
	return (int)n;
}

static int fp_reap(void *state, unsigned min, unsigned max, struct bench_slot **done)
{
	struct st *s = state;
	unsigned got = 0;

	for (;;) {
		for (unsigned i = 0; i < s->ninflight && got < max;) {
			struct aiocb *cb = (struct aiocb *)s->inflight[i];
			int e = f_error(cb);

			if (e == EINPROGRESS) {
				i++;
				continue;
			}
			unsigned idx = (unsigned)(cb - s->cbs);
			ssize_t r = f_return(cb);
			struct bench_slot *sl = s->slot[idx];

			sl->res = e ? -(int64_t)e : r;
			s->busy[idx] = false;
			done[got++] = sl;
			s->inflight[i] = s->inflight[--s->ninflight];
		}
		if (got >= min || !s->ninflight)
			return (int)got;
		if (f_suspend(s->inflight, (int)s->ninflight, NULL) != 0 && errno != EINTR && errno != EAGAIN)
			return -errno;
	}
}

static void fp_teardown(void *state)
{
	struct st *s = state;

	for (unsigned i = 0; i < s->depth; i++) {
		const struct aiocb *one[1] = { &s->cbs[i] };

		if (!s->busy[i])
			continue;
		while (f_error(&s->cbs[i]) == EINPROGRESS)
			f_suspend(one, 1, NULL);
		f_return(&s->cbs[i]);
	}
	bench_close_files(&(struct bench_job){ .nfiles = s->nfiles }, s->fds);
	st_free(s);
}

const struct bench_method bench_m_fsaio_posix = {
	.name = "fsaio-posix",
	.what = "libfsaio through its POSIX AIO drop-in (lio_listio, aio_suspend), buffered file",
	.extra = true,
	.probe = fp_probe,
	.setup = fp_setup,
	.submit = fp_submit,
	.reap = fp_reap,
	.teardown = fp_teardown,
};
