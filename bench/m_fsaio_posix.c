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

static struct bench_pa_api api;        /* the drop-in's functions, once loaded */
static void *lib;

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
	*(void **)&api.lio_listio = dlvsym(h, "lio_listio", "GLIBC_2.34");
	*(void **)&api.error = dlvsym(h, "aio_error", "GLIBC_2.34");
	*(void **)&api.ret = dlvsym(h, "aio_return", "GLIBC_2.34");
	*(void **)&api.suspend = dlvsym(h, "aio_suspend", "GLIBC_2.34");
	if (!api.lio_listio || !api.error || !api.ret || !api.suspend) {
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

static int fp_setup(const struct bench_job *job, void **out)
{
	char why[256];

	if (load(job, why, sizeof(why)) != 0)
		return -ENOENT;
	return bench_pa_setup(job, &api, out);
}

const struct bench_method bench_m_fsaio_posix = {
	.name = "fsaio-posix",
	.what = "libfsaio through its POSIX AIO drop-in (lio_listio, aio_suspend), buffered file",
	.extra = true,
	.probe = fp_probe,
	.setup = fp_setup,
	.submit = bench_pa_submit,
	.reap = bench_pa_reap,
	.teardown = bench_pa_teardown,
};
