/* SPDX-License-Identifier: MIT */
/*
 * Method "fsaio-shim": libfsaio through its libaio drop-in
 * (libfsaio-libaio.so), driven exactly like kernel AIO on the buffered file.
 * The library is loaded at run time with RTLD_LOCAL | RTLD_DEEPBIND so its
 * io_* names neither leak into this program nor bind to anyone else's; the
 * benchmark itself never links libaio. If the library is absent the method
 * is reported unavailable, which is not an error.
 */
#include "kaio.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

typedef int (*setup_fn)(int, void **);
typedef int (*submit_fn)(void *, long, struct iocb **);
typedef int (*getevents_fn)(void *, long, long, struct io_event *, struct timespec *);
typedef int (*destroy_fn)(void *);

static void *lib;
static setup_fn f_setup;
static submit_fn f_submit;
static getevents_fn f_getevents;
static destroy_fn f_destroy;

/* libaio returns -errno itself; the context is an opaque pointer. */
static int s_setup(unsigned nr, unsigned long *ctx)
{
	void *c = NULL;
	int r = f_setup((int)nr, &c);
	*ctx = (unsigned long)c;
	return r;
}

static int s_submit(unsigned long ctx, long nr, struct iocb **iocbs)
{
	return f_submit((void *)ctx, nr, iocbs);
}

static int s_getevents(unsigned long ctx, long min, long nr, struct io_event *ev, struct timespec *ts)
{
	return f_getevents((void *)ctx, min, nr, ev, ts);
}

static int s_destroy(unsigned long ctx)
{
	return f_destroy((void *)ctx);
}

static const struct kaio_abi shim_abi = { s_setup, s_submit, s_getevents, s_destroy };

/* Loaded once and never closed: its worker threads may outlive a run's
 * teardown by a moment, and unloading code under them is not worth it. */
static int load(const char *path, char *why, size_t n)
{
	if (lib)
		return 0;
	if (!path) {
		snprintf(why, n, "libfsaio-libaio.so not found (not built yet?)");
		return -1;
	}
	/* The versions a program linked against libaio binds (io_getevents
	 * has an older LIBAIO_0.1 twin); an unversioned library gets any. */
	const struct bench_dl_sym syms[] = {
		{ "io_setup", "LIBAIO_0.4", (void **)&f_setup },
		{ "io_submit", "LIBAIO_0.1", (void **)&f_submit },
		{ "io_getevents", "LIBAIO_0.4", (void **)&f_getevents },
		{ "io_destroy", "LIBAIO_0.4", (void **)&f_destroy },
	};
	lib = bench_dl_open(path, syms, 4, true, why, n);
	return lib ? 0 : -1;
}

static int sh_probe(const struct bench_job *job, char *why, size_t n)
{
	return load(job->shim_path, why, n);
}

static int sh_setup(const struct bench_job *job, void **st)
{
	char why[256];
	if (load(job->shim_path, why, sizeof(why)))
		return -ENOENT;
	return bench_kaio_setup(&shim_abi, job, st);
}

const struct bench_path bench_path_fsaio_shim = {
	.probe = sh_probe, .setup = sh_setup,
	.submit = bench_kaio_submit, .reap = bench_kaio_reap, .teardown = bench_kaio_teardown,
};
