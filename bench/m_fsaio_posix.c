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
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static struct bench_pa_api api;        /* the drop-in's functions, once loaded */
static void *lib;

static const char *find(const struct bench_job *job, char *buf, size_t n)
{
	const char *env = getenv("FSAIO_POSIX_SHIM");

	if (env && *env)
		return env;
	if (job->shim_path) {
		const char *slash = strrchr(job->shim_path, '/');
		int dir = slash ? (int)(slash - job->shim_path) : 1;

		snprintf(buf, n, "%.*s/libfsaio-posixaio.so", dir, slash ? job->shim_path : ".");
		if (access(buf, R_OK) == 0)
			return buf;
	}
	if (bench_beside_exe("libfsaio-posixaio.so", buf, n))
		return buf;
	/* Installed: by its soname, which the runtime package holds. */
	if (access(FSAIO_BENCH_POSIX_INSTALLED, R_OK) == 0)
		return FSAIO_BENCH_POSIX_INSTALLED;
	return NULL;
}

/* Loaded once and never closed: its threads outlive a run's teardown. */
static int load(const struct bench_job *job, char *why, size_t n)
{
	char buf[PATH_MAX + 32];
	const char *path;

	if (lib)
		return 0;
	path = find(job, buf, sizeof(buf));
	if (!path) {
		snprintf(why, n, "libfsaio-posixaio.so not found (not built yet?)");
		return -1;
	}
	/* By version only: plain dlsym would find glibc's, a dependency. */
	const struct bench_dl_sym syms[] = {
		{ "lio_listio", "GLIBC_2.34", (void **)&api.lio_listio },
		{ "aio_error", "GLIBC_2.34", (void **)&api.error },
		{ "aio_return", "GLIBC_2.34", (void **)&api.ret },
		{ "aio_suspend", "GLIBC_2.34", (void **)&api.suspend },
	};
	lib = bench_dl_open(path, syms, 4, false, why, n);
	return lib ? 0 : -1;
}

static int fp_probe(const struct bench_job *job, char *why, size_t n)
{
	return load(job, why, n);
}

static int fp_setup(const struct bench_job *job, void **out)
{
	char why[256];

	if (load(job, why, sizeof(why)) != 0)
		return -ENOENT;
	return bench_pa_setup(job, &api, out);
}

const struct bench_path bench_path_fsaio_posix = {
	.probe = fp_probe, .setup = fp_setup,
	.submit = bench_pa_submit, .reap = bench_pa_reap, .teardown = bench_pa_teardown,
};
